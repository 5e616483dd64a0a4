"""Scheduler: decides which job runs next and keeps `max_running_jobs` slots busy.

Queued jobs are admitted expedited tier first (ahead of anything waiting), then
highest priority, then oldest. A running job is never preempted. Cron templates spawn
their runs on `tick(now)`, which a small timer calls; tests call it by hand.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from typing import Any

import pykka

from daemon.actors.contained import attempt, contained
from daemon.actors.ending import end_job
from daemon.dialects import dialect_of
from daemon.domain import cron
from daemon.domain.every import Every
from daemon.domain.jobs import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    EXPIRED,
    FAILED,
    FINALIZING,
    QUEUED,
    RUNNING,
    Job,
)
from daemon.store.files import FileStore
from daemon.store.interface import Store

log = logging.getLogger("relay.scheduler")

SupervisorFactory = Callable[[Job, Any], Any]  # (job, scheduler proxy) -> supervisor proxy
WATCH_S = 5.0  # how often the watchdog looks for running jobs that nothing here runs


class Scheduler(pykka.ThreadingActor):
    def __init__(
        self,
        *,
        repo: Store,
        files: FileStore,
        slots: int,
        start_supervisor: SupervisorFactory,
        notifier: Any,
        clock: Callable[[], float],
        models: Collection[str] = (),
    ) -> None:
        super().__init__()
        self.models = frozenset(models)
        self.files = files
        self.repo = repo
        self.slots = slots
        self.start_supervisor = start_supervisor
        self.notifier = notifier
        self.clock = clock
        self.running: dict[int, Any] = {}
        self.acks: dict[int, list[threading.Event]] = {}  # cancels forwarded to supervisors
        self.draining = False
        self.watchdog = Every(WATCH_S)

    def on_start(self) -> None:
        self._me = self.actor_ref.proxy()
        self._recover(self.clock())
        self.tick(self.clock())

    def _recover(self, now: float) -> None:
        """What a previous process left behind: running jobs go back to the queue,
        cancels and finalizing in progress end, webhooks never sent are sent (at most
        once). Batches left validating are the validator's (see `Daemon.start`)."""
        self.repo.requeue_running(now=now)
        for job in self.repo.jobs_in(CANCELLING):
            self._end(job.seq, CANCELLED)
        for job in self.repo.jobs_in(FINALIZING):
            self._end(job.seq, COMPLETED)
        self.repo.abandon_claimed_webhooks(now=now)
        for job in self.repo.unsent_webhooks():
            self.notifier.send_webhook(job)

    @contained
    def wake(self) -> None:
        """Something was queued or a slot freed: fill the free slots."""
        self._admit()

    @contained
    def job_finished(self, seq: int) -> None:
        """A supervisor ended its job and stopped. A cancel forwarded to it as it stopped
        may never have been read: end what is still cancelling, and answer its waiters."""
        self.running.pop(seq, None)
        job = self.repo.job_by_seq(seq)
        if job is not None and job.status == CANCELLING:
            self._end(seq, CANCELLED)
        for ack in self.acks.pop(seq, []):
            ack.set()
        self._admit()

    @contained
    def cancel(self, seq: int, ack: threading.Event) -> None:
        """The API has recorded a cancel: a running job's supervisor stops dispatching
        and ends it; any other job ends here. `ack` is set once no row of it will start."""
        supervisor = self.running.get(seq)
        try:
            if supervisor is not None and supervisor.actor_ref.is_alive():
                self.acks.setdefault(seq, []).append(ack)
                supervisor.cancel(ack)
                return
        except pykka.ActorDeadError:
            pass  # died meanwhile: end the job here
        try:
            self._end(seq, CANCELLED)
        finally:
            ack.set()

    @contained
    def tick(self, now: float) -> None:
        """Timer: spawn due cron runs, restart dead supervisors, re-admit orphaned jobs,
        let supervisors retry a failed write. Each step is contained on its own, so a
        store that fails one of them does not stop the others."""
        if not self.draining:
            attempt(self._spawn, now)
            attempt(self._expire, now)
        for seq, supervisor in list(self.running.items()):
            if supervisor.actor_ref.is_alive():
                supervisor.tick(now)
            else:
                attempt(self._revive, seq)
        if not self.draining and self.watchdog.due(now):
            attempt(self._watch, now)
        self._admit()

    @contained
    def drain(self) -> list[Any]:
        """Shutdown: admit nothing more; ask every supervisor to stop dispatching."""
        self.draining = True
        return [s.drain() for s in self.running.values() if s.actor_ref.is_alive()]

    def _admit(self) -> None:
        free = self.slots - len(self.running)
        if self.draining or free <= 0:
            return
        now = self.clock()
        for job in self.repo.queued_jobs(free):
            problem = dialect_of(job).admission_problem(job, self.models)
            if problem is not None:  # it cannot run at all: it fails whole, rows untouched
                self._end(job.seq, FAILED, error=problem)
                continue
            started = self.repo.transition(job.seq, RUNNING, now=now,
                                           started_at=job.started_at or now)
            if started is not None:
                self.running[started.seq] = self.start_supervisor(started, self._me)
                self.notifier.job_changed(started.seq)

    def _spawn(self, now: float) -> None:
        for run in spawn_due_runs(self.repo, now):
            self.notifier.job_created(run)

    def _watch(self, now: float) -> None:
        """The watchdog: a job the store says is running, cancelling or finalizing but no
        supervisor here owns (its supervisor died while the store could not take the
        requeue, or a cancel's ending failed, say) is handled as at start after a
        crash: requeued, or ended as it was ending. A webhook still queued is sent (its
        claim in the store keeps it to at most once)."""
        for status, action in ((RUNNING, "requeued"), (CANCELLING, "cancelled"),
                               (FINALIZING, "completed")):
            for job in self.repo.jobs_in(status):
                if job.seq in self.running:
                    continue
                log.warning("job %s was %s with no supervisor: %s", job.id, status, action)
                if status == RUNNING:
                    self.repo.transition(job.seq, QUEUED, now=now)
                else:
                    self._end(job.seq, CANCELLED if status == CANCELLING else COMPLETED)
        for job in self.repo.unsent_webhooks():  # e.g. a claim the store refused
            self.notifier.send_webhook(job)

    def _expire(self, now: float) -> None:
        """Batches past their completion window end `expired`."""
        for job in self.repo.expired_jobs(now):
            supervisor = self.running.get(job.seq)
            if supervisor is not None:
                supervisor.expire()
            else:
                self._end(job.seq, EXPIRED)

    def _end(self, seq: int, wanted: str, *, error: str | None = None) -> None:
        ended = end_job(self.repo, self.files, seq, wanted, now=self.clock(), error=error)
        if ended is not None:
            self.notifier.job_ended(ended)

    def _revive(self, seq: int) -> None:
        """A supervisor is gone. If it finished, its `job_finished` is on its way; if it
        died (a bug), its job runs again from the queue, or, if it was being cancelled
        or finalized, ends as it would have."""
        self.running.pop(seq, None)
        for ack in self.acks.pop(seq, []):  # after this, nothing of the job runs here
            ack.set()
        job = self.repo.job_by_seq(seq)
        if job is None or job.terminal:
            return
        log.error("supervisor of job %s died while %s", job.id, job.status)
        if job.status == RUNNING:
            self.repo.transition(seq, QUEUED, now=self.clock())
        else:
            self._end(seq, CANCELLED if job.status == CANCELLING else COMPLETED)


def spawn_due_runs(repo: Store, now: float) -> list[Job]:
    """One queued run for every template whose tick is due; missed ticks collapse."""
    runs = []
    for template in repo.due_templates(now):
        assert template.cron is not None and template.next_run_at is not None
        due = cron.due_tick(template.cron, next_run_at=template.next_run_at, now=now)
        if due is None:
            continue
        tick, following = due
        run = repo.spawn_run(template, tick=tick, next_run_at=following,
                             run_id=dialect_of(template).new_id(), now=now)
        if run is not None:
            runs.append(run)
    return runs
