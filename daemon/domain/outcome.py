"""What happened to one row: the attempts the router made and how the row ended.

A row executor produces a `RowOutcome`; the supervisor prices and stores it;
renderers read it.
Nothing here does I/O.

The records made for every row or upstream call (`Attempt`, `Usage`, `RowOutcome`,
and `Reply`, `Verdict`, `RowWork` elsewhere) are plain slotted dataclasses, not frozen
ones: a frozen dataclass sets each field through `object.__setattr__`, which doubles
the cost of making one, and on an instant upstream that was a few percent of a row's
CPU. They are treated as values all the same: nothing assigns to their fields, a
changed one is a copy (`dataclasses.replace`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)  # made per row or call (see above): not frozen
class Attempt:
    """One upstream call made for a row."""

    model: str  # the alias tried
    status_code: int | None  # HTTP status, None when no answer came back
    error: str | None  # None for a success
    duration_ms: int
    started_at: float  # unix seconds
    transient: bool = False  # worth retrying: timeout, connection error, 408/409/429/5xx


@dataclass(frozen=True)
class ExecutorCall:
    """One call of a tool-calling record to its tool executor (`openrelay.tool_config`):
    a round's tool calls (`round` from 1) or the discovery of its tools (`round` 0),
    each retry a call of its own."""

    round: int
    executor: str  # the executor's protocol: "http" or "mcp"
    status_code: int | None  # the executor's HTTP status when it failed with one
    error: str | None  # None when it gave results
    duration_ms: int
    started_at: float  # unix seconds


@dataclass(slots=True)  # made per row or call (see above): not frozen
class Usage:
    """Tokens one or more model calls took, as upstream chat completions report them
    (`usage.prompt_tokens_details.cached_tokens`,
    `usage.completion_tokens_details.reasoning_tokens`; 0 where not reported)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of the prompt tokens, read from the upstream's prompt cache
    reasoning_tokens: int = 0  # of the completion tokens, spent reasoning

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens,
                     self.cached_tokens + other.cached_tokens,
                     self.reasoning_tokens + other.reasoning_tokens)


@dataclass(frozen=True)
class Turn:
    """One model call in a row that takes several (a transcript): the alias that
    answered, what it cost in tokens, and the messages it added to the conversation."""

    model: str
    usage: Usage
    messages: tuple[dict[str, Any], ...] = ()


@dataclass(slots=True)  # made per row or call (see above): not frozen
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
    usage: Usage = field(default_factory=Usage)  # summed over every model call
    cost_nano_usd: int = 0  # the row's price, set by the supervisor from the model's pricing
    turns: tuple[Turn, ...] = ()  # every model call, for a row that took several
    never_ran: bool = False  # the job's ending stopped it before its first call went out
    executor_calls: tuple[ExecutorCall, ...] = ()  # a tool-calling record's, in order
    validation: str | None = None  # a checked answer: valid, repaired or invalid (output_check)

    @property
    def model_calls(self) -> tuple[tuple[str, Usage], ...]:
        """(alias, usage) of each model call that answered, for pricing."""
        if self.turns:
            return tuple((t.model, t.usage) for t in self.turns)
        return ((self.model, self.usage),) if self.model else ()
