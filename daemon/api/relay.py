"""The Relay dialect's submit (seed 000): validate, store job and rows, wake the scheduler."""

from __future__ import annotations

from typing import Any

from daemon.api.context import Services
from daemon.domain import cron, ids
from daemon.domain.jobs import QUEUED, RELAY, SCHEDULED, Job
from daemon.domain.relay_input import CHAT, Submission, parse_submission
from daemon.outbound.policy import check_url
from daemon.store.repo import JobDraft, WorkspaceRecord


def submit(services: Services, workspace: WorkspaceRecord, body: Any) -> Job:
    """Blocking (runs in a worker thread): parse, check, store. Nothing is stored on a
    refusal; the job and all its rows are stored in one transaction otherwise."""
    now = services.clock()
    allow = services.config.security.allow_private_targets
    sub = parse_submission(
        body,
        models={m.alias for m in services.config.models},
        now=now,
        check_cron=cron.check,
        check_url=lambda url, param: check_url(url, param=param, allow_private=allow,
                                               resolve=services.resolve),
    )
    return services.repo.create_job(draft(sub, workspace, now=now), sub.rows)


def draft(sub: Submission, workspace: WorkspaceRecord, *, now: float) -> JobDraft:
    """A submission with `cron` is a template (its runs are drafted by the store)."""
    return JobDraft(
        id=ids.relay_job_id(),
        workspace_id=workspace.id,
        dialect=RELAY,
        name=sub.name,
        model=sub.model,
        endpoint=CHAT,
        status=SCHEDULED if sub.cron else QUEUED,
        priority=sub.priority,
        created_at=now,
        webhook_url=sub.webhook_url,
        cron=sub.cron,
        next_run_at=cron.next_after(sub.cron, now) if sub.cron else None,
    )

