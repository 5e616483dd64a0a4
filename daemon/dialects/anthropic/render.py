"""Jobs and rows as the Message Batches API shows them. Pure: records in, Structs out
(`msgspec.json.encode` writes them).

A batch's `request_counts` move live, where Anthropic's stay zero until the end:
`succeeded` are the completed rows, `canceled` or `expired` the rows the job's ending
failed before they ran (the job's `canceled` counter, named by how the job ended),
`errored` every other failed row, and `processing` the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from daemon.dialects.anthropic.errors import envelope, row_error
from daemon.dialects.anthropic.shapes import (
    AnthropicErrorResponse,
    DeletedMessageBatch,
    MessageBatch,
    MessageBatchCanceledResult,
    MessageBatchErroredResult,
    MessageBatchExpiredResult,
    MessageBatchIndividualResponse,
    MessageBatchPage,
    MessageBatchRequestCounts,
    MessageBatchResult,
    MessageBatchSucceededResult,
    ProcessingStatus,
)
from daemon.domain.jobs import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    EXPIRED,
    FAILED,
    FINALIZING,
    QUEUED,
    ROW_COMPLETED,
    ROW_PENDING,
    RUNNING,
    SCHEDULED,
    VALIDATING,
    Job,
    RowRecord,
    StatusView,
)

PROCESSING_STATUS: dict[str, ProcessingStatus] = {
    SCHEDULED: "in_progress", VALIDATING: "in_progress", QUEUED: "in_progress",
    RUNNING: "in_progress", FINALIZING: "in_progress", CANCELLING: "canceling",
    COMPLETED: "ended", FAILED: "ended", EXPIRED: "ended", CANCELLED: "ended"}
VIEW = StatusView(dict[str, str](PROCESSING_STATUS))  # for `status_name`, `statuses_for`

# (code, message) of the rows a job's ending fails before they ran (`unrun_error`):
# the store counts them, unattempted, in the job's `canceled` (`jobs.NEVER_RAN`).
UNRUN = {
    CANCELLED: ("canceled", "The batch was canceled before this request ran."),
    EXPIRED: ("expired", "The batch expired before this request ran."),
}
_UNRUN_RESULTS: dict[str, MessageBatchResult] = {"canceled": MessageBatchCanceledResult(),
                                                 "expired": MessageBatchExpiredResult()}
RESULTS_PATH = "/v1/messages/batches/{id}/results"


def unrun_error(ending: str) -> tuple[str, str]:
    return UNRUN[ending]


def rfc3339(ts: float) -> str:
    """UTC to the microsecond with a `Z`, as Anthropic writes its times
    (`2024-08-20T18:37:24.100435Z`)."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _maybe(ts: float | None) -> str | None:
    return None if ts is None else rfc3339(ts)


def request_counts(job: Job) -> MessageBatchRequestCounts:
    """The five counts, from the job's counters; they add up to `job.total`. An ended
    job's rows still pending (a batch that could not run at all) count as errored."""
    never_ran = job.canceled
    errored = job.failed - never_ran
    processing = max(job.total - job.completed - job.failed, 0)
    if job.terminal:
        errored, processing = errored + processing, 0
    return MessageBatchRequestCounts(
        processing=processing, succeeded=job.completed, errored=errored,
        canceled=never_ran if job.status == CANCELLED else 0,
        expired=never_ran if job.status == EXPIRED else 0)


def message_batch(job: Job, *, base_url: str, completion_window_s: int) -> MessageBatch:
    """`GET /v1/messages/batches/{id}`. `base_url`: scheme and host the results are
    fetched from (`[server] public_url`, or the request's own); `completion_window_s`:
    the window of a job stored with no `expires_at`."""
    expires = job.expires_at if job.expires_at is not None \
        else job.created_at + completion_window_s
    return MessageBatch(
        id=job.id, type="message_batch", processing_status=PROCESSING_STATUS[job.status],
        request_counts=request_counts(job),
        created_at=rfc3339(job.created_at),
        ended_at=_maybe(_ended_at(job)),
        expires_at=rfc3339(expires),
        cancel_initiated_at=_maybe(job.stamps.get(CANCELLING)),
        archived_at=None,  # results stay until the job itself is deleted
        results_url=results_url(job, base_url=base_url) if job.terminal else None,
    )


def _ended_at(job: Job) -> float | None:
    if not job.terminal:
        return None
    return job.stamps.get(job.status, job.finished_at)


def results_url(job: Job, *, base_url: str) -> str:
    return base_url.rstrip("/") + RESULTS_PATH.format(id=job.id)


def page(jobs: Sequence[Job], *, has_more: bool, base_url: str,
         completion_window_s: int) -> MessageBatchPage:
    """`GET /v1/messages/batches`: one page, in the order given (newest first)."""
    data = [message_batch(job, base_url=base_url, completion_window_s=completion_window_s)
            for job in jobs]
    return MessageBatchPage(data=data, has_more=has_more,
                            first_id=data[0].id if data else None,
                            last_id=data[-1].id if data else None)


def deleted(job: Job) -> DeletedMessageBatch:
    return DeletedMessageBatch(id=job.id, type="message_batch_deleted")


def result_line(job: Job, row: RowRecord) -> MessageBatchIndividualResponse:
    """A row's line of `GET /v1/messages/batches/{id}/results` (of an ended job)."""
    return MessageBatchIndividualResponse(custom_id=row.custom_id, result=_result(job, row))


def _result(job: Job, row: RowRecord) -> MessageBatchResult:
    if row.status == ROW_COMPLETED and row.response is not None:
        return MessageBatchSucceededResult(message=row.response)
    unrun = _UNRUN_RESULTS.get(row.error_code or "")
    if unrun is not None and row.attempts == 0:
        return unrun
    if row.status == ROW_PENDING:  # an ended job that could not run at all
        return MessageBatchErroredResult(error=_unstarted(job))
    return MessageBatchErroredResult(error=row_error(row))


def _unstarted(job: Job) -> AnthropicErrorResponse:
    return envelope("api_error", job.error or "The batch ended before this request ran.")
