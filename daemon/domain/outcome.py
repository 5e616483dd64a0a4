"""What happened to one row: the attempts the router made and how the row ended.

The router produces a `RowOutcome`; the supervisor stores it; renderers read it.
Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Attempt:
    """One upstream call made for a row."""

    model: str  # the alias tried
    status_code: int | None  # HTTP status, None when no answer came back
    error: str | None  # None for a success
    duration_ms: int
    started_at: float  # unix seconds
    transient: bool = False  # worth retrying: timeout, connection error, 408/409/429/5xx


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class RowOutcome:
    """How a row ended after retries and fallbacks."""

    ok: bool
    response: dict[str, Any] | None = None  # the upstream's JSON body on success
    response_text: str | None = None  # the same body as received, stored without re-encoding
    status_code: int | None = None  # the final upstream status, None if none answered
    model: str | None = None  # the alias that answered (or was last tried)
    error: str | None = None  # the row's error message when not ok
    error_code: str | None = None  # machine-readable: upstream_error, invalid_response, …
    error_body: dict[str, Any] | None = None  # the last upstream error body, when JSON
    dead_letter: bool = False  # failed, transiently, after every retry and fallback
    attempts: tuple[Attempt, ...] = field(default_factory=tuple)
    usage: Usage = field(default_factory=Usage)
    cost_nano_usd: int = 0  # the row's price, set by the supervisor from the model's pricing
