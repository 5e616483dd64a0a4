"""Completion-webhook bookkeeping. `end_job` queues a delivery in the same transaction
that ends the job; the notifier claims it before sending and records the outcome,
so a delivery happens at most once, even across a crash."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from daemon.domain.jobs import Job
from daemon.store.records import job_record
from daemon.store.sql import SqlBase

WEBHOOK_QUEUED = "queued"  # the job ended; its webhook is due
WEBHOOK_SENDING = "sending"  # claimed by a notifier; the POST may be on the wire
WEBHOOK_DONE = "done"  # the outcome is stored in `webhook`


class WebhookQueries(SqlBase):
    """Queries over webhook deliveries."""

    def claim_webhook(self, seq: int, *, now: float, node: str | None = None) -> bool:
        """Mark a job's queued webhook as being sent by `node`; False if it is not queued
        (another node, or an earlier try, has it)."""
        with self.write():
            return (self.JobModel.update(webhook_state=WEBHOOK_SENDING, webhook_node=node)
                    .where(self.JobModel.seq == seq,
                           self.JobModel.webhook_state == WEBHOOK_QUEUED)
                    .execute()) == 1

    def save_webhook(self, seq: int, outcome: dict[str, Any]) -> None:
        with self.write():
            (self.JobModel.update(webhook=json.dumps(outcome), webhook_state=WEBHOOK_DONE)
             .where(self.JobModel.seq == seq).execute())

    def unsent_webhooks(self) -> list[Job]:
        """Ended jobs whose webhook was never claimed (the process stopped first)."""
        query = self.JobModel.select().where(self.JobModel.webhook_state == WEBHOOK_QUEUED)
        return [job_record(r) for r in query.order_by(self.JobModel.seq)]

    def abandon_claimed_webhooks(self, *, now: float,
                                 live: Collection[str] = ()) -> int:
        """A claim that never got its outcome because its node died mid-delivery (any
        node but the `live` ones). Record that rather than send again, so a receiver
        never sees one run twice."""
        outcome = json.dumps({"status_code": None, "attempted_at": None,
                              "error": "delivery interrupted by a daemon restart; not retried"})
        query = (self.JobModel.update(webhook=outcome, webhook_state=WEBHOOK_DONE)
                 .where(self.JobModel.webhook_state == WEBHOOK_SENDING))
        if live:
            query = query.where(self.JobModel.webhook_node.is_null()
                                | self.JobModel.webhook_node.not_in(list(live)))
        with self.write():
            return query.execute()
