"""The Relay Batches API: `{model, requests: [{custom_id?, messages}], priority, cron,
webhookUrl}`, checked whole at submit; its job view, six status names and
`{custom_id, content | error}` results. Cron templates belong to this dialect, and
Relay's own routes (results, the dead letter, rows, workflows) speak its shapes for
every dialect's jobs."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any, Union

from daemon.dialects.base import (
    IDEMPOTENCY_KEY,
    Bearer,
    Capability,
    Intake,
    KeyScheme,
    Proposed,
    Redrive,
    openai_error,
    row_cap,
)
from daemon.dialects.estimate_shapes import BatchEstimate
from daemon.dialects.openai.shapes import Error
from daemon.dialects.relay import render
from daemon.dialects.relay.shapes import RelayJob, RelaySubmit, WebhookSummary
from daemon.dialects.spending import check_budget, input_prices
from daemon.domain import cron, deadline, ids
from daemon.domain.errors import InvalidRequest, RelayError
from daemon.domain.jobs import (
    CANCELLED,
    EXPIRED,
    QUEUED,
    ROW_COMPLETED,
    SCHEDULED,
    Job,
    JobDraft,
    RowRecord,
)
from daemon.domain.openai_input import CHAT, CheckUrl, Earlier, RecordStream
from daemon.domain.relay_input import MAX_ROWS, Submission, parse_submission
from daemon.domain.routes import DRY_RUN, Action, Operation, Param, Route
from daemon.outbound.policy import TargetCheck
from daemon.store.interface import WorkspaceRecord

NAME = "relay"


BATCHES = "/v1/batches"
ONE = BATCHES + "/{job_id}"
JOB_ID = Param("job_id", "path", str, "A job id: Relay's (32 hex), OpenAI's (batch_…) or "
                                      "Anthropic's (msgbatch_…).")


class RelayDialect:
    name = NAME
    auth: KeyScheme = Bearer()
    prefixes: tuple[str, ...] = ()  # its paths are Relay's own
    max_body_mb: int | None = None
    max_rows: int = MAX_ROWS
    job_shape = RelayJob
    error_shape = Error
    webhook_shape = WebhookSummary
    capabilities = frozenset({Capability.LIST_PAGING, Capability.CANCEL, Capability.RESULTS,
                              Capability.DEAD_LETTER, Capability.WEBHOOKS, Capability.CRON})

    def routes(self) -> Sequence[Route]:
        """`/v1/batches`, which the OpenRelay batch API shares (a body is told apart by
        its keys, a job by its id)."""
        return [
            Route("POST", BATCHES, Action.SUBMIT, Operation(
                "createBatch", "Submit a batch in either dialect", "Batches",
                answer=Union[RelayJob, BatchEstimate],  # noqa: UP007
                answer_description="The new job, in its dialect's shape (with dry_run: its "
                                   "estimate, nothing created).",
                body=RelaySubmit, errors=(400, 404, 409, 413, 429, 503, 507),
                params=(DRY_RUN, IDEMPOTENCY_KEY),
                description="A body with endpoint, input_file_id or completion_window is "
                            "the OpenRelay batch API; any other is the Relay Batches API.")),
            Route("GET", ONE, Action.GET, Operation(
                "getBatch", "A job's status", "Batches", answer=RelayJob, errors=(401, 404),
                params=(JOB_ID,))),
            Route("POST", ONE + "/cancel", Action.CANCEL, Operation(
                "cancelBatch", "Cancel a scheduled, queued or running job", "Batches",
                answer=RelayJob, errors=(401, 404, 409, 503, 507), params=(JOB_ID,))),
        ]

    def error_body(self, error: RelayError, status: int) -> Mapping[str, Any]:
        return openai_error(error)

    def error_status(self, status: int) -> int:
        return status

    def recognises(self, body: Any) -> bool:
        return isinstance(body, dict)  # what is not another dialect's body is ours

    def submit(self, intake: Intake, workspace: WorkspaceRecord, body: Any) -> Job:
        """Parse, check, store: the job and all its rows in one transaction."""
        sub, now = self._parsed(intake, body), intake.clock()
        if not sub.cron:  # a template's runs are checked by nobody: each run is paused
            check_budget(intake.repo, workspace.id, sub.rows, prices=input_prices(intake),
                         model=sub.model, discount=Decimal(0), now=now, param="requests")
        drain_s, refused = _deadline_check(intake, workspace, sub, now=now)
        if refused is not None:
            raise refused
        draft = self._draft(sub, workspace, now=now)
        return intake.repo.create_job(replace(draft, deadline_drain_s=drain_s), sub.rows)

    def propose(self, intake: Intake, workspace: WorkspaceRecord, body: Any) -> Proposed:
        try:
            sub = self._parsed(intake, body)
        except InvalidRequest as exc:
            return Proposed(rows=[], problems=[exc])
        _, refused = _deadline_check(intake, workspace, sub, now=intake.clock())
        return Proposed(rows=[(sub.model, r.body) for r in sub.rows],
                        problems=[] if refused is None else [refused])

    def _parsed(self, intake: Intake, body: Any) -> Submission:
        now = intake.clock()
        return parse_submission(
            body, models={m.alias for m in intake.config.models}, now=now,
            check_cron=cron.check, max_rows=row_cap(self, intake.config.limits),
            check_url=TargetCheck(allow_private=intake.config.security.allow_private_targets,
                                  resolve=intake.resolve),
        )

    def _draft(self, sub: Submission, workspace: WorkspaceRecord, *, now: float) -> JobDraft:
        """A submission with `cron` is a template (its runs are drafted by the store)."""
        return JobDraft(
            id=self.new_id(), workspace_id=workspace.id, dialect=NAME, name=sub.name,
            model=sub.model, endpoint=CHAT, status=SCHEDULED if sub.cron else QUEUED,
            priority=sub.priority, created_at=now, webhook_url=sub.webhook_url, cron=sub.cron,
            next_run_at=cron.next_after(sub.cron, now) if sub.cron else None,
            deadline_at=sub.deadline_at,
        )

    def new_id(self) -> str:
        return ids.relay_job_id()

    def render(self, job: Job, *, origin: str = "") -> RelayJob:
        return render.relay_job(job)

    def status_name(self, status: str) -> str:
        """A Relay job's status as the Relay Batches API names it: one that expired
        passed its deadline and reads `completed` (`render.job_status`)."""
        return render.OWN_VIEW.name(status)

    def statuses_for(self, name: str) -> tuple[str, ...] | None:
        return render.OWN_VIEW.statuses_for(name)

    def unrun_error(self, ending: str) -> tuple[str, str]:
        if ending == EXPIRED:  # a Relay job has no completion window: its deadline passed
            return deadline.PASSED, deadline.PASSED_MESSAGE
        word = "canceled" if ending == CANCELLED else ending
        return word, word

    def discount(self, job: Job) -> Decimal:
        return Decimal(0)

    def admission_problem(self, job: Job, models: frozenset[str]) -> str | None:
        """Every row runs on the job's one model, so without it nothing can run."""
        return None if job.model in models else f"model '{job.model}' is no longer configured"

    def parse_input(self, job: Job, data: Any, *, models: Collection[str],
                    check_url: CheckUrl, workflows: bool, max_rows: int,
                    earlier: Earlier) -> RecordStream:
        raise NotImplementedError("a Relay job is checked whole at submit, never validating")

    def webhook_payload(self, job: Job) -> Mapping[str, Any]:
        return render.webhook_payload(job)

    def result_lines(self, job: Job, row: RowRecord) -> tuple[str, Mapping[str, Any]]:
        name = "output" if row.status == ROW_COMPLETED else "errors"
        return name, render.relay_result(row)

    def redrive(self, intake: Intake, job: Job, rows: Sequence[RowRecord], *,
                now: float) -> Redrive:
        return Redrive()  # a Relay job has no input file and no completion window


def _deadline_check(intake: Intake, workspace: WorkspaceRecord, sub: Submission, *,
                    now: float) -> tuple[float | None, InvalidRequest | None]:
    """A submission's running time by the estimate (None without a deadline), and the
    refusal of a strict deadline it misses."""
    if sub.deadline_at is None:
        return None, None
    drain_s = intake.estimate([(sub.model, r.body) for r in sub.rows],
                              workspace_id=workspace.id, discount=Decimal(0)).drain_s
    if sub.strict_deadline and deadline.at_risk(sub.deadline_at, drain_s=drain_s, now=now):
        return drain_s, deadline.refusal(sub.deadline_at, drain_s=drain_s, now=now)
    return drain_s, None
