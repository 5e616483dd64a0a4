"""Rendering jobs for clients: the Relay dialect's shapes (seed 000) and the neutral
event view that the live feed and the TUI read. Pure: records in, dicts out."""

from __future__ import annotations

from typing import Any, cast

from daemon.dialects.openai.shapes import BatchUsage
from daemon.dialects.relay.shapes import (
    Attempt,
    DeadLetterEntry,
    ExecutorCall,
    RelayContent,
    RelayFailure,
    RelayJob,
    RelayResult,
    RelayStatus,
    RowDetail,
    WebhookSummary,
    WorkflowCounters,
    WorkflowView,
    WorkspaceDeadLetterEntry,
)
from daemon.domain.deadline import at_risk
from daemon.domain.extensions import EXTENSIONS
from daemon.domain.jobs import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    EXPIRED,
    FAILED,
    FINALIZING,
    QUEUED,
    RUNNING,
    VALIDATING,
    Job,
    RowRecord,
    StatusView,
)
from daemon.domain.outcome import Turn
from daemon.domain.output_check import INVALID_OUTPUT
from daemon.domain.stamps import iso, iso_ms
from daemon.domain.tool_config import redacted

# Seed 000 knows six statuses; the others read as their nearest Relay name.
RELAY_VIEW = StatusView({VALIDATING: QUEUED, FINALIZING: RUNNING, CANCELLING: RUNNING,
                         CANCELLED: "canceled", EXPIRED: FAILED})


# The Relay dialect's own jobs: one that expired passed its deadline (a Relay job has no
# completion window), and ended completed, its unrun rows failed `deadline_passed`.
OWN_VIEW = StatusView({**RELAY_VIEW.renames, EXPIRED: COMPLETED})


def relay_status(status: str) -> RelayStatus:
    """An internal status by its Relay name (the shape's `RelayStatus` lists them: a
    test holds the two together)."""
    return cast(RelayStatus, RELAY_VIEW.name(status))


def job_status(job: Job) -> RelayStatus:
    """A job's Relay status. A Relay job has no completion window: one that expired
    passed its deadline, and reads `completed` (its unrun rows failed deadline_passed;
    failing rows never fail a Relay job)."""
    view = OWN_VIEW if job.dialect == "relay" else RELAY_VIEW
    return cast(RelayStatus, view.name(job.status))


def attempt_log(row: RowRecord) -> list[Attempt]:
    """A row's attempts as clients read them: `started_at` in ISO 8601 (the store keeps
    Unix seconds). The log is a Relay shape for jobs of either dialect."""
    return [cast(Attempt, attempt | {"started_at": iso_ms(attempt["started_at"])}
                 if isinstance(attempt.get("started_at"), int | float) else dict(attempt))
            for attempt in row.attempt_log]  # as the store kept them


def executor_calls(row: RowRecord) -> list[ExecutorCall]:
    """A tool-calling row's executor calls as clients read them (`started_at` in ISO
    8601, as in the attempt log)."""
    return [cast(ExecutorCall, call | {"started_at": iso_ms(call["started_at"])})
            for call in row.executor_calls]


def usage(job: Job) -> BatchUsage:
    """OpenAI's `BatchUsage` (every field it requires), plus `cost_nano_usd`: the
    OpenAI view's `usage`, and the Relay view's too."""
    return {
        "input_tokens": job.input_tokens,
        "input_tokens_details": {"cached_tokens": job.cached_tokens},
        "output_tokens": job.output_tokens,
        "output_tokens_details": {"reasoning_tokens": job.reasoning_tokens},
        "total_tokens": job.input_tokens + job.output_tokens,
        "cost_nano_usd": job.cost_nano_usd,
    }


def relay_job(job: Job) -> RelayJob:
    """`GET /v1/batches/{id}` for a Relay-dialect job."""
    view: RelayJob = {
        "id": job.id,
        "object": "batch",
        "name": job.name,
        "status": job_status(job),
        "model": job.model,
        "priority": job.priority,
        "total": job.total,
        "completed": job.completed,
        "failed": job.failed,
        "dead_letter": job.dead_letter,
        "dead_letter_open": job.dead_letter_open,
        "canceled": job.canceled,
        "outputs": {"valid": job.outputs_valid, "repaired": job.outputs_repaired,
                    "invalid": job.outputs_invalid},
        "created_at": iso(job.created_at),
        "started_at": iso(job.started_at),
        "completed_at": iso(job.finished_at),
        "error": job.error,
        "webhookUrl": job.webhook_url,
        "webhook": job.webhook,
        "cron": job.cron,
        "next_run_at": iso(job.next_run_at),
        "template_id": job.template_id,
        "retry_of": job.retry_of,
        "usage": usage(job),
        "paused": job.paused,
    }
    add_deadline(view, job)
    if job.is_template:
        view["last_run_id"] = job.last_run_id
    return view


def add_deadline(view: RelayJob, job: Job) -> None:
    """A job's deadline, if it has one, with what the estimate at submit said of it."""
    if job.deadline_at is None:
        return
    view["deadline"] = iso(job.deadline_at)
    if job.deadline_drain_s is not None:
        view["deadline_at_risk"] = deadline_at_risk(job)
        view["deadline_estimate"] = {"drain_s": job.deadline_drain_s,
                                     "finishes_at": iso(job.created_at + job.deadline_drain_s)}


def relay_result(row: RowRecord) -> RelayResult:
    """One row of `GET /v1/batches/{id}/results`: content or error, never both."""
    if row.status == "completed":
        content = assistant_content(row.response)
        if content is None and isinstance(row.response, dict):  # a workflow's output
            content = row.response.get("output")
        result: RelayContent = {"custom_id": row.custom_id, "content": content}
        summary = (row.response or {}).get(EXTENSIONS)
        if isinstance(summary, dict):
            result["openrelay"] = summary
        return result
    failure = RelayFailure(custom_id=row.custom_id, error=row.error or "failed")
    summary = (row.response or {}).get(EXTENSIONS)
    if row.error_code == INVALID_OUTPUT and isinstance(summary, dict):  # the last answer
        failure["openrelay"] = {**summary, "last_answer": assistant_content(row.response)}
    return failure


def assistant_content(response: dict[str, Any] | None) -> Any:
    """The assistant message of a chat completion (text of a completion, vector of an
    embedding, text of an Anthropic Message, output text of a Response, results of a
    moderation); None when the shape is not one of those."""
    if not isinstance(response, dict):
        return None
    if response.get("object") == "response":
        return response_text(response)
    results = response.get("results")
    if isinstance(results, list) and "choices" not in response:  # a moderation
        return results
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        first = choices[0]
        message = first.get("message")
        if isinstance(message, dict):
            return message.get("content")
        return first.get("text")
    data = response.get("data")
    if isinstance(data, list) and data and isinstance(data[0], dict):
        return data[0].get("embedding")
    blocks = response.get("content")
    if response.get("type") == "message" and isinstance(blocks, list):  # Anthropic's
        texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        return "".join(t for t in texts if isinstance(t, str))
    return None


def response_text(response: dict[str, Any]) -> str | None:
    """A Response's output text, as the SDK's `output_text` reads it: the `output_text`
    parts of its `message` items, joined; None when it has none (only function calls)."""
    texts = [str(part["text"]) for item in _listed(response.get("output"))
             if item.get("type") == "message" for part in _listed(item.get("content"))
             if part.get("type") == "output_text" and isinstance(part.get("text"), str)]
    return "".join(texts) if texts else None


def _listed(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def dead_letter_entry(row: RowRecord) -> DeadLetterEntry:
    models = list(dict.fromkeys(a["model"] for a in row.attempt_log))
    return {
        "custom_id": row.custom_id,
        "attempts": row.attempts,
        "models": models,
        "last_error": row.error,
        "status_code": row.status_code,
        "messages": row.body.get("messages"),
        "body": redacted(row.body),
        "attempt_log": attempt_log(row),
        "executor_calls": executor_calls(row),
        "redriven_to": row.redriven_to,
        "state": row.dead_letter_state,
        "discarded_at": iso(row.discarded_at),
    }


def workspace_dead_letter_entry(job: Job, row: RowRecord) -> WorkspaceDeadLetterEntry:
    """One row of `GET /v1/dead_letter`: a job's entry, with the job it belongs to."""
    return {"batch_id": job.id, "batch_name": job.name, **dead_letter_entry(row)}


def row_detail(job: Job, row: RowRecord, rounds: list[Turn],
               workflow: dict[str, Any] | None = None) -> RowDetail:
    """`GET /v1/batches/{id}/rows/{custom_id}`: one row, its attempts, its transcript
    (every tool round: the model's turn and the tool results) or where its workflow
    stands, secrets redacted."""
    detail: RowDetail = {
        "object": "batch.row",
        "batch_id": job.id,
        "custom_id": row.custom_id,
        "status": row.status,
        "model": row.model,
        "attempts": row.attempts,
        "error": row.error,
        "error_code": row.error_code,
        "dead_letter": row.dead_letter,
        "body": redacted(row.body),
        "response": row.response,
        "tool_rounds": sum(1 for turn in rounds if len(turn.messages) > 1),  # with results
        "transcript": [{"round": number, "model": turn.model,
                        "usage": {"prompt_tokens": turn.usage.prompt_tokens,
                                  "completion_tokens": turn.usage.completion_tokens},
                        "messages": list(turn.messages)}
                       for number, turn in enumerate(rounds, start=1)],
        "attempt_log": attempt_log(row),
        "executor_calls": executor_calls(row),
    }
    if workflow is not None:
        detail["workflow"] = workflow_view(workflow)
    return detail


def workflow_view(workflow: dict[str, Any]) -> WorkflowView:
    """A workflow record's state as the row detail shows it: its phase, step, totals,
    each answer of its callback, and the current step's requests."""
    state, results = workflow["state"], workflow["results"]
    steps = state.get("step", 0)
    return {
        "phase": state.get("phase"),
        "step": steps,
        "totals": {"steps": steps, "requests": state.get("requests_total", 0),
                   "input_tokens": state.get("input_tokens", 0),
                   "output_tokens": state.get("output_tokens", 0)},
        "history": state.get("history") or [],
        "event": (state.get("event") or {}).get("type"),
        "requests": len(state.get("requests") or []),
        "finished": len(results),
        "wake_at": state.get("wake_at"),
    }


def workflow_counters(job: Job, states: list[tuple[str, dict[str, Any]]]) -> WorkflowCounters:
    """`GET /v1/batches/{id}/workflows`: how a job's workflow records stand, summed."""
    live = [state for status, state in states if status == "pending"]
    return {
        "object": "batch.workflows",
        "batch_id": job.id,
        "started": len(states),
        "ended": len(states) - len(live),
        "running": sum(1 for s in live if s.get("phase") == "running"),
        "waiting": sum(1 for s in live if s.get("phase") == "waiting"),
        "calling_back": sum(1 for s in live if s.get("phase") == "deliver"),
        "steps": sum(s.get("step", 0) for _, s in states),
        "requests": sum(s.get("requests_total", 0) for _, s in states),
        "input_tokens": sum(s.get("input_tokens", 0) for _, s in states),
        "output_tokens": sum(s.get("output_tokens", 0) for _, s in states),
    }


def webhook_payload(job: Job) -> WebhookSummary:
    """Seed 000's completion summary, POSTed to `webhookUrl` when a run ends."""
    return {
        "id": job.id,
        "name": job.name,
        "status": job_status(job),
        "total": job.total,
        "completed": job.completed,
        "failed": job.failed,
        "dead_letter": job.dead_letter,
        "completed_at": iso(job.finished_at),
    }


def event_fields(job: Job) -> dict[str, Any]:
    """The dialect-neutral fields of a job's `/v1/events` summary."""
    return {
        "id": job.id,
        "dialect": job.dialect,
        "name": job.name,
        "model": job.model,
        "status": job.status,
        "priority": job.priority,
        "tier": job.tier,
        "total": job.total,
        "completed": job.completed,
        "failed": job.failed,
        "dead_letter": job.dead_letter,
        "dead_letter_open": job.dead_letter_open,
        "canceled": job.canceled,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
        "cron": job.cron,
        "next_run_at": job.next_run_at,
        "template_id": job.template_id,
        "error": job.error,
        "input_tokens": job.input_tokens,
        "output_tokens": job.output_tokens,
        "cost_nano_usd": job.cost_nano_usd,
        "paused": job.paused,
        "deadline_at": job.deadline_at,
        "deadline_at_risk": deadline_at_risk(job),
    }


def deadline_at_risk(job: Job) -> bool:
    """Whether the estimate at its submit said the job's deadline would be missed."""
    return (job.deadline_at is not None and job.deadline_drain_s is not None
            and at_risk(job.deadline_at, drain_s=job.deadline_drain_s, now=job.created_at))
