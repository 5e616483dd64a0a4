"""The simulator's limits: `--rpm`/`--tpm` and `--capacity`, as a provider or a loaded
vLLM imposes them. Pure: `now` is passed in.

Per model, requests and tokens each have a bucket that refills continuously (the
limit ÷ 60 per second) and holds one second of it. A request is charged its prompt
tokens (one per word, as the simulator counts usage) plus its `max_tokens` when it
arrives, and the charge is corrected to the answer's real usage once answered. A
request the buckets cannot hold is answered 429 at once, with `Retry-After` and
`retry-after-ms` (when it would fit) and the rate-limit headers of the route's API
(`quotas` here, written as OpenAI's `x-ratelimit-*` or Anthropic's
`anthropic-ratelimit-*` by apis.py); every other answer carries the same headers.
A full bucket takes any request, so one larger than a second's tokens still passes,
alone. Past `--capacity` requests at
once, the answer is 429 with `--retry-after`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from daemon.domain.ratelimit import TokenBucket

BURST_S = 1.0


@dataclass(frozen=True)
class Admission:
    """Whether a request may be served; if not, why and when to come back."""

    ok: bool
    reason: str = ""  # "requests", "tokens" or "capacity"
    retry_after_s: float = 0.0


@dataclass(frozen=True)
class Quota:
    """One limit of one model as of an instant: what rate-limit headers report."""

    name: str  # "requests" or "tokens"
    limit: int  # a minute
    remaining: int
    reset_s: float  # until the bucket is full again


@dataclass
class ModelBuckets:
    requests: TokenBucket | None
    tokens: TokenBucket | None


class SimLimits:
    """Every model's buckets and the requests in flight."""

    def __init__(self, *, rpm: int | None, tpm: int | None, capacity: int | None,
                 capacity_retry_s: float) -> None:
        self.rpm, self.tpm, self.capacity = rpm, tpm, capacity
        self.capacity_retry_s = capacity_retry_s
        self.in_flight = 0
        self.models: dict[str, ModelBuckets] = {}

    @property
    def active(self) -> bool:
        return bool(self.rpm or self.tpm or self.capacity)

    def admit(self, model: str, tokens: int, now: float) -> Admission:
        """Charge a request that fits (one request, `tokens` tokens); refuse one that
        does not, charging nothing."""
        if self.capacity is not None and self.in_flight >= self.capacity:
            return Admission(False, "capacity", self.capacity_retry_s)
        buckets = self._buckets(model, now)
        waits = {"requests": _wait(buckets.requests, 1, now),
                 "tokens": _wait(buckets.tokens, tokens, now)}
        reason, wait = max(waits.items(), key=lambda item: item[1])
        if wait > 0:
            return Admission(False, reason, wait)
        for bucket, amount in ((buckets.requests, 1), (buckets.tokens, tokens)):
            if bucket is not None:
                bucket.take(amount, now)
        return Admission(True)

    def settle(self, model: str, charged: int, used: int, now: float) -> None:
        """Correct a served request's charge to the tokens it really used."""
        tokens = self._buckets(model, now).tokens
        if tokens is not None:
            tokens.give(charged - used, now)

    def quotas(self, model: str, now: float) -> list[Quota]:
        """`model`'s limits as of `now`, requests first."""
        buckets = self._buckets(model, now)
        return [Quota(name, limit, max(0, math.floor(bucket.refill(now))), bucket.until_full(now))
                for name, limit, bucket in (("requests", self.rpm, buckets.requests),
                                            ("tokens", self.tpm, buckets.tokens))
                if limit is not None and bucket is not None]

    def _buckets(self, model: str, now: float) -> ModelBuckets:
        if model not in self.models:
            self.models[model] = ModelBuckets(_bucket(self.rpm, now), _bucket(self.tpm, now))
        return self.models[model]


def _bucket(limit: int | None, now: float) -> TokenBucket | None:
    if limit is None:
        return None
    return TokenBucket(rate=limit / 60, capacity=limit / 60 * BURST_S,
                       level=limit / 60 * BURST_S, at=now)


def _wait(bucket: TokenBucket | None, amount: float, now: float) -> float:
    """Seconds until `bucket` takes `amount`: 0 when it holds enough or is full."""
    if bucket is None or bucket.refill(now) >= min(amount, bucket.capacity):
        return 0.0
    return bucket.wait(min(amount, bucket.capacity), now)
