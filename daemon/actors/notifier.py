"""Notifier: tells the outside world what happened to jobs.

Live events go to the in-process event hub (which feeds `GET /v1/events`);
completion webhooks go out on a small thread pool so a slow receiver never
holds up events or rows. Progress events are coalesced: at most one per job
every `min_interval` seconds, the last one always sent.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pykka

from daemon.actors.contained import contained
from daemon.actors.proxies import ActorProxyOf, message
from daemon.dialects import event_view
from daemon.domain.jobs import Job
from daemon.store.faults import log_failure
from daemon.store.interface import Store

log = logging.getLogger("relay.notifier")

Publish = Callable[[int, str, dict[str, Any]], None]  # (workspace_id, event type, data)
Deliver = Callable[[Job, str, float], dict[str, Any]]  # (job, secret, now) -> outcome
Broadcast = Callable[[Job, str], None]  # (job, event type)
SAVE_WAITS_S = (0.5, 1.0, 2.0, 4.0) + (5.0,) * 10  # between tries to store an outcome
PROGRESS_S = 0.25  # at most one progress event a job this often


class Notifier(pykka.ThreadingActor):
    def __init__(self, *, repo: Store, publish: Publish, deliver: Deliver,
                 clock: Callable[[], float], min_interval: float = PROGRESS_S,
                 broadcast: Broadcast = lambda job, event: None,
                 node: str | None = None) -> None:
        super().__init__()
        self.repo = repo
        self.publish = publish
        self.broadcast = broadcast  # to the other nodes' streams (store/bus.py)
        self.node = node  # who claims webhooks here
        self.deliver = deliver
        self.clock = clock
        self.min_interval = min_interval
        self.last_sent: dict[int, float] = {}
        self.dirty: set[int] = set()
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="relay-webhook")
        self.save_waits: tuple[float, ...] = SAVE_WAITS_S
        self.stopping = threading.Event()

    def on_stop(self) -> None:
        self.stopping.set()  # an outcome still being retried gives up: the next start
        self.pool.shutdown(wait=True, cancel_futures=False)  # records it as interrupted

    @contained
    def job_created(self, job: Job) -> None:
        self._publish(job, "job.created")

    @contained
    def job_changed(self, seq: int) -> None:
        """A status change that is not an end (queued, running, cancelling)."""
        self._send_progress(seq, self.clock())

    @contained
    def job_paused(self, job: Job) -> None:
        """Paused (its `paused` says why): recorded in the store already."""
        self._publish(job, "job.paused")

    @contained
    def job_resumed(self, job: Job) -> None:
        """No longer paused for the reason it was (it may be for the other)."""
        self._publish(job, "job.resumed")

    @contained
    def progress(self, seq: int) -> None:
        now = self.clock()
        if now - self.last_sent.get(seq, 0.0) >= self.min_interval:
            self._send_progress(seq, now)
        else:
            self.dirty.add(seq)

    @contained
    def tick(self, now: float) -> None:
        for seq in list(self.dirty):
            if now - self.last_sent.get(seq, 0.0) >= self.min_interval:
                self._send_progress(seq, now)

    @contained
    def job_ended(self, job: Job) -> None:
        self.dirty.discard(job.seq)
        self.last_sent.pop(job.seq, None)
        self._publish(job, "job.ended")
        self.send_webhook(job)

    @contained
    def send_webhook(self, job: Job) -> None:
        if job.webhook_url:
            self.pool.submit(self._webhook, job)

    def _send_progress(self, seq: int, now: float) -> None:
        self.dirty.discard(seq)
        self.last_sent[seq] = now
        job = self.repo.job_by_seq(seq)
        if job is not None and not job.terminal:
            self._publish(job, "job.progress")

    def _publish(self, job: Job, event: str) -> None:
        self.publish(job.workspace_id, event, event_view(job))
        self.broadcast(job, event)

    def _webhook(self, job: Job) -> None:
        """Deliver at most once: claim the delivery in the store before sending. A claim
        the store refuses leaves the webhook queued, and the scheduler's watchdog sends
        it again; an outcome the store refuses is kept trying for about a minute."""
        try:
            if not self.repo.claim_webhook(job.seq, now=self.clock(), node=self.node):
                return
            secret = self.repo.webhook_secret(job.workspace_id)
            outcome = self.deliver(job, secret, self.clock())
        except Exception as exc:
            log_failure(log, f"webhook of job {job.id} failed", exc)
            return
        self._save(job, outcome)

    def _save(self, job: Job, outcome: dict[str, Any]) -> None:
        for wait in (*self.save_waits, None):
            try:
                self.repo.save_webhook(job.seq, outcome)
                return
            except Exception as exc:
                log_failure(log, f"storing the webhook outcome of job {job.id} failed", exc)
                if wait is None or self.stopping.wait(wait):  # the next start records
                    return  # it as interrupted


class NotifierProxy(ActorProxyOf[Notifier]):
    """What the API and the other actors tell the notifier."""

    job_created = message(Notifier.job_created)
    job_changed = message(Notifier.job_changed)
    job_paused = message(Notifier.job_paused)
    job_resumed = message(Notifier.job_resumed)
    progress = message(Notifier.progress)
    job_ended = message(Notifier.job_ended)
    send_webhook = message(Notifier.send_webhook)
    tick = message(Notifier.tick)
