"""Webhook delivery bookkeeping: claimed before sending, so a delivery happens at most
once even across a crash."""

from __future__ import annotations

import json
from typing import Any

from peewee import SqliteDatabase

from daemon.domain.jobs import (
    TERMINAL,
    Job,
)
from daemon.store.models import JobModel
from daemon.store.records import (
    job_record,
)


class WebhookQueries:
    """Queries over webhook deliveries."""

    db: SqliteDatabase

    def claim_webhook(self, seq: int, *, now: float) -> bool:
        """Mark a job's webhook as being sent; False if it was claimed already."""
        claim = json.dumps({"state": "sending", "claimed_at": now})
        with self.db.atomic("IMMEDIATE"):
            return (JobModel.update(webhook=claim)
                    .where(JobModel.seq == seq, JobModel.webhook.is_null()).execute()) == 1

    def save_webhook(self, seq: int, outcome: dict[str, Any]) -> None:
        with self.db.atomic("IMMEDIATE"):
            JobModel.update(webhook=json.dumps(outcome)).where(JobModel.seq == seq).execute()

    def unsent_webhooks(self) -> list[Job]:
        """Ended jobs whose webhook was never claimed (the process stopped first)."""
        query = JobModel.select().where(JobModel.status.in_(list(TERMINAL)),
                                        JobModel.webhook_url.is_null(False),
                                        JobModel.webhook.is_null())
        return [job_record(r) for r in query]

    def abandon_claimed_webhooks(self, *, now: float) -> int:
        """A claim that never got its outcome: the process died mid-delivery. Record that
        rather than send again, so a receiver never sees one run twice."""
        outcome = json.dumps({"status_code": None, "attempted_at": None,
                              "error": "delivery interrupted by a daemon restart; not retried"})
        with self.db.atomic("IMMEDIATE"):
            return (JobModel.update(webhook=outcome)
                    .where(JobModel.webhook.contains('"state": "sending"')).execute())
