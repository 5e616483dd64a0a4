"""Anthropic's Message Batches API (`/v1/messages/batches…`, `x-api-key`): one package.

- this module: the dialect (its routes, key scheme, error statuses, hooks);
- `shapes`: the wire shapes (the OpenAPI components come from them);
- `parse`: the create body, checked whole; a request that cannot run fails alone;
- `render`: jobs and rows as those shapes, and the never-ran codes;
- `errors`: Anthropic's error envelope, for answers and for errored results;
- `auth`: the key (`x-api-key`, or Bearer as the 2.x SDK sends it) and `anthropic-version`;
- `ids`: `msgbatch_` ids.

Rows of this dialect are Messages API requests (endpoint `/v1/messages`); a succeeded
row's stored response is an Anthropic `Message` (the router translates to and from an
OpenAI-compatible upstream). Its batches take the batch discount; there is no webhook.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from decimal import Decimal
from typing import Annotated, Any, Literal, Union

from msgspec import Meta

from daemon.dialects.anthropic import auth, errors, ids, parse, render
from daemon.dialects.anthropic.shapes import (
    MAX_REQUESTS,
    AnthropicErrorResponse,
    DeletedMessageBatch,
    MessageBatch,
    MessageBatchCreateParams,
    MessageBatchIndividualResponse,
    MessageBatchPage,
)
from daemon.dialects.base import (
    IDEMPOTENCY_KEY,
    Capability,
    Intake,
    KeyScheme,
    Paging,
    Proposed,
    Redrive,
    row_cap,
    row_problems,
)
from daemon.dialects.estimate_shapes import BatchEstimate
from daemon.dialects.spending import check_budget, input_prices
from daemon.domain.errors import Conflict, InvalidRequest, RelayError
from daemon.domain.jobs import Job, RowRecord
from daemon.domain.openai_input import CheckUrl, Earlier, RecordStream
from daemon.domain.pricing import STANDARD_DISCOUNT
from daemon.domain.routes import DRY_RUN, Action, Media, Operation, Param, Route
from daemon.store.interface import WorkspaceRecord

NAME = "anthropic"
BATCHES = "/v1/messages/batches"
ONE = BATCHES + "/{job_id}"
JOB_ID = Param("job_id", "path", str, "A Message Batch id (msgbatch_…).")
VERSION = Param("anthropic-version", "header", str, "The API version, e.g. 2023-06-01.",
                required=True)
# Anthropic's API answers with these statuses only: Relay's others read as the nearest.
_STATUSES = {409: 400, 408: 400, 503: 529, 507: 500}


class AnthropicKey:
    """`x-api-key: <key>` (or `Authorization: Bearer <key>`, as the 2.x SDK sends it),
    with the `anthropic-version` header Anthropic's API requires."""

    scheme = "x-api-key"
    document: Mapping[str, Any] = {"type": "apiKey", "in": "header", "name": "x-api-key",
                                   "description": "A Relay API key (relayd keys create)."}
    missing = auth.MISSING_KEY

    def key(self, headers: Mapping[str, str]) -> str | None:
        return auth.api_key(headers)

    def check(self, headers: Mapping[str, str]) -> None:
        auth.check_version(headers)


class AnthropicDialect:
    name = NAME
    capabilities = frozenset({Capability.LIST_PAGING, Capability.CANCEL, Capability.RESULTS,
                              Capability.DEAD_LETTER, Capability.DELETE})
    auth: KeyScheme = AnthropicKey()
    prefixes: tuple[str, ...] = (BATCHES,)
    max_body_mb: int | None = parse.MAX_BODY_MB  # Anthropic's, within `max_parsing_mb`
    max_rows: int = MAX_REQUESTS
    job_shape = MessageBatch
    error_shape = AnthropicErrorResponse
    webhook_shape = None  # Anthropic's API has no webhook
    line_shape = MessageBatchIndividualResponse
    paging = Paging(after="after_id", before="before_id", default=20, most=1000)

    def routes(self) -> Sequence[Route]:
        version, one = (VERSION,), (JOB_ID, VERSION)
        return [
            Route("POST", BATCHES, Action.SUBMIT, Operation(
                "createMessageBatch", "Create a Message Batch", "Message Batches",
                answer=Union[MessageBatch, BatchEstimate],  # noqa: UP007
                body=MessageBatchCreateParams,
                params=(*version, DRY_RUN, IDEMPOTENCY_KEY),
                errors=(400, 404, 413, 429, 503, 507))),
            Route("GET", BATCHES, Action.LIST, Operation(
                "listMessageBatches", "List Message Batches, newest first", "Message Batches",
                answer=MessageBatchPage, errors=(400, 404), params=(
                    Param("limit", "query", Annotated[int, Meta(ge=1, le=self.paging.most)],
                          default=self.paging.default),
                    Param("after_id", "query", str, "The page after this batch (older)."),
                    Param("before_id", "query", str, "The page before this batch (newer)."),
                    VERSION))),
            Route("GET", ONE, Action.GET, Operation(
                "getMessageBatch", "A Message Batch", "Message Batches", answer=MessageBatch,
                errors=(400, 404), params=one)),
            Route("POST", ONE + "/cancel", Action.CANCEL, Operation(
                "cancelMessageBatch", "Cancel a Message Batch", "Message Batches",
                answer=MessageBatch, errors=(400, 404, 503, 507), params=one)),
            Route("GET", ONE + "/results", Action.RESULTS, Operation(
                "getMessageBatchResults", "An ended batch's results", "Message Batches",
                answer=Media("application/x-jsonl", MessageBatchIndividualResponse,
                             description="A line per request, in input order."),
                errors=(400, 404), params=one)),
            Route("DELETE", ONE, Action.DELETE, Operation(
                "deleteMessageBatch", "Delete an ended Message Batch", "Message Batches",
                answer=DeletedMessageBatch, errors=(400, 404, 503, 507), params=one)),
        ]

    def error_body(self, error: RelayError, status: int) -> AnthropicErrorResponse:
        return errors.error_response(error, status=status)

    def error_status(self, status: int) -> int:
        return _STATUSES.get(status, status)

    def recognises(self, body: Any) -> bool:
        return isinstance(body, dict)  # its path is its own: every body is its

    def submit(self, intake: Intake, workspace: WorkspaceRecord, body: Any) -> Job:
        """Parse, check, store: the batch and all its rows in one transaction."""
        models = {m.alias for m in intake.config.models}
        submission = parse.parse_create(body, models=models,
                                        max_requests=row_cap(self, intake.config.limits))
        draft = parse.job_draft(submission, job_id=self.new_id(), workspace_id=workspace.id,
                                dialect=NAME, now=intake.clock(),
                                completion_window_s=intake.config.gateway.completion_window_s)
        check_budget(intake.repo, workspace.id, submission.rows, prices=input_prices(intake),
                     model=None, discount=STANDARD_DISCOUNT, now=draft.created_at,
                     param="requests")
        return intake.repo.create_job(draft, submission.rows)

    def propose(self, intake: Intake, workspace: WorkspaceRecord, body: Any) -> Proposed:
        """Rows that would fail on the way in are problems, and are not estimated."""
        try:
            submission = parse.parse_create(body, models={m.alias for m in intake.config.models})
        except InvalidRequest as exc:
            return Proposed(rows=[], problems=[exc])
        return Proposed(rows=[(r.model or submission.model, r.body) for r in submission.rows
                              if r.error is None],
                        discount=STANDARD_DISCOUNT, problems=row_problems(submission.rows))

    def new_id(self) -> str:
        return ids.batch_id()

    def render(self, job: Job, *, origin: str = "") -> MessageBatch:
        return render.message_batch(job, base_url=origin, completion_window_s=0)

    def render_list(self, jobs: Sequence[Job], *, has_more: bool,
                    origin: str) -> MessageBatchPage:
        return render.page(jobs, has_more=has_more, base_url=origin, completion_window_s=0)

    def result_line(self, job: Job, row: RowRecord) -> MessageBatchIndividualResponse:
        return render.result_line(job, row)

    def deleted(self, job: Job) -> DeletedMessageBatch:
        return render.deleted(job)

    def status_name(self, status: str) -> str:
        return render.VIEW.name(status)

    def statuses_for(self, name: str) -> tuple[str, ...] | None:
        return render.VIEW.statuses_for(name)

    def unrun_error(self, ending: str) -> tuple[str, str]:
        return render.unrun_error(ending)

    def discount(self, job: Job) -> Decimal:
        return STANDARD_DISCOUNT  # the batch rate, as for OpenAI's standard tier

    def admission_problem(self, job: Job, models: frozenset[str]) -> str | None:
        return None  # each request names its model; a missing one fails that request

    def parse_input(self, job: Job, data: Any, *, models: Collection[str],
                    check_url: CheckUrl, workflows: bool, max_rows: int,
                    earlier: Earlier) -> RecordStream:
        raise NotImplementedError("a Message Batch is checked whole at create")

    def webhook_payload(self, job: Job) -> Mapping[str, Any]:
        raise Conflict("Anthropic's Message Batches API has no webhook.")

    def result_lines(self, job: Job, row: RowRecord) -> tuple[str, Mapping[str, Any]]:
        name: Literal["output", "errors"] = ("output" if row.status == "completed"
                                             else "errors")
        return name, render.result_line(job, row)

    def redrive(self, intake: Intake, job: Job, rows: Sequence[RowRecord], *,
                now: float) -> Redrive:
        """A re-drive is a new Message Batch, with its own window."""
        return Redrive(expires_at=now + intake.config.gateway.completion_window_s)
