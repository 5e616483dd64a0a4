"""Jobs and rows as the rest of Relay sees them: frozen records and the state machine.

Internal statuses are the union of both dialects' lifecycles; each dialect's
renderer maps them to the names its clients know (see `relay_status`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEDULED = "scheduled"
VALIDATING = "validating"
QUEUED = "queued"
RUNNING = "running"
FINALIZING = "finalizing"
COMPLETED = "completed"
FAILED = "failed"
EXPIRED = "expired"
CANCELLING = "cancelling"
CANCELLED = "cancelled"

STATUSES = (
    SCHEDULED, VALIDATING, QUEUED, RUNNING, FINALIZING,
    COMPLETED, FAILED, EXPIRED, CANCELLING, CANCELLED,
)
TERMINAL = frozenset({COMPLETED, FAILED, EXPIRED, CANCELLED})

# Which status may follow which. A transition not listed here is a bug.
TRANSITIONS: dict[str, frozenset[str]] = {
    SCHEDULED: frozenset({CANCELLED}),
    VALIDATING: frozenset({QUEUED, FAILED, CANCELLING, CANCELLED}),
    QUEUED: frozenset({RUNNING, CANCELLING, CANCELLED, EXPIRED, FAILED}),
    RUNNING: frozenset({FINALIZING, COMPLETED, QUEUED, CANCELLING, FAILED, EXPIRED}),
    FINALIZING: frozenset({COMPLETED, FAILED, EXPIRED, CANCELLED}),
    CANCELLING: frozenset({CANCELLED}),
    COMPLETED: frozenset(),
    FAILED: frozenset(),
    EXPIRED: frozenset(),
    CANCELLED: frozenset(),
}

_RELAY_VIEW = {VALIDATING: QUEUED, FINALIZING: RUNNING, CANCELLING: RUNNING,
               CANCELLED: "canceled", EXPIRED: FAILED}
_RELAY_NAMES = {"queued", "scheduled", "running", "completed", "failed", "canceled"}

ROW_PENDING = "pending"
ROW_COMPLETED = "completed"
ROW_FAILED = "failed"

RELAY = "relay"
OPENAI = "openai"


def can_transition(current: str, new: str) -> bool:
    return new in TRANSITIONS.get(current, frozenset())


def relay_status(status: str) -> str:
    """The status name a Relay-dialect client sees."""
    return _RELAY_VIEW.get(status, status)


def internal_statuses_for_relay(name: str) -> tuple[str, ...] | None:
    """The internal statuses a Relay `status` filter matches; None for an unknown name."""
    if name not in _RELAY_NAMES:
        return None
    return tuple(s for s in STATUSES if relay_status(s) == name)


@dataclass(frozen=True)
class Job:
    id: str
    seq: int
    workspace_id: int
    dialect: str
    name: str
    model: str
    endpoint: str
    status: str
    priority: int
    created_at: float
    total: int = 0
    completed: int = 0
    failed: int = 0
    dead_letter: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_nano_usd: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    webhook_url: str | None = None
    webhook: dict[str, Any] | None = None
    cron: str | None = None
    next_run_at: float | None = None
    template_id: str | None = None
    last_run_id: str | None = None
    tier: str = "standard"
    metadata: dict[str, Any] | None = None
    errors: list[dict[str, Any]] | None = None
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    expires_at: float | None = None
    stamps: dict[str, float] = field(default_factory=dict)  # status -> when it was entered

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def is_template(self) -> bool:
        return self.cron is not None


@dataclass(frozen=True)
class RowDraft:
    """A row about to be stored with its job."""

    custom_id: str
    body: dict[str, Any]
    model: str | None = None  # per-row alias (OpenAI dialect); None means the job's model
    error: str | None = None  # a row refused at validation is stored already failed
    error_code: str | None = None


@dataclass(frozen=True)
class RowWork:
    """A pending row handed to a worker."""

    id: int
    job_seq: int
    custom_id: str
    model: str
    endpoint: str
    body: dict[str, Any]


@dataclass(frozen=True)
class RowRecord:
    """A stored row, as results and the dead-letter list read it."""

    id: int
    position: int
    custom_id: str
    status: str
    body: dict[str, Any]
    attempts: int = 0
    response: dict[str, Any] | None = None
    status_code: int | None = None
    error: str | None = None
    error_code: str | None = None
    dead_letter: bool = False
    model: str | None = None
    attempt_log: tuple[dict[str, Any], ...] = ()
