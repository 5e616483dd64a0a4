"""The answer of a submit with `?dry_run=true` (`api/estimate.py`), in every dialect:
the batch's estimate, its budget and the problems the real submit would refuse."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from msgspec import Meta


class InputEstimate(TypedDict):
    estimate: int
    source: Annotated[Literal["rate_limiter"], Meta(description=(
        "The rate limiter's estimate of a request's tokens, from its size."))]


class OutputEstimate(TypedDict):
    estimate: int
    sources: Annotated[dict[str, int], Meta(description=(
        "Rows by where their figure came from: max_tokens (the row's own), history "
        "(the median of the workspace's recent rows on the model) or default."))]


class ModelEstimate(TypedDict):
    """One model's part of a dry run's estimate (`domain/estimate.py`)."""

    model: str
    rows: int
    input_tokens: InputEstimate
    output_tokens: OutputEstimate
    cost_nano_usd: int
    cost_usd: str
    drain_s: float
    drain_limit: Literal["rpm", "tpm", "concurrency"]
    latency_source: Literal["observed", "default"]


class BudgetCover(TypedDict):
    """What the workspace's budget has left this period, and whether it covers the
    estimated cost."""

    remaining_nano_usd: int
    remaining_usd: float
    covers: bool
    period: Literal["month", "day", "none"]
    resets_at: str | None


class BatchEstimate(TypedDict):
    """The answer of a submit with `?dry_run=true`: nothing was created."""

    object: Literal["batch.estimate"]
    dry_run: Literal[True]
    rows: int
    input_tokens: int
    output_tokens: int
    cost_nano_usd: int
    cost_usd: str
    discount: str
    drain_s: float
    by_model: list[ModelEstimate]
    budget: Annotated[BudgetCover, Meta(description=(
        "Null when the workspace has no budget."))] | None
    problems: Annotated[list[dict[str, Any]], Meta(description=(
        "What the real submit would refuse, each in the dialect's error envelope."))]
