"""RowWorker: runs its job's rows through their executors and reports their outcomes.

The supervisor hands its worker a group of rows (whatever it may start now). Each
row's whole life (retries, backoff, fallbacks, later tool rounds) is one coroutine,
on the shared I/O loop, of the executor chosen for it, so rows in flight cost no
thread each. The supervisor hands over more rows than the job has request slots;
those wait for a slot on the loop, so a freed slot is taken at once. Outcomes go
back to the supervisor in groups, one message each: once `report_rows` have
finished, or `REPORT_S` after the first, or when no other row is running (each
message to another thread costs a wake-up and a hand-over of the interpreter lock,
a good part of a row's cost when rows are quick).

The worker is no thread of its own: the supervisor calls it, and it hands the rows
straight to the I/O loop (one wake-up a group, where an actor between the two cost
another).
A worker never dies of a row: anything unexpected becomes that row's error. Rows
cut off by shutdown are not reported and stay pending in the store, to run after
the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import CancelledError
from typing import Any

from daemon.domain.jobs import CHAT_ROW, RowWork
from daemon.domain.outcome import RowOutcome
from daemon.domain.unstorable import INTERNAL
from daemon.executors import Executors, Lane
from daemon.executors.lane import LeaseLost, Paused, held_back, lease_lost
from daemon.upstream.ioloop import IOLoop

log = logging.getLogger("relay.worker")

Done = list[tuple[int, RowOutcome]]
Report = Callable[[Done], None]  # sends a group of outcomes to the supervisor
REPORT_S = 0.01  # the longest an outcome waits on the I/O loop for company
DRAIN_S = 1.0  # the longest a shutdown waits for the I/O loop to hand them back


class RowWorker:
    """The supervisor's side of its job's rows on the I/O loop; called from the
    supervisor's thread only. `report` runs on the I/O loop, with each group of
    outcomes."""

    def __init__(self, *, job_seq: int, executors: Executors, io_loop: IOLoop,
                 report: Report, lane: Lane, report_rows: int = 1) -> None:
        self.job_seq = job_seq
        self.executors = executors
        self.io_loop = io_loop
        self.rows = RowRunner(executors, lane, report=report, report_rows=report_rows)

    def run_rows(self, works: Sequence[RowWork]) -> None:
        try:
            self.io_loop.submit(self.rows.start(list(works)))
        except RuntimeError:
            log.debug("I/O loop stopping: %d rows stay pending", len(works))

    def drain(self) -> Done:
        """Shutdown: the outcomes still waiting to be reported, handed back now (and
        every later one reported at once), so the supervisor stores them before it
        stops and they do not run again at the next start."""
        try:
            handed = self.io_loop.submit(self.rows.drain())
        except RuntimeError:  # the I/O loop is stopping
            return []
        try:
            return handed.result(timeout=DRAIN_S)
        except (TimeoutError, CancelledError):  # stuck, or stopped meanwhile
            handed.cancel()  # not to empty the outbox into a future nobody reads
            return []

    def release(self) -> None:
        """The job has ended here: its executors drop what they kept for it."""
        with contextlib.suppress(RuntimeError):  # stopping: its cleanup closes all
            self.io_loop.submit(self.executors.release(self.job_seq))


class RowRunner:
    """The I/O-loop side of a worker: rows run, outcomes sent in groups. Everything
    here runs on the I/O loop's thread.

    A plain row holds one of the job's request slots for its whole run (`ChatExecutor`),
    so plain rows are run by at most one task a slot, each taking the next row from
    `queue` as soon as its row ends: the rows handed over ahead of the slots wait
    there, and a row costs no task of its own. Every other row (tool loops, checked
    answers, workflows) holds a slot only while it calls, so it gets a task of its
    own, as many as the supervisor hands over."""

    def __init__(self, executors: Executors, lane: Lane, *, report: Report,
                 report_rows: int = 1, report_s: float = REPORT_S) -> None:
        self.executors = executors
        self.lane = lane
        self.report = report
        self.report_rows = max(1, report_rows)
        self.report_s = report_s
        self.tasks: set[asyncio.Task[None]] = set()
        self.queue: deque[RowWork] = deque()  # plain rows waiting for a slot's task
        self.takers = 0  # tasks taking plain rows from `queue`
        self.outbox: Done = []
        self.running = 0  # rows started and not yet delivered
        self.timer: asyncio.Handle | None = None  # the next send, if one is due
        self.soon = False  # the next send is at the end of this loop turn

    async def start(self, works: list[RowWork]) -> None:
        self.running += len(works)
        for work in works:
            if work.kind == CHAT_ROW:
                self.queue.append(work)
            else:
                self._spawn(self._run(work))
        while self.takers < min(self.lane.size, len(self.queue)):
            self.takers += 1
            self._spawn(self._take_rows())

    @property
    def waiting(self) -> int:
        """Rows handed over that wait for a request slot: plain rows in the queue,
        the others at the lane."""
        return len(self.queue) + self.lane.waiting

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _take_rows(self) -> None:
        """One slot's task: the queued plain rows, one after another, until none is
        left or the task is cancelled (shutdown: the rest stay pending)."""
        me = asyncio.current_task()
        try:
            while self.queue and not (me is not None and me.cancelling()):
                await self._run(self.queue.popleft())
        finally:
            self.takers -= 1

    async def _run(self, work: RowWork) -> None:
        try:
            outcome = await self.executors.for_row(work).run(work, self.lane)
        except asyncio.CancelledError:
            self.running -= 1
            return  # shutdown: the row stays pending
        except LeaseLost as exc:  # another node may run it now: handed back, unstored
            outcome = lease_lost(exc)
        except Paused as exc:  # its job was paused: handed back, unstored, still pending
            outcome = held_back(exc)
        except Exception as exc:
            log.exception("row %s: unexpected error", work.id)
            outcome = internal_error(exc)
        self._deliver(work.id, outcome)

    def _deliver(self, row_id: int, outcome: RowOutcome) -> None:
        self.outbox.append((row_id, outcome))
        self.running -= 1
        urgent = len(self.outbox) >= self.report_rows or not self.running
        if self.timer is not None and (self.soon or not urgent):
            return  # a send is due already
        if self.timer is not None:
            self.timer.cancel()
        loop = asyncio.get_running_loop()
        # Urgent: at the end of this loop turn, with whatever else finishes in it.
        self.timer = loop.call_soon(self._send) if urgent else loop.call_later(
            self.report_s, self._send)
        self.soon = urgent

    async def drain(self) -> Done:
        """Shutdown: hand back what waits to be reported; report the rest at once."""
        self.report_rows = 1
        if self.timer is not None:
            self.timer.cancel()
        return self._take()

    def _send(self) -> None:
        if done := self._take():
            self.report(done)

    def _take(self) -> Done:
        """The outbox, emptied, with no send due any more."""
        done, self.outbox, self.timer, self.soon = self.outbox, [], None, False
        return done


def internal_error(exc: BaseException) -> RowOutcome:
    return RowOutcome(ok=False, error=f"{INTERNAL}: {type(exc).__name__}: {exc}",
                      error_code=INTERNAL)
