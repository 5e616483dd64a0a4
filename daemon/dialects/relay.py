"""The Relay Batches API: `{model, requests: [{custom_id?, messages}], priority, cron,
webhookUrl}`, checked whole at submit; seed 000's job view, six status names and
`{custom_id, content | error}` results. Cron templates belong to this dialect."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from daemon.dialects.base import Intake, Redrive
from daemon.domain import cron, ids, render
from daemon.domain.jobs import CANCELLED, QUEUED, ROW_COMPLETED, SCHEDULED, Job, JobDraft, RowRecord
from daemon.domain.openai_input import CHAT
from daemon.domain.relay_input import Submission, parse_submission
from daemon.outbound.policy import TargetCheck
from daemon.store.interface import WorkspaceRecord

NAME = "relay"


class RelayDialect:
    name = NAME
    writes_result_files = False  # results are read from the rows (`GET .../results`)

    def recognises(self, body: Any) -> bool:
        return isinstance(body, dict)  # what is not another dialect's body is ours

    def submit(self, intake: Intake, workspace: WorkspaceRecord, body: Any) -> Job:
        """Parse, check, store: the job and all its rows in one transaction."""
        now = intake.clock()
        sub = parse_submission(
            body, models={m.alias for m in intake.config.models}, now=now,
            check_cron=cron.check,
            check_url=TargetCheck(allow_private=intake.config.security.allow_private_targets,
                                  resolve=intake.resolve),
        )
        return intake.repo.create_job(self._draft(sub, workspace, now=now), sub.rows)

    def _draft(self, sub: Submission, workspace: WorkspaceRecord, *, now: float) -> JobDraft:
        """A submission with `cron` is a template (its runs are drafted by the store)."""
        return JobDraft(
            id=self.new_id(), workspace_id=workspace.id, dialect=NAME, name=sub.name,
            model=sub.model, endpoint=CHAT, status=SCHEDULED if sub.cron else QUEUED,
            priority=sub.priority, created_at=now, webhook_url=sub.webhook_url, cron=sub.cron,
            next_run_at=cron.next_after(sub.cron, now) if sub.cron else None,
        )

    def new_id(self) -> str:
        return ids.relay_job_id()

    def render(self, job: Job) -> dict[str, Any]:
        return render.relay_job(job)

    def status_name(self, status: str) -> str:
        return render.RELAY_VIEW.name(status)

    def statuses_for(self, name: str) -> tuple[str, ...] | None:
        return render.RELAY_VIEW.statuses_for(name)

    def unrun_error(self, ending: str) -> tuple[str, str]:
        word = "canceled" if ending == CANCELLED else ending
        return word, word

    def discount(self, job: Job) -> Decimal:
        return Decimal(0)

    def admission_problem(self, job: Job, models: frozenset[str]) -> str | None:
        """Every row runs on the job's one model, so without it nothing can run."""
        return None if job.model in models else f"model '{job.model}' is no longer configured"

    def webhook_payload(self, job: Job) -> dict[str, Any]:
        return render.webhook_payload(job)

    def result_lines(self, job: Job, row: RowRecord) -> tuple[str, dict[str, Any]]:
        name = "output" if row.status == ROW_COMPLETED else "errors"
        return name, render.relay_result(row)

    def redrive(self, intake: Intake, job: Job, rows: Sequence[RowRecord], *,
                now: float) -> Redrive:
        return Redrive()  # a Relay job has no input file and no completion window
