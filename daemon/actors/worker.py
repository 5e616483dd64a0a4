"""RowWorker: runs its job's rows through their executors and reports their outcomes.

One message carries a group of rows (whatever the supervisor may start now). Each
row's whole life (retries, backoff, fallbacks, later tool rounds) is one coroutine,
on the shared I/O loop, of the executor chosen for it, so rows in flight cost no
thread each; outcomes that finish together go back to the supervisor as one message.
A worker never dies of a row: anything unexpected becomes that row's error. Rows
cut off by shutdown are not reported and stay pending in the store, to run after
the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import pykka

from daemon.domain.jobs import RowWork
from daemon.domain.outcome import RowOutcome
from daemon.executors import Executors, Lane
from daemon.upstream.ioloop import IOLoop

log = logging.getLogger("relay.worker")

Done = list[tuple[int, RowOutcome]]


class RowWorker(pykka.ThreadingActor):
    def __init__(self, *, job_seq: int, executors: Executors, io_loop: IOLoop,
                 supervisor: Any, lane: Lane) -> None:
        super().__init__()
        self.job_seq = job_seq
        self.executors = executors
        self.io_loop = io_loop
        self.rows = RowRunner(executors, lane, report=self._report(supervisor))

    def run_rows(self, works: Sequence[RowWork]) -> None:
        try:
            self.io_loop.submit(self.rows.start(list(works)))
        except RuntimeError:
            log.debug("I/O loop stopping: %d rows stay pending", len(works))

    def on_stop(self) -> None:
        """The job has ended here: its executors drop what they kept for it."""
        with contextlib.suppress(RuntimeError):  # stopping: its cleanup closes all
            self.io_loop.submit(self.executors.release(self.job_seq))

    @staticmethod
    def _report(supervisor: Any) -> Any:
        def report(done: Done) -> None:
            try:
                supervisor.rows_done(done)
            except pykka.ActorDeadError:
                log.debug("supervisor already stopped; %d outcomes dropped", len(done))

        return report


class RowRunner:
    """The I/O-loop side of a worker: one task per row, outcomes batched per loop turn.
    Everything here runs on the I/O loop's thread."""

    def __init__(self, executors: Executors, lane: Lane, *, report: Any) -> None:
        self.executors = executors
        self.lane = lane
        self.report = report
        self.tasks: set[asyncio.Task[None]] = set()
        self.outbox: Done = []

    async def start(self, works: list[RowWork]) -> None:
        for work in works:
            task = asyncio.create_task(self._run(work))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _run(self, work: RowWork) -> None:
        try:
            outcome = await self.executors.for_row(work).run(work, self.lane)
        except asyncio.CancelledError:
            return  # shutdown: the row stays pending
        except Exception as exc:
            log.exception("row %s: unexpected error", work.id)
            outcome = internal_error(exc)
        self._deliver(work.id, outcome)

    def _deliver(self, row_id: int, outcome: RowOutcome) -> None:
        self.outbox.append((row_id, outcome))
        if len(self.outbox) == 1:  # the first of this loop turn: send them all at its end
            asyncio.get_running_loop().call_soon(self._send)

    def _send(self) -> None:
        done, self.outbox = self.outbox, []
        self.report(done)


def internal_error(exc: BaseException) -> RowOutcome:
    return RowOutcome(ok=False, error=f"internal_error: {type(exc).__name__}: {exc}",
                      error_code="internal_error")
