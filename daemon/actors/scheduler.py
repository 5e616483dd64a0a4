"""Scheduler: decides which job runs next and keeps `max_running_jobs` slots busy.

Queued jobs are admitted expedited tier first (ahead of anything waiting), then
highest priority, then oldest. A running job is never preempted. Cron templates spawn
their runs on `tick(now)`, which a small timer calls; tests call it by hand.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any

import pykka

from daemon.actors.contained import contained
from daemon.actors.finalize import finalize
from daemon.domain import cron, ids
from daemon.domain.jobs import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    EXPIRED,
    FINALIZING,
    QUEUED,
    RELAY,
    RUNNING,
    Job,
)
from daemon.store.files import FileStore
from daemon.store.repo import Repo

log = logging.getLogger("relay.scheduler")

SupervisorFactory = Callable[[Job, Any], Any]  # (job, scheduler proxy) -> supervisor proxy


class Scheduler(pykka.ThreadingActor):
    def __init__(
        self,
        *,
        repo: Repo,
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
        self.draining = False

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
            self._end(job, CANCELLED, now=now)
        for job in self.repo.jobs_in(FINALIZING):
            self._end(job, COMPLETED, now=now)
        self.repo.abandon_claimed_webhooks(now=now)
        for job in self.repo.unsent_webhooks():
            self.notifier.send_webhook(job)

    @contained
    def wake(self) -> None:
        """Something was queued or a slot freed: fill the free slots."""
        self._admit()

    @contained
    def job_finished(self, seq: int) -> None:
        self.running.pop(seq, None)
        self._admit()

    @contained
    def cancel(self, seq: int) -> Any:
        """Tell a running job's supervisor to stop (returns its future: the caller may
        wait until dispatching has stopped); a job not running here ends now (None)."""
        supervisor = self.running.get(seq)
        if supervisor is not None:
            return supervisor.cancel()
        job = self.repo.job_by_seq(seq)  # never started, or finished meanwhile
        if job is not None:
            self._end(job, CANCELLED, now=self.clock())
        return None

    @contained
    def tick(self, now: float) -> None:
        """Timer: spawn due cron runs, restart dead supervisors, let supervisors flush."""
        if not self.draining:
            for run in spawn_due_runs(self.repo, now):
                self.notifier.job_created(run)
            self._expire(now)
        for seq, supervisor in list(self.running.items()):
            if supervisor.actor_ref.is_alive():
                supervisor.tick(now)
            else:
                self._revive(seq)
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
            if job.dialect == RELAY and job.model not in self.models:
                self._fail(job, f"model '{job.model}' is no longer configured", now=now)
                continue
            started = self.repo.transition(job.seq, source={QUEUED}, target=RUNNING, now=now,
                                           started_at=job.started_at or now)
            if started is not None:
                self.running[started.seq] = self.start_supervisor(started, self._me)
                self.notifier.job_changed(started.seq)

    def _expire(self, now: float) -> None:
        """Batches past their completion window end `expired`."""
        for job in self.repo.expired_jobs(now):
            supervisor = self.running.get(job.seq)
            if supervisor is not None:
                supervisor.expire()
            else:
                self._end(job, EXPIRED, now=now)

    def _end(self, job: Job, target: str, *, now: float) -> None:
        ended = finalize(self.repo, self.files, job, target=target, now=now)
        if ended is not None:
            self.notifier.job_ended(ended)

    def _fail(self, job: Job, error: str, *, now: float) -> None:
        """The job cannot run at all: it fails as a whole, its rows untouched."""
        failed = self.repo.fail_job(job.seq, error=error, now=now)
        if failed is not None:
            self.notifier.job_ended(failed)

    def _revive(self, seq: int) -> None:
        """A supervisor is gone. If it finished, its `job_finished` is on its way; if it
        died (a bug), its job runs again from the queue, or ends if it was cancelling."""
        self.running.pop(seq, None)
        job = self.repo.job_by_seq(seq)
        if job is None or job.terminal:
            return
        log.error("supervisor of job %s died; %s", job.id,
                  "ending the cancel" if job.status == CANCELLING else "requeueing the job")
        if job.status == CANCELLING:
            self._end(job, CANCELLED, now=self.clock())
        else:
            self.repo.transition(seq, source={RUNNING, FINALIZING}, target=QUEUED,
                                 now=self.clock())


def spawn_due_runs(repo: Repo, now: float) -> list[Job]:
    """One queued run for every template whose tick is due; missed ticks collapse."""
    runs = []
    for template in repo.due_templates(now):
        assert template.cron is not None and template.next_run_at is not None
        due = cron.due_tick(template.cron, next_run_at=template.next_run_at, now=now)
        if due is None:
            continue
        tick, following = due
        run = repo.spawn_run(template, tick=tick, next_run_at=following,
                             run_id=ids.relay_job_id(), now=now)
        if run is not None:
            runs.append(run)
    return runs
