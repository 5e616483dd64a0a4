"""JobSupervisor: one per job running on this node. Leases the job's rows a chunk at a
time and feeds them to its row worker, stores outcomes in groups, honours cancel and
shutdown, and when its share is done either ends the job or, if another live node is
still on it, leaves the ending to that node.

All decisions come from the job's `JobRun`; this actor loads, sends and saves.
Outcomes are written by group commit on the job's own writer thread: one write at a
time, each carrying everything that finished while the previous one committed, so
the actor keeps taking outcomes and cancels while a write is under way. The
notifier hears of the job's progress at most every `PROGRESS_S` (it would coalesce
more often ones anyway, and each message wakes its thread).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Protocol

import pykka

from daemon.actors.contained import contained
from daemon.actors.ending import end_job
from daemon.actors.health import Health
from daemon.actors.membership import Node
from daemon.actors.notifier import PROGRESS_S, NotifierProxy
from daemon.actors.proxies import ActorProxyOf, message
from daemon.actors.worker import Done, Report, RowWorker
from daemon.config import ModelConfig
from daemon.dialects import dialect_of
from daemon.domain.cluster import Share, lease_size
from daemon.domain.jobs import CANCELLED, COMPLETED, EXPIRED, Job, Status
from daemon.domain.outcome import RowOutcome, Usage
from daemon.domain.pricing import cost_nano_usd
from daemon.domain.run import GIVE_UP_S, JobRun
from daemon.domain.unstorable import save_apart
from daemon.domain.usage import priced
from daemon.executors import Executors
from daemon.executors.lane import LEASE_LOST, PAUSED, STOPPED, Lane
from daemon.logs import for_job
from daemon.store.faults import StoreError, log_failure
from daemon.store.files import FileStore
from daemon.store.interface import Store
from daemon.upstream.ioloop import IOLoop

log = logging.getLogger("relay.supervisor")

FINISH_RETRY_S = 2.0
LEASE_RETRY_S = 1.0  # after the store refused a lease


class Scheduling(Protocol):
    """What a supervisor tells the scheduler (a `SchedulerProxy` is one; that module
    imports this one)."""

    def job_finished(self, seq: int, supervisor: str) -> object: ...


class JobSupervisor(pykka.ThreadingActor):
    def __init__(
        self,
        job: Job,
        *,
        repo: Store,
        files: FileStore,
        executors: Executors,
        io_loop: IOLoop,
        scheduler: Scheduling,
        notifier: NotifierProxy,
        concurrency: int,
        models: Mapping[str, ModelConfig],
        clock: Callable[[], float],
        health: Health | None = None,
        node: Node | None = None,
    ) -> None:
        super().__init__()
        self.job = job
        self.log = for_job(log, job.id)  # its lines carry the job (`--log-format json`)
        self.node = node or Node()
        self.health = health or Health()
        self.repo = repo
        self.files = files
        self.executors = executors
        self.io_loop = io_loop
        self.scheduler = scheduler
        self.notifier = notifier
        self.models = models
        self.clock = clock
        slots = max(1, min(concurrency, job.total or 1))
        # Twice the slots handed ahead: a whole report group of rows still waits on the
        # I/O loop when that group's outcomes reach this thread, so the slots never
        # idle while the next rows come (with one group ahead, the queue ran dry at
        # each report: 12 % fewer rows/s, 10 % more CPU a row, measured side by side).
        self.run = JobRun(concurrency=slots, ahead=2 * slots, load_rows=lease_size(slots))
        self.worker: RowWorker | None = None  # from on_start on
        # Requests in flight, whatever the rows; and fencing: a row goes on only while
        # this node surely holds its lease.
        self.lane = Lane(max(1, concurrency), holds=self.node.holds)
        self.discount = dialect_of(job).discount(job)  # the tier's price, same for every row
        self.ending: Status = COMPLETED  # or CANCELLED / EXPIRED once asked to end early
        self.pausing = False  # paused: no row starts; once those in flight are stored, it leaves
        self.writer = ThreadPoolExecutor(1, thread_name_prefix=f"relay-store-{job.id}")
        self.write: Future[bool] | None = None  # the write under way
        self._me: SupervisorProxy | None = None
        self.finished = False
        self.finish_at = 0.0  # after an ending the store refused, the next try waits
        self.lease_at = 0.0  # after a lease the store refused, the next try waits
        self.forgot = False  # queued rows were dropped: their leases go back first
        self.epoch = self.node.epoch  # the node's lease epoch the queued rows were leased in
        self.progressed = False  # outcomes stored that the notifier has not heard of
        self.progress_at = float("-inf")  # when it last heard

    def on_start(self) -> None:
        self._me = me = SupervisorProxy.of(self.actor_ref)
        self.worker = RowWorker(job_seq=self.job.seq, executors=self.executors,
                                io_loop=self.io_loop, lane=self.lane,
                                report=_reporter(me), report_rows=self.run.flush_rows)
        self._pump()

    def on_stop(self) -> None:
        try:
            self._store_all(self.clock())
        finally:  # whatever the store did, the writer goes, and the worker's rows
            self.writer.shutdown(wait=False)
            if self.worker is not None:
                self.worker.release()

    @contained
    def rows_done(self, done: Sequence[tuple[int, RowOutcome]]) -> None:
        """Outcomes that finished together, in one message."""
        self._record(done)
        self._pump()

    def _record(self, done: Sequence[tuple[int, RowOutcome]]) -> None:
        now = self.clock()
        for row_id, outcome in done:
            if outcome.error_code in (LEASE_LOST, PAUSED):  # another node's now, or
                # leased again; or handed back by a pause, to run when the job resumes
                self.run.drop(row_id)
                self.forgot = True
                continue
            self.run.record(row_id, priced(self._settled(outcome), self._cost(outcome)),
                            now=now)

    @contained
    def tick(self, now: float) -> None:
        """The scheduler's timer: a write that failed is tried again once its backoff
        has passed; progress held back is told."""
        self._pump()
        self._progress(now)

    @contained
    def stored(self, write: Future[bool]) -> None:
        """The writer thread finished `write` (a stale one, already waited for, is
        ignored)."""
        if write is not self.write:
            return
        self.write = None
        ok, now = _succeeded(write), self.clock()
        self.run.stored(ok=ok, now=now)
        self.progressed |= ok
        self._pump()
        self._progress(now)

    @contained
    def cancel(self, ack: threading.Event | None = None) -> None:
        """Stop dispatching; rows in flight finish, the rest end as `canceled`. `ack`
        is set once no row will start."""
        try:
            self._end_early(CANCELLED)
        finally:
            if ack is not None:
                ack.set()

    @contained
    def pause(self, ack: threading.Event | None = None) -> None:
        """The job is paused (an operator, or its workspace's budget): no row starts from
        now on, rows in flight finish and are stored, then this node gives its share of
        the job back and its slot up without ending it (it stays running, paused, until
        it resumes and a free slot takes it again). A row of several calls stops between
        two of them and resumes where it stood. `ack` is set once no row will start."""
        try:
            if self.ending == COMPLETED and not self.pausing:
                self.pausing = True
                self.run.stop()
                self.lane.pause()  # before the pause is answered: no request starts after it
                self._pump()
        finally:
            if ack is not None:
                ack.set()

    @contained
    def expire(self) -> None:
        """The completion window closed: like cancel, ending `expired`."""
        self._end_early(EXPIRED)

    def _end_early(self, ending: Status) -> None:
        if self.ending == COMPLETED:
            self.ending = ending
        self.run.end_early(self.clock())
        self.lane.stop()  # before the cancel is answered: no request starts after it
        with contextlib.suppress(RuntimeError):  # the I/O loop is stopping
            self.io_loop.submit(self.lane.halt())
        self._pump()

    @contained
    def drain(self) -> None:
        """Shutdown: stop dispatching and store what finished; the job stays running
        in the store, so the next start requeues it and runs its pending rows."""
        self.run.stop()
        self.lane.drain()  # rows waiting for a slot start nothing more
        assert self.worker is not None
        self._record(self.worker.drain())  # finished, not yet reported
        self._store_all(self.clock())
        try:  # another node may take the rest at once; those in flight go with the node
            self.repo.release_rows(self.job.seq, node=self.node.id, keep=self.run.in_flight)
        except Exception as exc:
            self._failed(f"job {self.job.id}: giving its leases back failed; they lapse "
                         "with this node's heartbeat", exc, self.clock())

    def _pump(self) -> None:
        if self.finished:  # a message that was queued behind the ending
            return
        now = self.clock()
        holding = self.node.holds_leases(now)
        if not holding or self.node.epoch != self.epoch:  # others may have these rows
            self.run.forget_queue()
            self.forgot = True
            self.epoch = self.node.epoch
        if holding and self.run.wants_rows and now >= self.lease_at:
            self._lease(now)
        starting = self.run.take_dispatch()
        if starting:
            assert self.worker is not None
            self.worker.run_rows(starting)
        self._flush(now)
        self._give_up(now)
        if self.run.done and (self.ending != COMPLETED or not self.run.stopping
                              or self.pausing):
            self._finish(now)  # paused: it ends only if no row is left anywhere

    def _lease(self, now: float) -> None:
        try:
            if self.forgot:  # rows dropped (cut off, or handed back): anyone may take them
                self.repo.release_rows(self.job.seq, node=self.node.id, keep=self.run.held)
                self.forgot = False
            epoch = self.node.epoch  # read first: a lapse during the lease fences them
            rows = self.repo.lease_rows(self.job, node=self.node.id, limit=self.run.load_rows,
                                        alive_after=self.node.alive_after(now), epoch=epoch)
        except Exception as exc:
            self.lease_at = now + LEASE_RETRY_S
            self._failed(f"job {self.job.id}: leasing rows failed; will try again", exc, now)
            return
        self.run.add_rows(rows)

    def _give_up(self, now: float) -> None:
        """A job ended early does not wait on a store that keeps refusing its outcomes:
        after `GIVE_UP_S` they are dropped, and the ending marks their rows as never
        run (canceled or expired, unbilled)."""
        dropped = self.run.give_up(now)
        if dropped:
            self.log.warning("job %s: %d outcomes could not be stored in the %.0f s after "
                             "it was %s; dropped, their rows end as never run",
                             self.job.id, len(dropped), GIVE_UP_S, self.ending)

    def _flush(self, now: float) -> None:
        """Start the next group's write on the writer thread; `stored` hears of its end."""
        if not self.run.should_flush(now):
            return
        outcomes = self.run.take_flush()  # read here: `run` is this thread's alone
        self.write = self.writer.submit(self._save, outcomes, self.run.leases(outcomes), now)
        self.write.add_done_callback(self._tell_stored)

    def _tell_stored(self, write: Future[bool]) -> None:
        assert self._me is not None
        with contextlib.suppress(pykka.ActorDeadError):
            self._me.stored.defer(write)

    def _progress(self, now: float, *, force: bool = False) -> None:
        """Tell the notifier of outcomes stored, unless it heard less than `PROGRESS_S`
        ago (a later tick or write tells it then)."""
        if self.progressed and (force or now - self.progress_at >= PROGRESS_S):
            self.progressed, self.progress_at = False, now
            with contextlib.suppress(pykka.ActorDeadError):  # the notifier stops first
                self.notifier.progress.defer(self.job.seq)

    def _save(self, outcomes: list[tuple[int, RowOutcome]], leases: Mapping[int, int],
              now: float) -> bool:
        """Runs on the writer thread. An outcome the store refuses for a reason other
        than a storage fault fails its own row (`save_apart`); a storage fault keeps the
        whole group for the next try."""
        fenced = 0  # each outcome is stored under the lease its row ran with

        def write(group: Sequence[tuple[int, RowOutcome]]) -> None:
            nonlocal fenced
            fenced += self.repo.save_outcomes(self.job.seq, group, now=now,
                                              leases=leases).fenced

        try:
            refused = save_apart(outcomes, write,
                                 is_fault=lambda error: isinstance(error, StoreError))
        except Exception as exc:
            self._failed(f"job {self.job.id}: storing {len(outcomes)} outcomes failed; "
                         "kept, will retry", exc, now)
            return False
        for row_id, why in refused:
            self.log.error("job %s: the store refused the outcome of row %d; stored as "
                           "failed (internal_error)", self.job.id, row_id, exc_info=why)
        if fenced:
            self.log.warning("job %s: %d outcomes not stored: another node leased those "
                             "rows while this one was silent past its lease (its outcomes "
                             "win)", self.job.id, fenced)
        return True

    def _failed(self, what: str, exc: Exception, now: float) -> None:
        fault = log_failure(self.log, what, exc)
        if fault is not None:
            self.health.record(fault, now=now)

    def _store_all(self, now: float) -> None:
        """Shutdown: wait for the write under way, then store what is left, here."""
        if self.write is not None:
            write, self.write = self.write, None
            self.run.stored(ok=_succeeded(write), now=now)
        while self.run.buffer:
            outcomes = self.run.take_flush()
            ok = self._save(outcomes, self.run.leases(outcomes), now)
            self.run.stored(ok=ok, now=now)
            if not ok:
                return

    def _settled(self, outcome: RowOutcome) -> RowOutcome:
        """A row stopped between two calls by the job's ending reads as the rows that
        never ran do, with what it did so far."""
        if outcome.error_code != STOPPED:
            return outcome
        code, message = dialect_of(self.job).unrun_error(self.ending)
        if not outcome.attempts:  # it never went out: exactly like the rows never started
            return replace(outcome, error_code=code, error=message, never_ran=True)
        return replace(outcome, error_code=code, error=f"{message} ({outcome.error})")

    def _cost(self, outcome: RowOutcome) -> int:
        """Every model call of the row, each at its own model's price."""
        return sum(self._call_cost(alias, usage) for alias, usage in outcome.model_calls)

    def _call_cost(self, alias: str, usage: Usage) -> int:
        model = self.models.get(alias)
        if model is None or not (model.input_usd_per_mtok or model.output_usd_per_mtok):
            return 0  # an unpriced model's rows cost nothing
        return cost_nano_usd(usage, input_usd_per_mtok=model.input_usd_per_mtok,
                             output_usd_per_mtok=model.output_usd_per_mtok,
                             discount=self.discount)

    def _finish(self, now: float) -> None:
        """This node's share is done: its leases go back, and the job ends here unless
        another live node is still on it (that node ends it), or, finishing normally,
        rows are left that no node holds (a node that stopped gave them back: a free
        slot, here or elsewhere, takes them). A cancel recorded meanwhile makes the
        ending `cancelled` (see `ending_for`). An ending the store cannot take (no room
        for the result files, say) is tried again on a later tick; until then the job
        stays running, with this supervisor."""
        if now < self.finish_at:
            return
        finishing = self.ending == COMPLETED
        try:
            self.node.settle(self.job.seq)  # no heartbeat lists it again meanwhile
            share = self.repo.settle_share(self.job.seq, node=self.node.id,
                                           alive_after=self.node.alive_after(now),
                                           finishing=finishing)
            if share is Share.HELD or (share is Share.OPEN and finishing):
                self._leave()
                return
            self.node.unsettle(self.job.seq)  # it ends the job: listed until it has
            job = end_job(self.repo, self.files, self.job.seq, self.ending, now=now)
            if job is None:  # a cancel recorded in between: end it again, as cancelled
                job = end_job(self.repo, self.files, self.job.seq, self.ending, now=now)
        except Exception as exc:
            self.node.unsettle(self.job.seq)  # still here: listed, and not taken as left
            self.finish_at = now + FINISH_RETRY_S
            self._failed(f"job {self.job.id}: ending it failed; will try again", exc, now)
            return
        if job is not None:
            self.progressed = False  # its end says more
            self.notifier.job_ended(job)
        self._leave()

    def _leave(self) -> None:
        self._progress(self.clock(), force=True)  # paused, or another node ends it
        self.finished = True
        self.scheduler.job_finished(self.job.seq, self.actor_ref.actor_urn)
        self.stop()


class SupervisorProxy(ActorProxyOf[JobSupervisor]):
    """What the scheduler, the job's row worker and its writer thread tell a supervisor."""

    rows_done = message(JobSupervisor.rows_done)
    tick = message(JobSupervisor.tick)
    stored = message(JobSupervisor.stored)
    cancel = message(JobSupervisor.cancel)
    pause = message(JobSupervisor.pause)
    expire = message(JobSupervisor.expire)
    drain = message(JobSupervisor.drain)


def _reporter(me: SupervisorProxy) -> Report:
    """What the worker calls on the I/O loop with each group of outcomes: a tell."""
    def report(done: Done) -> None:
        try:
            me.rows_done.defer(done)
        except pykka.ActorDeadError:
            log.debug("supervisor already stopped; %d outcomes dropped", len(done))

    return report


def _succeeded(write: Future[bool]) -> bool:
    """Whether a write committed; one that raised counts as failed (trying it again is
    safe: outcomes already stored are skipped)."""
    return write.exception() is None and write.result()
