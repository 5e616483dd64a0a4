"""The Relay Batches API's wire shapes, and those of Relay's own routes that every
dialect's jobs share: the dead letter, a row's detail, workflows, usage."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from msgspec import Meta

from daemon.dialects.openai.shapes import BatchRequestRecord, BatchUsage, Count
from daemon.domain import relay_input
from daemon.domain.jobs import DeadLetterState, RowStatus
from daemon.domain.shapes import DateTime, Named, open_shape

Stamp = Annotated[str, Meta(description="UTC, ISO 8601 (2026-10-04T09:12:44Z).",
                            extra_json_schema={"format": "date-time"})]
ROW_ERROR_CODES = ("upstream_error", "invalid_response", "response_too_large", "model_not_found",
                   "internal_error", "batch_cancelled", "batch_expired", "invalid_tool_config",
                   "workflow_step_limit", "record_too_large", "invalid_output",
                   "deadline_passed")  # examples, not a closed set

# Seed 000 knows six statuses; the others read as their nearest (render.RELAY_VIEW).
RelayStatus = Literal["scheduled", "queued", "running", "completed", "failed", "canceled"]


@open_shape
class Message(TypedDict):
    """A chat message; other keys are passed upstream as sent."""

    role: Literal["assistant", "developer", "system", "tool", "user"]
    content: str | Annotated[list[dict[str, Any]], Meta(min_length=1)]


class RelayRow(TypedDict):
    """One row of a Relay submission."""

    messages: Annotated[list[Message], Meta(min_length=1)]
    custom_id: NotRequired[Annotated[str, Meta(description="Defaults to row-1, row-2, …",
                                               min_length=1,
                                               max_length=relay_input.MAX_CUSTOM_ID)]]


class RelaySubmit(TypedDict):
    """A Relay Batches API submission."""

    model: Annotated[str, Meta(description="A configured model alias every row runs on.")]
    requests: Annotated[list[RelayRow | BatchRequestRecord], Meta(
        description="Relay rows, or OpenAI chat records (read by the OpenAI parser).",
        min_length=1, max_length=relay_input.MAX_ROWS)]
    name: NotRequired[Annotated[str, Meta(min_length=1, max_length=relay_input.MAX_NAME,
                                          pattern=r"\S")] | None]
    priority: NotRequired[Annotated[int, Meta(description="Higher runs first.",
                                              ge=-1_000_000, le=1_000_000)] | None]
    cron: NotRequired[Annotated[str, Meta(
        description="Exactly 5 fields, UTC: makes a recurring template.")] | None]
    webhookUrl: NotRequired[Annotated[str, Meta(
        description="Receives the completion summary.", min_length=1)] | None]
    response_format: NotRequired[Annotated[dict[str, Any], Meta(description=(
        "Every row's response_format unless it has its own (checked outputs)."))] | None]
    validation: NotRequired[Annotated[dict[str, Any], Meta(description=(
        "Every row's openrelay.validation (max_repairs, format_check) unless it has "
        "its own."))] | None]
    deadline: NotRequired[Annotated[str, Meta(description=(
        "When the job must be done: an RFC 3339 time with its offset, or a duration "
        "from now such as '6h' or '1h30m'. Among queued jobs of equal priority the "
        "earlier deadline runs first; when it passes, the job ends completed and its "
        "unrun rows fail deadline_passed. Not with cron."), min_length=1)] | None]
    strict_deadline: NotRequired[Annotated[bool, Meta(description=(
        "Refuse the submit (cannot_meet_deadline) when the estimate at the model's "
        "limits says the deadline cannot be met, instead of flagging it."))] | None]


class OutputCounts(TypedDict):
    """The job's checked answers (records with a JSON schema or `json_object`)."""

    valid: Annotated[int, Meta(ge=0, description="Valid at the first call.")]
    repaired: Annotated[int, Meta(ge=0, description="Valid after one or more repairs.")]
    invalid: Annotated[int, Meta(ge=0, description=(
        "Still invalid when repairs ran out: failed invalid_output."))]


class RelayJob(TypedDict):
    """A job of the Relay Batches API."""

    id: Annotated[str, Meta(description="32 hex characters.", pattern="^[0-9a-f]{32}$")]
    object: Literal["batch"]
    name: str
    status: RelayStatus
    model: str
    priority: int
    total: Count
    completed: Count
    failed: Count
    dead_letter: Count
    dead_letter_open: Annotated[int, Meta(ge=0, description=(
        "Dead-lettered rows neither re-driven nor discarded: the ones that still need "
        "attention."))]
    canceled: Annotated[int, Meta(ge=0, description=(
        "Of the failed rows, those that never ran: the job was cancelled (or expired) "
        "before they started."))]
    outputs: NotRequired[OutputCounts]
    created_at: Stamp
    started_at: Stamp | None
    completed_at: Stamp | None
    error: str | None
    webhookUrl: str | None
    webhook: Annotated[dict[str, Any], Meta(description="The delivery's outcome, once sent.")
                       ] | None
    cron: str | None
    next_run_at: Stamp | None
    template_id: Annotated[str, Meta(description="The cron template this job is a run of.")
                           ] | None
    retry_of: Annotated[str, Meta(
        description="The job a dead-letter retry took its rows from.")] | None
    usage: BatchUsage
    paused: Annotated[Literal["operator", "budget"], Meta(description=(
        "Why the job is held back from running, if it is (a Relay extension): an "
        "operator paused it (POST /v1/batches/{id}/pause), or its workspace spent its "
        "budget. Its status stays as it was; rows in flight finished, no row starts "
        "until it resumes. An operator's pause shows first when both hold."))] | None
    last_run_id: NotRequired[Annotated[str, Meta(description="A template's latest run.")
                                       ] | None]
    deadline: NotRequired[Annotated[Stamp, Meta(description=(
        "Its deadline, if it was submitted with one (a Relay extension): when it passes, "
        "the job ends completed and its unrun rows fail deadline_passed."))]]
    deadline_at_risk: NotRequired[Annotated[bool, Meta(description=(
        "Whether the estimate at submit said the deadline would be missed."))]]
    deadline_estimate: NotRequired[DeadlineEstimate]


class DeadlineEstimate(TypedDict):
    """How long the estimate at submit said the job's rows take at the model's limits
    (rpm, tpm, concurrency times latency), and when they would be done."""

    drain_s: Annotated[float, Meta(ge=0)]
    finishes_at: Stamp


class RelayContent(TypedDict):
    """A row that succeeded: its content."""

    custom_id: str
    content: Annotated[Any, Meta(description=(
        "The assistant's content (a completion's text, an embedding's vector, a "
        "workflow's output)."))]
    openrelay: NotRequired[Annotated[dict[str, Any], Meta(description="Extension summary.")]]


class RelayFailure(TypedDict):
    """A row that failed: why (an answer that stayed invalid against its schema also
    carries `openrelay`: its repairs, errors and last answer)."""

    custom_id: str
    error: str
    openrelay: NotRequired[dict[str, Any]]


RelayResult = Annotated[RelayContent | RelayFailure, Named("RelayResult")]


class ResultList(TypedDict):
    """Each row's result in input order: empty until the job has ended. With
    `partial=true`, the rows finished so far instead, oldest finish first."""

    id: str
    object: Literal["list"]
    status: Annotated[str, Meta(description="The job's status in its own dialect's words, "
                                            "read before the rows: once it has ended and "
                                            "has_more is false, no row follows.")]
    data: Annotated[list[RelayResult], Meta(
        description="Empty until the job has ended (unless partial=true).")]
    has_more: NotRequired[Annotated[bool, Meta(
        description="With `limit`: whether rows follow this page.")]]
    last_id: NotRequired[Annotated[str, Meta(
        description="With `limit`: the page's last custom_id, for `after`.")] | None]
    next_cursor: NotRequired[Annotated[str, Meta(
        description="With `partial=true`: the `cursor` of the next page, in finish order "
                    "(this page's when it is empty).")]]


class WebhookSummary(TypedDict):
    """Seed 000's completion summary, POSTed to `webhookUrl` when a run ends."""

    id: str
    name: str
    status: RelayStatus
    total: Count
    completed: Count
    failed: Count
    dead_letter: Count
    completed_at: Stamp | None


# -- Relay's own routes on any dialect's job ---------------------------------------------


class Attempt(TypedDict):
    """One upstream call of a row."""

    model: str
    status_code: int | None
    error: str | None
    duration_ms: Count
    started_at: Annotated[str, Meta(
        description="UTC, ISO 8601 to the millisecond (2026-10-04T09:12:44.125Z).",
        extra_json_schema={"format": "date-time"})]


class ExecutorCall(TypedDict):
    """One call of a tool-calling row to its tool executor (`openrelay.tool_config`),
    each retry a call of its own: its round (0: the discovery of the executor's tools),
    protocol, HTTP status when it failed with one, and error (null: it gave results)."""

    round: Count
    executor: Annotated[str, Meta(description="The executor's protocol: http or mcp.")]
    status_code: int | None
    error: str | None
    duration_ms: Count
    started_at: Annotated[str, Meta(
        description="UTC, ISO 8601 to the millisecond (2026-10-04T09:12:44.125Z).",
        extra_json_schema={"format": "date-time"})]


DeadLetterView = Annotated[DeadLetterState, Meta(description=(
    "open: still needs attention; redriven: a retry took it (redriven_to); discarded."))]


class DeadLetterEntry(TypedDict):
    """A row that failed transiently after every retry and fallback."""

    custom_id: str
    attempts: Count
    models: list[str]
    last_error: str | None
    status_code: int | None
    messages: Annotated[Any, Meta(description="The row's messages (chat rows).")]
    body: Annotated[dict[str, Any], Meta(description="Secrets redacted.")]
    attempt_log: list[Attempt]
    executor_calls: Annotated[list[ExecutorCall], Meta(description=(
        "A tool-calling row's calls to its tool executor, in order; empty for any "
        "other row."))]
    redriven_to: Annotated[str, Meta(description="The retry job the row went to.")] | None
    state: DeadLetterView
    discarded_at: Annotated[str, Meta(description="When it was discarded, ISO 8601."),
                            DateTime] | None


class DeadLetterList(TypedDict):
    """A job's dead-lettered rows."""

    id: str
    object: Literal["list"]
    data: list[DeadLetterEntry]


class WorkspaceDeadLetterEntry(DeadLetterEntry):
    """An entry with the job it belongs to."""

    batch_id: str
    batch_name: str


class WorkspaceDeadLetterList(TypedDict):
    """Dead-lettered rows of every job of the workspace."""

    object: Literal["list"]
    has_more: bool
    data: list[WorkspaceDeadLetterEntry]


@open_shape
class DeadLetterDiscard(TypedDict, total=False):
    """Which open dead-lettered rows to discard (all when absent)."""

    custom_ids: Annotated[list[str], Meta(min_length=1)] | None


@open_shape
class DeadLetterRetry(TypedDict, total=False):
    """Which dead-lettered rows to re-drive (all when absent)."""

    custom_ids: Annotated[list[str], Meta(min_length=1)] | None
    force: Annotated[bool, Meta(description="Re-drive rows that were re-driven already.")]


class DeadLetterDiscarded(TypedDict):
    """What a discard took off the job's list."""

    id: str
    object: Literal["batch.dead_letter.discard"]
    discarded: Annotated[int, Meta(ge=1)]
    dead_letter_open: Count


class RoundUsage(TypedDict):
    prompt_tokens: int
    completion_tokens: int


class Round(TypedDict):
    """One tool round: the model's turn and the tool results."""

    round: Annotated[int, Meta(ge=1)]
    model: str
    usage: RoundUsage
    messages: list[dict[str, Any]]


class WorkflowTotals(TypedDict):
    steps: Count
    requests: Count
    input_tokens: Count
    output_tokens: Count


class WorkflowView(TypedDict):
    """Where a workflow record stands."""

    phase: str | None
    step: Count
    totals: WorkflowTotals
    history: list[Any]
    event: str | None
    requests: Count
    finished: Count
    wake_at: float | None


class RowDetail(TypedDict):
    """One row, its attempts, its transcript or workflow state, secrets redacted."""

    object: Literal["batch.row"]
    batch_id: str
    custom_id: str
    status: RowStatus
    model: str | None
    attempts: Count
    error: str | None
    error_code: Annotated[str, Meta(
        description="Machine-readable, e.g. " + ", ".join(ROW_ERROR_CODES) + ".")] | None
    dead_letter: bool
    body: Annotated[dict[str, Any], Meta(description="Secrets redacted.")]
    response: dict[str, Any] | None
    tool_rounds: Count
    transcript: list[Round]
    attempt_log: list[Attempt]
    executor_calls: Annotated[list[ExecutorCall], Meta(description=(
        "A tool-calling row's calls to its tool executor, in order; empty for any "
        "other row."))]
    workflow: NotRequired[WorkflowView]


class WorkflowCounters(TypedDict):
    """A job's workflow records, summed."""

    object: Literal["batch.workflows"]
    batch_id: str
    started: Count
    ended: Count
    running: Count
    waiting: Count
    calling_back: Count
    steps: Count
    requests: Count
    input_tokens: Count
    output_tokens: Count

