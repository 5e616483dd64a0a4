"""The OpenRelay batch API (OpenAI's Batch API shape): `{endpoint, completion_window,
input_file_id | requests, metadata, priority}`, validated in the background from a
JSONL input file; the batch object, its eight status names, output and error files,
and the batch rate for the standard tier."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from daemon.dialects.base import (
    Bearer,
    Capability,
    Intake,
    KeyScheme,
    Proposed,
    Redrive,
    openai_error,
    row_problems,
)
from daemon.dialects.openai import render as render_openai
from daemon.dialects.openai.shapes import Error, OpenAIBatch, OpenAICreate
from daemon.dialects.relay import BATCHES, JOB_ID, ONE
from daemon.dialects.spending import check_budget, check_not_spent, input_prices
from daemon.domain import ids
from daemon.domain.errors import InvalidRequest, RelayError
from daemon.domain.files import BATCH, FileRecord
from daemon.domain.jobs import (
    CANCELLED,
    EXPIRED,
    ROW_COMPLETED,
    VALIDATING,
    Job,
    JobDraft,
    RowRecord,
)
from daemon.domain.openai_input import (
    MAX_RECORDS,
    CheckUrl,
    CreateRequest,
    Earlier,
    ParsedRecords,
    RecordStream,
    jsonl_lines,
    parse_create,
    parse_records,
)
from daemon.domain.pricing import STANDARD_DISCOUNT
from daemon.domain.routes import DRY_RUN, Action, Operation, Route
from daemon.outbound.policy import TargetCheck
from daemon.store.interface import WorkspaceRecord

NAME = "openai"
_SIGNATURE_KEYS = frozenset({"endpoint", "input_file_id", "completion_window"})
_UNRUN = {
    CANCELLED: ("batch_cancelled", "The batch was cancelled before this request ran."),
    EXPIRED: ("batch_expired", "The batch expired before this request ran."),
}


class OpenAIDialect:
    name = NAME
    auth: KeyScheme = Bearer()
    prefixes: tuple[str, ...] = ()  # its paths are Relay's own
    max_body_mb: int | None = None
    max_rows: int = MAX_RECORDS
    job_shape = OpenAIBatch
    error_shape = Error
    webhook_shape = None
    capabilities = frozenset({Capability.LIST_PAGING, Capability.CANCEL, Capability.RESULTS,
                              Capability.RESULT_FILES, Capability.DEAD_LETTER})
    # (no webhook: its create body names none)

    def routes(self) -> Sequence[Route]:
        """OpenAI's batch routes, on the `/v1/batches` it shares with the Relay Batches
        API. Its list, which Relay extends to every dialect's jobs (`?dialect=`), and the
        Files API are Relay's routes (`daemon/api/`)."""
        return [
            Route("POST", BATCHES, Action.SUBMIT, Operation(
                "createBatch", "Submit a batch", "Batches", answer=OpenAIBatch,
                body=OpenAICreate, errors=(400, 404, 413, 429, 503, 507),
                params=(DRY_RUN,))),
            Route("GET", ONE, Action.GET, Operation(
                "getBatch", "A job's status", "Batches", answer=OpenAIBatch,
                errors=(401, 404), params=(JOB_ID,))),
            Route("POST", ONE + "/cancel", Action.CANCEL, Operation(
                "cancelBatch", "Cancel a batch", "Batches", answer=OpenAIBatch,
                errors=(401, 404, 409, 503, 507), params=(JOB_ID,))),
        ]

    def error_body(self, error: RelayError, status: int) -> Mapping[str, Any]:
        return openai_error(error)

    def error_status(self, status: int) -> int:
        return status

    def recognises(self, body: Any) -> bool:
        return isinstance(body, dict) and not _SIGNATURE_KEYS.isdisjoint(body)

    def submit(self, intake: Intake, workspace: WorkspaceRecord, body: Any) -> Job:
        """Store the batch as `validating`; the validator reads its records later.
        Inline `requests` are written as an input file first, so every batch has an
        `input_file_id` as the batch object requires."""
        request = parse_create(body)
        if request.tier == "expedited" and not workspace.expedited:
            raise InvalidRequest("The expedited tier is disabled for this organization.",
                                 param="priority", code="expedited_disabled")
        now = intake.clock()
        if check_not_spent(intake.repo, workspace.id, now=now,
                           param="input_file_id") is not None:  # it has a budget
            _check_budget(intake, workspace, request, now=now)
        file_id = _input_file(intake, workspace, request, now=now)
        return intake.repo.create_job(self._draft(intake, workspace, request, file_id,
                                                  now=now), [])

    def propose(self, intake: Intake, workspace: WorkspaceRecord, body: Any) -> Proposed:
        """The records as the validator would read them (the input file read here,
        nothing stored); a file-level or record-level error is a problem."""
        try:
            request = parse_create(body)
            if request.tier == "expedited" and not workspace.expedited:
                raise InvalidRequest("The expedited tier is disabled for this organization.",
                                     param="priority", code="expedited_disabled")
            parsed = _proposed_records(intake, workspace, request)
        except InvalidRequest as exc:
            return Proposed(rows=[], problems=[exc])
        problems: list[RelayError] = [
            InvalidRequest(e.message if e.line is None else f"line {e.line}: {e.message}",
                           code=e.code, param=e.param) for e in parsed.errors]
        return Proposed(rows=[(r.model or "", r.body) for r in parsed.rows if r.error is None],
                        discount=STANDARD_DISCOUNT if request.tier == "standard"
                        else Decimal(0),
                        problems=problems + row_problems(parsed.rows))

    def _draft(self, intake: Intake, workspace: WorkspaceRecord, request: CreateRequest,
               file_id: str, *, now: float) -> JobDraft:
        return JobDraft(
            id=self.new_id(), workspace_id=workspace.id, dialect=NAME,
            name=(request.metadata or {}).get("name") or f"batch {file_id}",
            model=request.model_hint or "", endpoint=request.endpoint, status=VALIDATING,
            priority=0, created_at=now, tier=request.tier, metadata=request.metadata,
            input_file_id=file_id,
            expires_at=now + intake.config.gateway.completion_window_s,
            output_expires_after_s=request.output_expires_after_s,
        )

    def new_id(self) -> str:
        return ids.openai_batch_id()

    def render(self, job: Job, *, origin: str = "") -> OpenAIBatch:
        return render_openai.batch(job)

    def status_name(self, status: str) -> str:
        return render_openai.OPENAI_VIEW.name(status)

    def statuses_for(self, name: str) -> tuple[str, ...] | None:
        return render_openai.OPENAI_VIEW.statuses_for(name)

    def unrun_error(self, ending: str) -> tuple[str, str]:
        return _UNRUN[ending]

    def discount(self, job: Job) -> Decimal:
        """Standard batches get the batch rate; expedited ones pay the online price."""
        return STANDARD_DISCOUNT if job.tier == "standard" else Decimal(0)

    def admission_problem(self, job: Job, models: frozenset[str]) -> str | None:
        return None  # each record names its model; a missing one fails that record only

    def parse_input(self, job: Job, data: Any, *, models: Collection[str],
                    check_url: CheckUrl, workflows: bool, max_rows: int,
                    earlier: Earlier) -> RecordStream:
        return RecordStream(jsonl_lines(data), endpoint=job.endpoint, models=models,
                            check_url=check_url, workflows=workflows, max_records=max_rows,
                            earlier=earlier)

    def webhook_payload(self, job: Job) -> Mapping[str, Any]:
        return render_openai.batch(job)

    def result_lines(self, job: Job, row: RowRecord) -> tuple[str, Mapping[str, Any]]:
        if row.status == ROW_COMPLETED:
            return "output", render_openai.output_line(job, row)
        return "errors", render_openai.error_line(job, row)

    def redrive(self, intake: Intake, job: Job, rows: Sequence[RowRecord], *,
                now: float) -> Redrive:
        """A retried batch is a batch like any other: its own input file (the retried
        records as they were submitted; the source's file holds every record, and may be
        deleted) and its own completion window."""
        file_id = ids.file_id()
        path, size, _ = intake.files.write_jsonl(
            file_id, (render_openai.request_line(job, row) for row in rows))
        record = FileRecord(id=file_id, workspace_id=job.workspace_id,
                            filename=f"{job.id}-dead-letter-retry.jsonl", purpose=BATCH,
                            bytes=size, created_at=now, path=str(path))
        return Redrive(record, expires_at=now + intake.config.gateway.completion_window_s)


def _check_budget(intake: Intake, workspace: WorkspaceRecord, request: CreateRequest, *,
                  now: float) -> None:
    """A workspace with a budget: the batch's records are read now (the validator reads
    them again), and a batch whose input alone costs more than is left is refused."""
    try:
        parsed = _proposed_records(intake, workspace, request)
    except InvalidRequest:
        return  # a file that cannot be read fails in the validator, as without a budget
    if parsed.errors:
        return  # so does a file with a file-level error, for that error
    check_budget(intake.repo, workspace.id, parsed.rows, prices=input_prices(intake),
                 model=None, discount=STANDARD_DISCOUNT if request.tier == "standard"
                 else Decimal(0), now=now,
                 param="input_file_id" if request.input_file_id else "requests")


def _proposed_records(intake: Intake, workspace: WorkspaceRecord,
                      request: CreateRequest) -> ParsedRecords:
    models = {m.alias for m in intake.config.models}
    check = TargetCheck(allow_private=intake.config.security.allow_private_targets,
                        resolve=intake.resolve)
    if request.input_file_id is None:
        return parse_records(enumerate(request.requests or [], 1), endpoint=request.endpoint,
                             models=models, check_url=check, workflows=workspace.workflows)
    record = _batch_file(intake, workspace, request.input_file_id, now=intake.clock())
    try:
        with Path(record.path).open("rb") as data:
            return parse_records(jsonl_lines(data), endpoint=request.endpoint, models=models,
                                 check_url=check, workflows=workspace.workflows)
    except OSError as exc:
        raise InvalidRequest(f"The input file {record.id!r} cannot be read.",
                             param="input_file_id", code="file_not_found") from exc


def _batch_file(intake: Intake, workspace: WorkspaceRecord, file_id: str, *,
                now: float) -> FileRecord:
    record = intake.repo.file(file_id, workspace_id=workspace.id)
    if record is None or record.expired(now):
        raise InvalidRequest(f"No file found with id '{file_id}'.",
                             param="input_file_id", code="file_not_found")
    if record.purpose != BATCH:
        raise InvalidRequest(f"File '{record.id}' has purpose '{record.purpose}'; a batch "
                             "input needs purpose 'batch'.", param="input_file_id")
    return record


def _input_file(intake: Intake, workspace: WorkspaceRecord, request: CreateRequest, *,
                now: float) -> str:
    if request.input_file_id is not None:
        return _batch_file(intake, workspace, request.input_file_id, now=now).id
    file_id = ids.file_id()
    path, size, _ = intake.files.write_jsonl(file_id, request.requests or [])
    intake.repo.add_file(FileRecord(id=file_id, workspace_id=workspace.id,
                                    filename="inline-requests.jsonl", purpose=BATCH,
                                    bytes=size, created_at=now, path=str(path)))
    return file_id
