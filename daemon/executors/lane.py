"""What the rows of one running job share on the I/O loop."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from daemon.domain.jobs import RowWork
from daemon.domain.outcome import RowOutcome

T = TypeVar("T")
STOPPED = "stopped"  # the job was cancelled or expired before the row could go on
LEASE_LOST = "lease_lost"  # another node may run the row now: this node drops it


class Halted(Exception):
    """The row's job is being stopped (cancel, expiry): the row goes no further and
    reads as the rows that never ran do (`STOPPED`), with what it did so far."""


class LeaseLost(Exception):
    """This node's lease on a row may have been taken over (it was frozen, or cut off
    from the database, for longer than its lease): the row must not go on here. The
    worker hands it back unstored (`lease_lost`); its new owner's outcome wins."""


class Paused(Exception):
    """The row's job was paused (by an operator or its budget) before this call went
    out: the row goes no further here and stays pending, resuming where it stood
    (a tool loop from its stored rounds) when the job runs again."""


class Lane:
    """A job's `batch_concurrency` request slots, and whether it is being stopped.

    `stop` is called from the supervisor's thread before it answers a cancel, so no
    request starts after that answer; `halt` (on the I/O loop) also wakes what waits."""

    def __init__(self, slots: int, *,
                 holds: Callable[[RowWork], bool] = lambda work: True) -> None:
        self.size = slots
        self.slots = asyncio.Semaphore(slots)
        self.holds = holds  # whether this node surely still holds a row's lease
        self.stopping = False
        self.draining = False
        self.pausing = False
        self.halted = asyncio.Event()

    @property
    def waiting(self) -> int:
        """Calls waiting for one of the slots (asyncio keeps its waiters unnamed)."""
        return len(self.slots._waiters or ())

    def stop(self) -> None:
        self.stopping = True

    def drain(self) -> None:
        """Shutdown (from the supervisor's thread): no request starts from now on. Unlike
        a cancel, the row that would send one is not ended: it stays pending, to run at
        the next start (rows wait here beyond the slots, so without this a freed slot
        would start a paid call that the stopping loop then cuts off)."""
        self.draining = True

    def pause(self) -> None:
        """The job is paused (from the supervisor's thread): no request starts from now
        on; a row that would send one is handed back unstored (`Paused`), to run when
        the job resumes. Requests on the wire finish."""
        self.pausing = True

    def going(self, work: RowWork) -> None:
        """Called with a slot held, before a request of `work` goes out: raise
        CancelledError while draining (the worker leaves a cancelled row pending),
        `Paused` once the job is paused, and `LeaseLost` as `fence` does."""
        if self.draining:
            raise asyncio.CancelledError("relayd is stopping")
        if self.pausing:
            raise Paused(f"row {work.id}: its job is paused")
        self.fence(work)

    def fencer(self, work: RowWork) -> Callable[[], None]:
        """`fence(work)`, for a call made further down (the router's tries, a
        callback's deliveries): each runs it last before it goes out."""
        return lambda: self.fence(work)

    def guard(self, work: RowWork) -> Callable[[], None]:
        """What a tool executor runs once its host slot is taken, before each call goes
        out: `Halted` once the job is being stopped (no call starts after a cancel is
        answered, however many wait for a slot), else `fence`."""
        def check() -> None:
            if self.stopping:
                raise Halted(f"row {work.id}: its job is being stopped")
            self.fence(work)

        return check

    def fence(self, work: RowWork) -> None:
        """Called before each call of `work` (a request, a tool executor or workflow
        callback call): raise `LeaseLost` once this node may have lost the row's lease,
        so no row starts, and no loop goes on, under a lease another node may hold."""
        if not self.holds(work):
            raise LeaseLost(f"row {work.id}: this node's lease on it may have lapsed")

    async def halt(self) -> None:
        self.stopping = True
        self.halted.set()

    async def until_halted(self, work: Awaitable[T]) -> T | None:
        """`work`'s result, or None if the job is halted first (`work` is then cancelled)."""
        task = asyncio.ensure_future(work)
        halted = asyncio.ensure_future(self.halted.wait())
        try:
            await asyncio.wait({task, halted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            halted.cancel()
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        return task.result() if not task.cancelled() else None


def lease_lost(exc: LeaseLost) -> RowOutcome:
    """A row this node gave up (`LeaseLost`): never stored, whatever it did."""
    return RowOutcome(ok=False, error=str(exc), error_code=LEASE_LOST)


PAUSED = "paused"  # the job was paused before the row could go on: it stays pending


def held_back(exc: Paused) -> RowOutcome:
    """A row its paused job handed back before it sent anything more: never stored."""
    return RowOutcome(ok=False, error=str(exc), error_code=PAUSED)


def not_started() -> RowOutcome:
    """A row whose job was stopped while it waited for a slot: it never went out."""
    return RowOutcome(ok=False, error="stopped before it was sent", error_code=STOPPED)
