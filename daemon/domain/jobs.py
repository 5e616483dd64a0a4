"""Jobs and rows as the rest of Relay sees them: frozen records and the state machine.

Internal statuses are the union of both dialects' lifecycles; each dialect maps
them to the names its clients know (see `daemon/dialects/`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Final, Literal, get_args

from daemon.domain.outcome import Turn
from daemon.domain.output_check import wants_check
from daemon.domain.tool_config import raw_tool_config
from daemon.domain.workflow_config import raw_workflow

# A job's internal status: a name outside these does not type-check where a status is
# written (`Store.transition(seq, "canceled")` is the Relay view's word, not a status).
Status = Literal["scheduled", "validating", "queued", "running", "finalizing", "completed",
                 "failed", "expired", "cancelling", "cancelled"]

SCHEDULED: Final = "scheduled"
VALIDATING: Final = "validating"
QUEUED: Final = "queued"
RUNNING: Final = "running"
FINALIZING: Final = "finalizing"
COMPLETED: Final = "completed"
FAILED: Final = "failed"
EXPIRED: Final = "expired"
CANCELLING: Final = "cancelling"
CANCELLED: Final = "cancelled"

STATUSES: tuple[Status, ...] = get_args(Status)
TERMINAL: frozenset[Status] = frozenset({COMPLETED, FAILED, EXPIRED, CANCELLED})

# The lifecycle: which status may follow which. This table is the only source of legal
# moves: the store's `transition` takes its allowed sources from it and refuses the rest.
TRANSITIONS: dict[Status, frozenset[Status]] = {
    # A cancel is recorded first, then the job's owner ends it (templates included).
    SCHEDULED: frozenset({CANCELLING}),
    # Validation queues or fails the batch; its window can close before validation ends.
    VALIDATING: frozenset({QUEUED, FAILED, CANCELLING, EXPIRED}),
    # Admitted; failed as a whole (its model left the config); cancelled; expired waiting.
    QUEUED: frozenset({RUNNING, FAILED, CANCELLING, EXPIRED}),
    # Dialects that write result files pass through finalizing; a restart requeues.
    RUNNING: frozenset({FINALIZING, COMPLETED, QUEUED, CANCELLING, EXPIRED}),
    FINALIZING: frozenset({COMPLETED}),
    CANCELLING: frozenset({CANCELLED}),
    COMPLETED: frozenset(),
    FAILED: frozenset(),
    EXPIRED: frozenset(),
    CANCELLED: frozenset(),
}

RowStatus = Literal["pending", "completed", "failed"]
ROW_PENDING: Final = "pending"
ROW_COMPLETED: Final = "completed"
ROW_FAILED: Final = "failed"

# A dead-lettered row's state (`RowRecord.dead_letter_state`).
DeadLetterState = Literal["open", "redriven", "discarded"]
Paused = Literal["operator", "budget"]  # why a job is paused (`Job.paused`)
DL_OPEN: Final = "open"
DL_REDRIVEN: Final = "redriven"
DL_DISCARDED: Final = "discarded"
DL_STATES: tuple[DeadLetterState, ...] = get_args(DeadLetterState)



@dataclass(frozen=True)
class StatusView:
    """How one dialect names the internal statuses: each maps to one public name."""

    renames: dict[str, str]

    def name(self, status: str) -> str:
        return self.renames.get(status, status)

    def statuses_for(self, name: str) -> tuple[str, ...] | None:
        """The internal statuses a `status` filter name matches; None for an unknown name."""
        return tuple(s for s in STATUSES if self.name(s) == name) or None


def can_transition(current: str, new: Status) -> bool:
    return any(current == s and new in targets for s, targets in TRANSITIONS.items())


def sources_of(target: Status) -> frozenset[Status]:
    """Every status the table allows to move to `target`."""
    return frozenset(s for s, targets in TRANSITIONS.items() if target in targets)


def ending_for(current: str, wanted: Status) -> Status:
    """The status a job actually ends in when its owner ends it as `wanted`: a cancel
    already recorded wins over finishing or expiring."""
    return CANCELLED if current == CANCELLING else wanted


@dataclass(frozen=True, kw_only=True)
class JobDraft:
    """A job about to be stored: what its submitter decides. The store assigns `seq`;
    a stored `Job` adds its counters, times and outcomes."""

    id: str
    workspace_id: int
    dialect: str
    name: str
    model: str
    endpoint: str
    status: str
    priority: int
    created_at: float
    webhook_url: str | None = None
    cron: str | None = None
    next_run_at: float | None = None
    template_id: str | None = None
    tier: str = "standard"
    metadata: dict[str, Any] | None = None
    input_file_id: str | None = None
    expires_at: float | None = None
    retry_of: str | None = None  # a dead-letter retry: the job its rows came from
    output_expires_after_s: int | None = None  # result files expire this long after written
    deadline_at: float | None = None  # a Relay job's deadline (`domain/deadline.py`)
    deadline_drain_s: float | None = None  # the estimate's running time at submit


@dataclass(frozen=True, kw_only=True)
class Job(JobDraft):
    """A stored job."""

    seq: int
    total: int = 0
    completed: int = 0
    failed: int = 0
    dead_letter: int = 0
    dead_letter_open: int = 0  # dead-lettered rows neither re-driven nor discarded
    canceled: int = 0  # failed rows that never ran: the job ended before they started
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0  # of the input tokens, read from an upstream's prompt cache
    reasoning_tokens: int = 0  # of the output tokens, spent reasoning
    cost_nano_usd: int = 0
    outputs_valid: int = 0  # checked answers (output_check) valid at once
    outputs_repaired: int = 0  # valid after one or more repairs
    outputs_invalid: int = 0  # still invalid once repairs ran out: failed invalid_output
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    webhook: dict[str, Any] | None = None
    last_run_id: str | None = None
    errors: list[dict[str, Any]] | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    stamps: dict[str, float] = field(default_factory=dict)  # status -> when it was entered
    finished_seq: int = 0  # the last place in its finish order given to a row
    paused_at: float | None = None  # an operator paused it (`POST …/pause`)
    budget_paused_at: float | None = None  # its workspace's budget is spent

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def paused(self) -> Paused | None:
        """Why it is held back from running, if it is: an operator's pause shows first
        (resuming it then shows the budget's, if that holds too)."""
        if self.terminal:
            return None
        if self.paused_at is not None:
            return "operator"
        return "budget" if self.budget_paused_at is not None else None

    @property
    def is_template(self) -> bool:
        return self.cron is not None


def draft_from(job: Job, **changes: Any) -> JobDraft:
    """A new job like `job` (a template's run, a dead-letter retry), with `changes`."""
    copied = {f.name: getattr(job, f.name) for f in fields(JobDraft)}
    return JobDraft(**(copied | changes))


@dataclass(slots=True)  # made per row of every submit: see `outcome.py`
class RowDraft:
    """A row about to be stored with its job."""

    custom_id: str
    body: dict[str, Any]
    model: str | None = None  # per-row alias (OpenAI dialect); None means the job's model
    error: str | None = None  # a row refused at validation is stored already failed
    error_code: str | None = None
    error_path: str | None = None  # where in the body the refusal points (not stored)


@dataclass(frozen=True)
class Staged:
    """What a validated batch's rows, stored a chunk at a time, add up to."""

    total: int
    failed: int = 0  # refused at validation
    refused_last: int = 0  # the last position of a refused row (0: none)
    model: str | None = None  # the batch's model: the first a row names


@dataclass(slots=True)  # made per row or call: see `outcome.py`
class RowWork:
    """A pending row handed to a worker."""

    id: int
    job_seq: int
    custom_id: str
    model: str
    endpoint: str
    body: dict[str, Any]
    job_id: str = ""  # the public id, for headers to user-supplied executors
    rounds: tuple[Turn, ...] = ()  # tool rounds a previous run of the row finished
    workspace_id: int = 0
    workflow: dict[str, Any] | None = None  # where an earlier run of a workflow left it
    kind: str = ""  # CHAT_ROW, TOOL_ROW, WORKFLOW_ROW, CHECKED_ROW: read from the body if not given
    token: int = 0  # the row's lease token when this node leased it (fencing)
    epoch: int = 0  # this node's lease epoch then: a later epoch may have lost the lease

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, "kind", row_kind(self.body))

    @property
    def holds_slot(self) -> bool:
        """A workflow record waits on its callback most of the time: it holds no slot."""
        return self.kind != WORKFLOW_ROW


CHAT_ROW, TOOL_ROW, WORKFLOW_ROW = "chat", "tools", "workflow"
CHECKED_ROW = "checked"  # its answer is checked against a schema (`output_check`)


def row_kind(body: Any) -> str:
    """What running a row means, from the extension its body carries (if any)."""
    if raw_workflow(body) is not None:
        return WORKFLOW_ROW
    if raw_tool_config(body) is not None:
        return TOOL_ROW
    return CHECKED_ROW if wants_check(body) else CHAT_ROW


@dataclass(frozen=True)
class RowRecord:
    """A stored row, as results and the dead-letter list read it."""

    id: int
    position: int
    custom_id: str
    status: RowStatus
    body: dict[str, Any]
    attempts: int = 0
    response: dict[str, Any] | None = None
    status_code: int | None = None
    error: str | None = None
    error_code: str | None = None
    dead_letter: bool = False
    model: str | None = None
    attempt_log: tuple[dict[str, Any], ...] = ()
    # A tool-calling record's calls to its executor, as stored (`ExecutorCall`'s fields)
    executor_calls: tuple[dict[str, Any], ...] = ()
    redriven_to: str | None = None  # the job a dead-letter retry sent it to
    discarded_at: float | None = None  # an operator took it off the dead-letter list
    finished_seq: int | None = None  # its place in the job's finish order (None: pending)

    @property
    def dead_letter_state(self) -> DeadLetterState:
        """Where a dead-lettered row stands: `open` (still needs attention), `redriven`
        (a retry took it; `redriven_to` says where) or `discarded`."""
        if self.redriven_to is not None:
            return DL_REDRIVEN
        return DL_DISCARDED if self.discarded_at is not None else DL_OPEN
