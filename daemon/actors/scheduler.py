"""Scheduler: decides which job runs next on this node and keeps its
`max_running_jobs` slots busy.

A free slot takes the next job in the cluster's one order (the expedited tier ahead of
anything waiting, then highest priority, then the earliest deadline, then oldest): a
queued job, which it starts, or a running one with rows no live node holds, which it
joins (a large job spreads over every node; a lost node's rows are taken over). A
running job is never preempted. Cron templates spawn their runs on `tick(now)`, which a
small timer calls; tests call it by hand.

Several nodes may run one job; each of them gives its share back when done
(`Store.settle_share`), and the one that finds nobody else on it ends it. A job that
another live node runs is never ended here (`_end_unless_held`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection

import pykka

from daemon.actors.contained import attempt, contained
from daemon.actors.ending import end_job
from daemon.actors.membership import Node
from daemon.actors.notifier import NotifierProxy
from daemon.actors.proxies import ActorProxyOf, message
from daemon.actors.supervisor import Scheduling, SupervisorProxy
from daemon.dialects import dialect_of
from daemon.domain import cron
from daemon.domain.cluster import Share, alive_ids
from daemon.domain.every import Every
from daemon.domain.jobs import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    EXPIRED,
    FAILED,
    FINALIZING,
    RUNNING,
    Job,
    Status,
)
from daemon.store.files import FileStore
from daemon.store.interface import Store

log = logging.getLogger("relay.scheduler")

# (job, the scheduler's proxy) -> the job's supervisor, started
SupervisorFactory = Callable[[Job, "SchedulerProxy"], SupervisorProxy]
WATCH_S = 5.0  # how often the watchdog looks for running jobs that nothing here runs


class Scheduler(pykka.ThreadingActor):
    def __init__(
        self,
        *,
        repo: Store,
        files: FileStore,
        slots: int,
        start_supervisor: SupervisorFactory,
        notifier: NotifierProxy,
        clock: Callable[[], float],
        models: Collection[str] = (),
        node: Node | None = None,
        tell_cancel: Callable[[int], None] = lambda seq: None,
    ) -> None:
        super().__init__()
        self.node = node or Node()
        self.tell_cancel = tell_cancel  # to the other nodes (PostgreSQL NOTIFY)
        self.models = frozenset(models)
        self.files = files
        self.repo = repo
        self.slots = slots
        self.start_supervisor = start_supervisor
        self.notifier = notifier
        self.clock = clock
        self.running: dict[int, SupervisorProxy] = {}
        self.acks: dict[int, list[threading.Event]] = {}  # cancels forwarded to supervisors
        self.draining = False
        self.recovered = False  # what a previous process left is dealt with (`_recover`)
        self.watchdog = Every(WATCH_S)
        self.orphans: set[int] = set()  # seen with nobody on them at the last watch
        self.cancels_told: set[int] = set()  # supervisors told of a cancel the store holds
        self.pauses_told: set[int] = set()  # supervisors told their job is paused
        self.exhausted: frozenset[int] = frozenset()  # workspaces whose budget is spent
        self.budget_watch = Every(WATCH_S)  # the budget pauses written again meanwhile

    def on_start(self) -> None:
        self._me = SchedulerProxy.of(self.actor_ref)
        self.tick(self.clock())  # recovers first: an exception here would kill the actor

    def _recover(self, now: float) -> None:
        """What a previous process left behind. Alone on the database, its running jobs
        go back to the queue; among nodes, they stay running for whoever takes their
        rows. Cancels and endings in progress that no live node holds end, webhooks a
        lost node was sending are recorded as interrupted, webhooks never sent are sent
        (at most once). Batches left validating are the validator's (`Daemon.start`). The
        first tick runs it, and each tick again until it has gone through: a store that
        fails it at start does not kill the actor."""
        if not self.node.shared:
            self.repo.requeue_running(now=now)
        if self.node.leads:
            for status in (CANCELLING, FINALIZING):
                for job in self.repo.jobs_in(status):
                    self._end_unless_held(job.seq, _ENDS[status])
        self.repo.abandon_claimed_webhooks(now=now, live=self._live(now))
        for job in self.repo.unsent_webhooks():
            self.notifier.send_webhook(job)
        self.recovered = True

    @contained
    def wake(self) -> None:
        """Something was queued or a slot freed: fill the free slots."""
        self._admit()

    @contained
    def job_finished(self, seq: int, supervisor: str) -> None:
        """A supervisor (its actor's urn) is done with its job and stopped. A cancel
        forwarded to it as it stopped may never have been read: end what is still
        cancelling, and answer its waiters. A tick may have found it stopped before this
        message came, forgotten it, and started another supervisor of the job: this one
        no longer speaks for the job here."""
        current = self.running.get(seq)
        if current is not None and current.actor_ref.actor_urn != supervisor:
            self._admit()
            return
        self._forget(seq)
        job = self.repo.job_by_seq(seq)
        if job is not None and job.status == CANCELLING:
            self._end_unless_held(seq, CANCELLED)
        for ack in self.acks.pop(seq, []):
            ack.set()
        self._admit()

    @contained
    def cancel(self, seq: int, ack: threading.Event, *, tell_others: bool = True) -> None:
        """A cancel is recorded: a running job's supervisor here stops dispatching and
        ends it (or leaves the ending to the last node on it); a job no node runs ends
        here. `ack` is set once no row of it will start on this node. The API's cancel
        is told to the other nodes; one they tell this node (`tell_others=False`) only
        stops the supervisor here."""
        if tell_others:
            self.tell_cancel(seq)
        supervisor = self.running.get(seq)
        try:
            if supervisor is not None and supervisor.actor_ref.is_alive():
                self.acks.setdefault(seq, []).append(ack)
                supervisor.cancel(ack)
                return
        except pykka.ActorDeadError:
            pass  # died meanwhile: end the job here
        try:
            if tell_others:
                self._end_unless_held(seq, CANCELLED)
        finally:
            ack.set()

    @contained
    def pause(self, seq: int, ack: threading.Event) -> None:
        """An operator paused a job (recorded in the store): its supervisor here stops
        starting rows; `ack` is set once none will start on this node. Other nodes see
        the pause in the store at their next tick (`_hold`)."""
        supervisor = self.running.get(seq)
        try:
            if supervisor is not None and supervisor.actor_ref.is_alive():
                self.pauses_told.add(seq)
                supervisor.pause(ack)
                return
        except pykka.ActorDeadError:
            pass
        ack.set()

    @contained
    def tick(self, now: float) -> None:
        """Timer: spawn due cron runs, restart dead supervisors, re-admit orphaned jobs,
        let supervisors retry a failed write. Each step is contained on its own, so a
        store that fails one of them does not stop the others."""
        if not self.recovered:  # a store that failed the recovery: again, before all else
            attempt(self._recover, now)
            if not self.recovered:
                return
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
        if not self.draining:
            attempt(self._hold, now)
        self._admit()

    @contained
    def drain(self) -> list[pykka.Future[None]]:
        """Shutdown: admit nothing more; ask every supervisor to stop dispatching."""
        self.draining = True
        return [s.drain() for s in self.running.values() if s.actor_ref.is_alive()]

    def _admit(self) -> None:
        free = self.slots - len(self.running)
        now = self.clock()
        if self.draining or free <= 0 or not self.node.ready(now):
            return
        for job in self.repo.joinable_jobs(free, exclude=self.running,
                                           alive_after=self.node.alive_after(now),
                                           held_workspaces=self.exhausted):
            if job.status == RUNNING:  # rows no live node holds: join it
                self._run(job)
                continue
            problem = dialect_of(job).admission_problem(job, self.models)
            if problem is not None:  # it cannot run at all: it fails whole, rows untouched
                self._end(job.seq, FAILED, error=problem)
                continue
            started = self.repo.transition(job.seq, RUNNING, now=now,
                                           started_at=job.started_at or now)
            if started is not None:  # else another node started it first
                self._run(started)
                self.notifier.job_changed(started.seq)

    def _run(self, job: Job) -> None:
        self.running[job.seq] = self.start_supervisor(job, self._me)
        self.node.running(self.running)

    def _forget(self, seq: int) -> None:
        self.running.pop(seq, None)
        self.cancels_told.discard(seq)
        self.pauses_told.discard(seq)
        self.node.running(self.running)

    def _spawn(self, now: float) -> None:
        for run in spawn_due_runs(self.repo, now):
            self.notifier.job_created(run)

    def _watch(self, now: float) -> None:
        """The watchdog. A cancel the store holds for a job running here reaches its
        supervisor (one told by another node may have been missed). A job the store
        says is running, cancelling or finalizing that no live node is on (its last
        node died before ending it, or a cancel's ending failed, say) ends as it was
        ending, by the leading node only; it must be seen so at two watches in a row, so
        a node that is ending it right now is not raced. Running ones with rows left
        need nothing: `_admit` takes them. Leases this node holds on jobs it does not
        run go back. A webhook a lost node was sending is recorded as interrupted; one
        still queued is sent (its claim keeps it to at most once)."""
        self.repo.release_strays(self.node.id, running=self.running)
        orphans = set()
        for status in (RUNNING, CANCELLING, FINALIZING):
            for job in self.repo.jobs_in(status):
                if job.seq in self.running:
                    if status == CANCELLING and job.seq not in self.cancels_told:
                        self.cancels_told.add(job.seq)
                        self.running[job.seq].cancel()
                    continue
                if not self.node.leads:  # endings of what nobody runs: the first node's
                    continue
                share = self.repo.job_share(job.seq, node=self.node.id,
                                            alive_after=self.node.alive_after(now))
                if share is Share.HELD or (status == RUNNING and share is Share.OPEN):
                    continue
                orphans.add(job.seq)
                if job.seq in self.orphans:
                    log.warning("job %s was %s with no node on it: ending it", job.id,
                                status, extra={"job": job.id})
                    self._end(job.seq, _ENDS[status])
        self.orphans = orphans
        self.repo.abandon_claimed_webhooks(now=now, live=self._live(now))  # a lost node's
        for job in self.repo.unsent_webhooks():  # e.g. a claim the store refused
            self.notifier.send_webhook(job)

    def _hold(self, now: float) -> None:
        """Budgets and pauses, at each tick. The spend of every workspace with a budget
        is read from the store (the whole cluster's); when the set of those that spent
        theirs changes (or every `WATCH_S`, for jobs created since), their jobs are
        marked paused by budget and those of the others unmarked, each change an event.
        A job running here that the store says is paused (here, by another node, or by
        its budget) has its supervisor told to pause. Spent workspaces' jobs take no
        free slot (`_admit`)."""
        exhausted = frozenset(s.workspace_id for s in self.repo.budget_states(now=now)
                              if s.exhausted)
        if self.budget_watch.due(now) or exhausted != self.exhausted:
            paused, resumed = self.repo.hold_for_budget(exhausted, now=now)
            for job in paused:
                self.notifier.job_paused(job)
            for job in resumed:
                self.notifier.job_resumed(job)
        self.exhausted = exhausted
        for seq in self.repo.paused_among(self.running) if self.running else ():
            supervisor = self.running.get(seq)
            if seq not in self.pauses_told and supervisor is not None:
                self.pauses_told.add(seq)
                supervisor.pause()

    def _expire(self, now: float) -> None:
        """Batches past their completion window end `expired`."""
        for job in self.repo.expired_jobs(now):
            supervisor = self.running.get(job.seq)
            if supervisor is not None:
                supervisor.expire()
            elif self.node.leads:  # one node ends what nobody runs (its result files)
                self._end_unless_held(job.seq, EXPIRED)

    def _live(self, now: float) -> list[str]:
        """The live nodes' ids, this one always among them."""
        return [self.node.id, *alive_ids(self.repo.nodes(), now, self.node.lease_s,
                                         but=self.node.id)]

    def _end_unless_held(self, seq: int, wanted: Status) -> None:
        """End a job no node here runs, unless another live node runs it: that node's
        supervisor ends it (told by the cancel, or seeing the window close itself)."""
        share = self.repo.job_share(seq, node=self.node.id,
                                    alive_after=self.node.alive_after(self.clock()))
        if share is not Share.HELD:
            self._end(seq, wanted)

    def _end(self, seq: int, wanted: Status, *, error: str | None = None) -> None:
        ended = end_job(self.repo, self.files, seq, wanted, now=self.clock(), error=error)
        if ended is not None:
            self.notifier.job_ended(ended)

    def _revive(self, seq: int) -> None:
        """A supervisor is gone. If it ended its job or left it (paused, or to another
        node), its `job_finished` is on its way; if it died (a bug), its leases go back
        and the job's rows are taken again (here or by another node), or, if it was
        being cancelled or finalized, it ends as it would have."""
        left = self.node.left(seq)  # read before `_forget`, which clears it
        self._forget(seq)
        for ack in self.acks.pop(seq, []):  # after this, nothing of the job runs here
            ack.set()
        job = self.repo.job_by_seq(seq)
        if left or job is None or job.terminal:
            return
        log.error("supervisor of job %s died while %s", job.id, job.status,
                  extra={"job": job.id})
        if job.status == RUNNING:
            self.repo.release_rows(seq, node=self.node.id)
        else:
            self._end_unless_held(seq, _ENDS[job.status])


class SchedulerProxy(ActorProxyOf[Scheduler]):
    """What the API, the validator, the supervisors and the daemon tell the scheduler."""

    wake = message(Scheduler.wake)
    job_finished = message(Scheduler.job_finished)
    cancel = message(Scheduler.cancel)
    pause = message(Scheduler.pause)
    tick = message(Scheduler.tick)
    drain = message(Scheduler.drain)


_hears_job_finished: type[Scheduling] = SchedulerProxy  # mypy: what a JobSupervisor is given


# How a job left in a state of ending ends when nobody is on it.
_ENDS: dict[str, Status] = {RUNNING: COMPLETED, CANCELLING: CANCELLED, FINALIZING: COMPLETED}


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
