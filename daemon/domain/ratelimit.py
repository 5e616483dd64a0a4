"""Rate limits: token buckets, OpenAI's rate-limit headers, and one model's pacing state.

Pure: every method takes `now` (unix seconds) and nothing sleeps, so tests step
time by hand. The router's gate (`upstream/gate.py`) does the waiting; the
simulator's limits (`simulator/limits.py`) use the same bucket.

A model's pace has three parts:
- **buckets** for requests and tokens per minute, refilled continuously, from the
  model's `rpm`/`tpm` or, when those are unset, from the limits the upstream
  announces (`x-ratelimit-limit-*`), whichever is lower;
- a **pause**: a 429 stops the model's dispatch for the time the upstream asked
  (`Retry-After`, `retry-after-ms`, else the exhausted limit's `x-ratelimit-reset-*`,
  else a backoff doubling with each 429 in a row). A bare 429, one that names no
  limit (no `x-ratelimit-*`: an overloaded server such as a loaded vLLM, not a
  rate), pauses nothing when the model's concurrency adapts: the lower limit is the
  answer, and the row that met it waits its own `Retry-After` (`sheds_overload`);
- a **token estimate** (`TokenEstimate`) that each answer's `usage` corrects.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from daemon.domain.cluster import Part
from daemon.domain.retry import parse_retry_after

BURST_S = 0.5  # Relay's own burst: half a second of the rate, below an upstream's second
RATE_LIMITED_TRIES = 10  # 429s a row may meet on one model before they count as attempts
_LEARNING = 0.2  # weight of the newest answer in the token estimate's running means
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


@dataclass
class TokenBucket:
    """`capacity` units that refill at `rate` per second. The level may go below zero:
    a reservation queues behind the ones before it (`reserve` says how long)."""

    rate: float
    capacity: float
    level: float
    at: float

    @classmethod
    def per_minute(cls, limit: float, *, burst_s: float, now: float) -> TokenBucket:
        """A full bucket for `limit` a minute holding `burst_s` seconds of it (at least 1)."""
        capacity = max(1.0, limit / 60 * burst_s)
        return cls(rate=limit / 60, capacity=capacity, level=capacity, at=now)

    def refill(self, now: float) -> float:
        if now > self.at:
            self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
            self.at = now
        return self.level

    def wait(self, amount: float, now: float) -> float:
        """Seconds until `amount` is there to take."""
        return max(0.0, (amount - self.refill(now)) / self.rate)

    def take(self, amount: float, now: float) -> None:
        self.refill(now)
        self.level -= amount

    def reserve(self, amount: float, now: float) -> float:
        """Take `amount` now and say how long to wait before using it."""
        self.take(amount, now)
        return max(0.0, -self.level / self.rate)

    def give(self, amount: float, now: float) -> None:
        """Put back what was taken and not used (a negative amount takes more)."""
        self.refill(now)
        self.level = min(self.capacity, self.level + amount)

    def until_full(self, now: float) -> float:
        return max(0.0, (self.capacity - self.refill(now)) / self.rate)


def parse_duration(text: str | None) -> float | None:
    """OpenAI's reset durations in seconds: `6m0s`, `1s`, `20ms`, `1h2m3.5s`, or bare
    seconds (`0.5`). Anything else is None."""
    if text is None or not (text := text.strip()):
        return None
    try:
        seconds = float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            return None
        scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
        seconds = sum(float(n) * scale[u] for n, u in parts)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


@dataclass(frozen=True)
class RateHeaders:
    """What an answer's headers say about the upstream's limits (None: not said)."""

    limit_requests: int | None = None
    limit_tokens: int | None = None
    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    reset_requests_s: float | None = None
    reset_tokens_s: float | None = None
    retry_after_s: float | None = None

    def exhausted_reset(self) -> float | None:
        """How long until the limit that is at zero resets; None if none is at zero."""
        waits = [reset for left, reset in ((self.remaining_requests, self.reset_requests_s),
                                           (self.remaining_tokens, self.reset_tokens_s))
                 if left == 0 and reset is not None]
        return max(waits) if waits else None

    def names_a_limit(self) -> bool:
        """Whether the answer spoke of a rate (any `x-ratelimit-*`), not only of waiting."""
        return any(value is not None for value in (
            self.limit_requests, self.limit_tokens, self.remaining_requests,
            self.remaining_tokens, self.reset_requests_s, self.reset_tokens_s))


def read_rate_headers(get: Callable[[str], str | None], *, now: float) -> RateHeaders:
    """Read `x-ratelimit-*`, `retry-after-ms` and `Retry-After` through `get(name)`,
    which is given lowercase names."""
    millis = _number(get("retry-after-ms"))
    retry_after = millis / 1000 if millis is not None else parse_retry_after(
        get("retry-after"), now=now)
    return RateHeaders(
        limit_requests=_whole(get("x-ratelimit-limit-requests")),
        limit_tokens=_whole(get("x-ratelimit-limit-tokens")),
        remaining_requests=_whole(get("x-ratelimit-remaining-requests")),
        remaining_tokens=_whole(get("x-ratelimit-remaining-tokens")),
        reset_requests_s=parse_duration(get("x-ratelimit-reset-requests")),
        reset_tokens_s=parse_duration(get("x-ratelimit-reset-tokens")),
        retry_after_s=retry_after,
    )


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def _whole(text: str | None) -> int | None:
    value = _number(text)
    return int(value) if value is not None else None


@dataclass
class TokenEstimate:
    """A call's tokens before it is sent: the request's size ÷ 4, scaled by what the
    upstream counted so far, plus `max_tokens` (else the mean completion seen)."""

    prompt_ratio: float = 1.0  # upstream prompt tokens per (request bytes ÷ 4)
    completion: float = 0.0  # mean completion tokens of calls that set no max_tokens

    def estimate(self, size: int, max_tokens: int | None) -> int:
        answer = self.completion if max_tokens is None else max_tokens
        return max(1, math.ceil(size / 4 * self.prompt_ratio + answer))

    def learn(self, size: int, max_tokens: int | None, *, prompt: int, completion: int) -> None:
        if prompt > 0 and size > 0:
            self.prompt_ratio = _mean(self.prompt_ratio, prompt / (size / 4))
        if max_tokens is None:
            self.completion = _mean(self.completion, completion)


def _mean(old: float, new: float) -> float:
    return old + _LEARNING * (new - old)


@dataclass
class ModelPace:
    """One model's limits, buckets, pause and token estimate, shared by every job."""

    rpm: int | None = None  # configured
    tpm: int | None = None
    upstream_rpm: int | None = None  # announced by x-ratelimit-limit-*
    upstream_tpm: int | None = None
    paused_until: float = 0.0
    rate_limited: int = 0  # 429s met, ever
    streak: int = 0  # 429s in a row, for a pause the upstream gave no time for
    sheds_overload: bool = False  # a bare 429 lowers concurrency instead of pausing
    requests: TokenBucket | None = None
    tokens: TokenBucket | None = None
    estimator: TokenEstimate = field(default_factory=TokenEstimate)
    part: Part = field(default_factory=Part)  # this node's part of cluster-wide limits

    def __post_init__(self) -> None:
        self._rebuild(0.0)

    @property
    def effective_rpm(self) -> int | None:
        """This node's pace: its share of the configured rate and of the one the
        upstream announces (an account's limit, shared by every node)."""
        return _lower(self.part.of_rate(self.rpm), self.part.of_rate(self.upstream_rpm))

    @property
    def effective_tpm(self) -> int | None:
        return _lower(self.part.of_rate(self.tpm), self.part.of_rate(self.upstream_tpm))

    def share(self, part: Part, now: float) -> None:
        """The live nodes changed: pace by this node's new part."""
        self.part = part
        self._rebuild(now)

    def paused_for(self, now: float) -> float:
        return max(0.0, self.paused_until - now)

    def reserve(self, tokens: int, now: float) -> float:
        """Take one request and `tokens` from the buckets; seconds to wait before sending
        (a pause in force included)."""
        wait = self.paused_for(now)
        if self.requests is not None:
            wait = max(wait, self.requests.reserve(1, now))
        if self.tokens is not None:
            wait = max(wait, self.tokens.reserve(tokens, now))
        return wait

    def release(self, tokens: int, now: float) -> None:
        """Give back a reservation that was not sent (a pause began while it waited)."""
        if self.requests is not None:
            self.requests.give(1, now)
        if self.tokens is not None:
            self.tokens.give(tokens, now)

    def settle(self, estimated: int, used: int, now: float) -> None:
        """Correct the token bucket by what the call really used."""
        if self.tokens is not None and used > 0:
            self.tokens.give(estimated - used, now)

    def pauses_for(self, status: int, rate: RateHeaders) -> bool:
        """Whether this answer pauses the whole model: a 429, unless it is a bare one
        and the model sheds overload by its concurrency instead."""
        return status == 429 and (not self.sheds_overload or rate.names_a_limit())

    def observe(self, status: int, rate: RateHeaders, *, now: float, backoff_s: float,
                backoff_cap_s: float, pause_cap_s: float, in_flight: int = 1) -> bool:
        """Learn from one answer (`in_flight` counts the calls out now, this one
        included): the announced limits, and on a 429 a pause. True when the answer
        was a 429 that paused the whole model (`pauses_for`)."""
        announced = (rate.limit_requests or self.upstream_rpm,
                     rate.limit_tokens or self.upstream_tpm)
        learned = announced != (self.upstream_rpm, self.upstream_tpm)
        if learned:  # start from what the upstream has left, less the calls still out
            self.upstream_rpm, self.upstream_tpm = announced
            self._rebuild(now)
            self._sync(rate, now, out=max(0, in_flight - 1))
        elif status == 429:  # fall back to what the upstream has left
            self._sync(rate, now)
        pause = None
        if status == 429:
            self.rate_limited += 1
        paused_model = self.pauses_for(status, rate)
        if paused_model:
            self.streak += 1
            backoff = min(backoff_cap_s, backoff_s * 2 ** min(self.streak - 1, 30))
            pause = _first(rate.retry_after_s, rate.exhausted_reset(), backoff) or backoff
        elif status != 429:
            self.streak = 0
            if self.requests is None and self.tokens is None:  # no rate known to pace by
                pause = rate.exhausted_reset()
        if pause is not None:
            self.paused_until = max(self.paused_until, now + min(pause, pause_cap_s))
        return paused_model

    def snapshot(self, now: float) -> dict[str, Any]:
        """What `GET /v1/models` shows."""
        paused = self.paused_for(now)
        return {"rpm": self.effective_rpm, "tpm": self.effective_tpm,
                "upstream_rpm": self.upstream_rpm, "upstream_tpm": self.upstream_tpm,
                "paused": paused > 0, "paused_until": self.paused_until if paused else None,
                "rate_limited": self.rate_limited}

    def _sync(self, rate: RateHeaders, now: float, *, out: int = 0) -> None:
        """Lower the buckets to the upstream's remaining counts. Only when learning or on
        a 429: on every answer it would count the calls in flight twice. When learning,
        the `out` calls sent before any limit was known come off the requests left
        (those the upstream counted already are off its count; those it will refuse
        cost nothing, so the level stops at zero): else a burst sent blind is
        followed by a second one that is sure to fail."""
        requests_left = rate.remaining_requests
        if requests_left is not None:
            requests_left = max(0, requests_left - out)
        for bucket, left in ((self.requests, requests_left),
                             (self.tokens, rate.remaining_tokens)):
            if bucket is not None and left is not None:
                bucket.level = min(bucket.refill(now), left)

    def _rebuild(self, now: float) -> None:
        self.requests = _bucket(self.requests, self.effective_rpm, now)
        self.tokens = _bucket(self.tokens, self.effective_tpm, now)


def _bucket(old: TokenBucket | None, limit: int | None, now: float) -> TokenBucket | None:
    """A bucket for `limit` a minute; one that only changes rate keeps its level."""
    if limit is None:
        return None
    new = TokenBucket.per_minute(limit, burst_s=BURST_S, now=now)
    if old is not None:
        new.level, new.at = min(old.refill(now), new.capacity), max(old.at, now)
    return new


def _lower(a: int | None, b: int | None) -> int | None:
    known = [x for x in (a, b) if x]
    return min(known) if known else None


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def max_tokens_of(body: Mapping[str, Any]) -> int | None:
    """The answer's token budget a request asks for, if any (chat's, or a Responses
    request's `max_output_tokens`)."""
    for key in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def format_duration(seconds: float) -> str:
    """Seconds the way OpenAI's reset headers write them: `20ms`, `1.5s`, `6m0s`."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    if seconds < 60:
        return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest}s"
