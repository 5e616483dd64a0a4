"""A batch's estimate before it runs (`?dry_run=true`, `relay submit --dry-run`): its
rows by model, their tokens, cost at the batch rate and drain time at each model's
limits. Pure: the caller gives the rows, the models' settings and the workspace's
history; nothing here reads a store or a clock.

Input tokens are the rate limiter's estimate (`ratelimit.TokenEstimate`: a request's
size ÷ 4), so a batch is estimated as the gate will count it. Output tokens come from a
row's `max_tokens` where it sets one, else the median completion tokens of the
workspace's recent rows on that model, else `DEFAULT_OUTPUT_TOKENS`; each model's
figure says which (`source`: the sources its rows used)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from daemon.domain import codec
from daemon.domain.outcome import Usage
from daemon.domain.pricing import cost_nano_usd
from daemon.domain.ratelimit import TokenEstimate, max_tokens_of

DEFAULT_OUTPUT_TOKENS = 256  # a row's answer when it sets no max_tokens and nothing is known
DEFAULT_LATENCY_S = 2.0  # a call's time on the wire when the model has no observed latency
OutputSource = Literal["max_tokens", "history", "default"]


def input_tokens(body: Mapping[str, Any], *, prompt_ratio: float = 1.0) -> int:
    """One row's input tokens, as the rate limiter estimates them (its body's JSON size
    ÷ 4, scaled by what the upstream counted so far)."""
    size = len(codec.dumps(body))
    return max(1, math.ceil(TokenEstimate(prompt_ratio=prompt_ratio).estimate(size, 0)))


def batch_input_tokens(bodies: Iterable[Mapping[str, Any]]) -> int:
    """A batch's input tokens (the lower bound of its cost a budget compares)."""
    return sum(input_tokens(body) for body in bodies)


def output_tokens(body: Mapping[str, Any], *, median: int | None,
                  default: int = DEFAULT_OUTPUT_TOKENS) -> tuple[int, OutputSource]:
    """One row's output tokens and where the figure came from."""
    asked = max_tokens_of(body)
    if asked is not None:
        return asked, "max_tokens"
    if median is not None:
        return median, "history"
    return default, "default"


def median(values: Sequence[int]) -> int | None:
    """The median (the lower middle of an even count), or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


@dataclass(frozen=True)
class ModelLimits:
    """What paces a model: its configured rpm/tpm (or the lower learned one), its
    concurrency and the latency of its calls, and its prices."""

    rpm: int | None = None
    tpm: int | None = None
    concurrency: int = 1
    latency_s: float | None = None  # observed (p50 of recent successes); None: not known
    input_usd_per_mtok: float = 0.0
    output_usd_per_mtok: float = 0.0


@dataclass(frozen=True)
class History:
    """What the workspace's recent rows on a model say."""

    median_completion_tokens: int | None = None
    latency_s: float | None = None


def drain_seconds(rows: int, tokens: int, limits: ModelLimits) -> tuple[float, str]:
    """How long `rows` calls of `tokens` in all take at the model's limits, and which
    limit binds: the slowest of rpm, tpm and concurrency × latency."""
    latency = limits.latency_s if limits.latency_s is not None else DEFAULT_LATENCY_S
    bounds = [(rows / max(1, limits.concurrency) * latency, "concurrency")]
    if limits.rpm:
        bounds.append((rows / limits.rpm * 60.0, "rpm"))
    if limits.tpm:
        bounds.append((tokens / limits.tpm * 60.0, "tpm"))
    seconds, binding = max(bounds)
    return round(seconds, 3), binding


@dataclass
class ModelEstimate:
    model: str
    rows: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    output_sources: dict[str, int] = field(default_factory=dict)  # source → rows
    cost_nano_usd: int = 0
    drain_s: float = 0.0
    drain_limit: str = "concurrency"
    latency_source: Literal["observed", "default"] = "default"
    known: bool = True  # a configured model (an unknown one is a validation problem)

    def view(self) -> dict[str, Any]:
        return {"model": self.model, "rows": self.rows,
                "input_tokens": {"estimate": self.input_tokens, "source": "rate_limiter"},
                "output_tokens": {"estimate": self.output_tokens,
                                  "sources": dict(self.output_sources)},
                "cost_nano_usd": self.cost_nano_usd,
                "cost_usd": usd(self.cost_nano_usd),
                "drain_s": self.drain_s, "drain_limit": self.drain_limit,
                "latency_source": self.latency_source}


@dataclass
class Estimate:
    models: list[ModelEstimate]
    discount: Decimal

    @property
    def rows(self) -> int:
        return sum(m.rows for m in self.models)

    @property
    def input_tokens(self) -> int:
        return sum(m.input_tokens for m in self.models)

    @property
    def output_tokens(self) -> int:
        return sum(m.output_tokens for m in self.models)

    @property
    def cost_nano_usd(self) -> int:
        return sum(m.cost_nano_usd for m in self.models)

    @property
    def drain_s(self) -> float:
        """Models drain side by side (each has its own gate): the slowest one."""
        return max((m.drain_s for m in self.models), default=0.0)

    def view(self) -> dict[str, Any]:
        return {"rows": self.rows, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cost_nano_usd": self.cost_nano_usd,
                "cost_usd": usd(self.cost_nano_usd), "discount": str(self.discount),
                "drain_s": self.drain_s, "by_model": [m.view() for m in self.models]}


def usd(nano: int) -> str:
    return str((Decimal(nano) / Decimal(1_000_000_000)).quantize(Decimal("0.000001")))


def estimate(rows: Iterable[tuple[str, Mapping[str, Any]]], *,
             limits: Mapping[str, ModelLimits], history: Mapping[str, History],
             discount: Decimal, default_output: int = DEFAULT_OUTPUT_TOKENS) -> Estimate:
    """The estimate of `(model, body)` rows: per model, in the order first met."""
    found: dict[str, ModelEstimate] = {}
    for model, body in rows:
        entry = found.get(model) or found.setdefault(
            model, ModelEstimate(model=model, known=model in limits))
        past = history.get(model, History())
        out, source = output_tokens(body, median=past.median_completion_tokens,
                                    default=default_output)
        entry.rows += 1
        entry.input_tokens += input_tokens(body)
        entry.output_tokens += out
        entry.output_sources[source] = entry.output_sources.get(source, 0) + 1
    for model, entry in found.items():
        known = limits.get(model, ModelLimits())
        past = history.get(model, History())
        latency = known.latency_s if known.latency_s is not None else past.latency_s
        entry.latency_source = "observed" if latency is not None else "default"
        paced = ModelLimits(rpm=known.rpm, tpm=known.tpm, concurrency=known.concurrency,
                            latency_s=latency)
        entry.drain_s, entry.drain_limit = drain_seconds(
            entry.rows, entry.input_tokens + entry.output_tokens, paced)
        entry.cost_nano_usd = cost_nano_usd(
            Usage(prompt_tokens=entry.input_tokens, completion_tokens=entry.output_tokens),
            input_usd_per_mtok=known.input_usd_per_mtok,
            output_usd_per_mtok=known.output_usd_per_mtok, discount=discount)
    return Estimate(models=list(found.values()), discount=discount)
