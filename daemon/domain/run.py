"""The bookkeeping of one running job, without threads: what to load, dispatch, flush.

The JobSupervisor actor owns a `JobRun` and does exactly what it says: load more
rows when `wants_rows`, hand out `take_dispatch()`, store `take_flush(now)`,
finish when `done`. Every rule about a running job lives here and is tested
by calling these methods with a hand-stepped clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from daemon.domain.jobs import RowWork
from daemon.domain.outcome import RowOutcome

FLUSH_ROWS = 256  # outcomes grouped into one transaction
FLUSH_SECONDS = 1.0  # an outcome waits at most this long before it is stored
LOAD_ROWS = 500  # rows read from the store at a time


@dataclass
class JobRun:
    concurrency: int
    started_at: float
    flush_rows: int = FLUSH_ROWS
    flush_seconds: float = FLUSH_SECONDS
    load_rows: int = LOAD_ROWS
    cursor: int = 0  # highest row id loaded so far
    exhausted: bool = False  # the store has no pending rows past `cursor`
    stopping: bool = False  # cancel or shutdown: dispatch nothing more
    queue: deque[RowWork] = field(default_factory=deque)
    in_flight: set[int] = field(default_factory=set)
    holding: set[int] = field(default_factory=set)  # in flight and holding a slot
    buffer: list[tuple[int, RowOutcome]] = field(default_factory=list)
    last_flush: float = 0.0

    def __post_init__(self) -> None:
        self.last_flush = self.started_at

    @property
    def wants_rows(self) -> bool:
        return not self.exhausted and not self.stopping and len(self.queue) < self.concurrency

    def add_rows(self, rows: Sequence[RowWork]) -> None:
        """Rows read from the store; fewer than asked for means none are left."""
        self.queue.extend(rows)
        if rows:
            self.cursor = rows[-1].id
        if len(rows) < self.load_rows:
            self.exhausted = True

    def take_dispatch(self) -> list[RowWork]:
        """Rows to start now, in input order, keeping at most `concurrency` of those that
        hold a slot in flight (a workflow record holds none: its requests take the
        job's request slots only while they run)."""
        if self.stopping:
            return []
        batch: list[RowWork] = []
        while self.queue and (not self.queue[0].holds_slot
                              or len(self.holding) < self.concurrency):
            work = self.queue.popleft()
            batch.append(work)
            if work.holds_slot:
                self.holding.add(work.id)
        self.in_flight.update(r.id for r in batch)
        return batch

    def record(self, row_id: int, outcome: RowOutcome) -> bool:
        """A worker finished a row; False if the row was not in flight (ignored)."""
        if row_id not in self.in_flight:
            return False
        self.in_flight.discard(row_id)
        self.holding.discard(row_id)
        self.buffer.append((row_id, outcome))
        return True

    def should_flush(self, now: float) -> bool:
        if not self.buffer:
            return False
        return (len(self.buffer) >= self.flush_rows
                or now - self.last_flush >= self.flush_seconds
                or self.done_dispatching)

    def take_flush(self, now: float) -> list[tuple[int, RowOutcome]]:
        batch, self.buffer = self.buffer, []
        self.last_flush = now
        return batch

    def stop(self) -> None:
        """Dispatch nothing more; rows still queued stay pending in the store."""
        self.stopping = True
        self.queue.clear()

    @property
    def done_dispatching(self) -> bool:
        """Nothing left to start and nothing in flight."""
        idle = not self.in_flight
        return idle and (self.stopping or (self.exhausted and not self.queue))

    @property
    def done(self) -> bool:
        """Every row this run will handle has its outcome stored."""
        return self.done_dispatching and not self.buffer
