"""The bookkeeping of one running job, without threads: what to load, dispatch, flush.

The JobSupervisor actor owns a `JobRun` and does exactly what it says: load more
rows when `wants_rows`, hand out `take_dispatch()`, store `take_flush()` and
report the write with `stored(ok, now)`, finish when `done`. Every rule about a
running job lives here and is tested by calling these methods with a hand-stepped
clock.

Outcomes are stored by group commit: one write at a time, each carrying everything
that finished meanwhile. A write starts once no write is under way and a group is
worth its fixed cost (its queries, its commit, its progress event): `flush_rows`
outcomes (the job's concurrency, at most `FLUSH_ROWS`), or the oldest has waited
`LINGER_S`, or nothing is left in flight to add to it. At full speed that turns
writes of a few rows into writes of dozens. A crash therefore re-runs only the rows
in flight, those in the one write under way, and those waiting for the next: about
twice the concurrency at most, or `LINGER_S` of a slow job's rows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from daemon.domain.jobs import RowWork
from daemon.domain.outcome import RowOutcome

GROUP_ROWS = 2048  # outcomes one transaction carries at most
LOAD_ROWS = 500  # rows leased from the store at a time, unless told
RETRY_BASE_S = 0.5  # a failed write is tried again after this, doubling each time
RETRY_CAP_S = 5.0  # so a job moves on within seconds of the store healing
FLUSH_ROWS = 64  # a group this size is written at once
LINGER_S = 0.1  # a smaller group waits at most this long (plus the scheduler's tick)
NO_LEASE = -1  # a lease token no row ever has
GIVE_UP_S = 5.0  # a job ended early waits this long for outcomes the store refuses


def write_retry_delay(failures: int) -> float:
    """How long a write the store refused `failures` times in a row waits before the
    next try (outcomes here; tool rounds and workflow states in `executors/store_calls.py`)."""
    return min(RETRY_CAP_S, RETRY_BASE_S * 2.0 ** (failures - 1))


@dataclass
class JobRun:
    concurrency: int
    ahead: int = 0  # rows handed out beyond `concurrency`, to wait for a request slot
    group_rows: int = GROUP_ROWS
    flush_rows: int = 0  # 0: the concurrency, at most FLUSH_ROWS
    load_rows: int = LOAD_ROWS  # rows leased from the store at a time
    exhausted: bool = False  # the store had no more rows to lease
    stopping: bool = False  # cancel or shutdown: dispatch nothing more
    queue: deque[RowWork] = field(default_factory=deque)
    in_flight: set[int] = field(default_factory=set)
    holding: set[int] = field(default_factory=set)  # in flight and holding a slot
    buffer: list[tuple[int, RowOutcome]] = field(default_factory=list)
    writing: list[tuple[int, RowOutcome]] = field(default_factory=list)  # the write under way
    write_failures: int = 0  # failed writes in a row
    retry_at: float = 0.0  # after a failed write, the next waits until then
    buffered_at: float = 0.0  # when the oldest outcome in `buffer` finished
    tokens: dict[int, int] = field(default_factory=dict)  # lease tokens of rows held
    ended_at: float | None = None  # when a cancel or the completion window stopped it

    def __post_init__(self) -> None:
        self.flush_rows = self.flush_rows or max(1, min(self.concurrency, FLUSH_ROWS))

    @property
    def wants_rows(self) -> bool:
        return not self.exhausted and not self.stopping and len(self.queue) < self.concurrency

    def add_rows(self, rows: Sequence[RowWork]) -> None:
        """Rows leased from the store; fewer than asked for means none are left."""
        self.queue.extend(rows)
        self.tokens.update((row.id, row.token) for row in rows)
        if len(rows) < self.load_rows:
            self.exhausted = True

    def take_dispatch(self) -> list[RowWork]:
        """Rows to start now, in input order, keeping at most `concurrency + ahead` of
        those that hold a slot in flight (a workflow record holds none: its requests
        take the job's request slots only while they run). The job's request slots
        (its `Lane`) keep `concurrency` on the wire; the `ahead` rows wait there for a
        slot, so a slot freed on the I/O loop is taken at once, with no round trip to
        the supervisor. Nothing starts while outcomes cannot be stored: no call is
        paid for whose result could not be kept, and the outcomes kept for the next
        write stay bounded by the rows in flight."""
        if self.stopping or self.write_failures:
            return []
        batch: list[RowWork] = []
        while self.queue and (not self.queue[0].holds_slot
                              or len(self.holding) < self.concurrency + self.ahead):
            work = self.queue.popleft()
            batch.append(work)
            if work.holds_slot:
                self.holding.add(work.id)
        self.in_flight.update(r.id for r in batch)
        return batch

    def record(self, row_id: int, outcome: RowOutcome, *, now: float) -> bool:
        """A worker finished a row at `now`; False if the row was not in flight (ignored)."""
        if row_id not in self.in_flight:
            return False
        self.in_flight.discard(row_id)
        self.holding.discard(row_id)
        if not self.buffer:
            self.buffered_at = now
        self.buffer.append((row_id, outcome))
        return True

    @property
    def held(self) -> set[int]:
        """The rows whose leases this run still needs: queued, in flight, or finished
        with their outcomes not yet stored (given back, another lease of them would
        fence off those outcomes and run the rows again)."""
        return (self.in_flight | {work.id for work in self.queue}
                | {rid for rid, _ in self.buffer} | {rid for rid, _ in self.writing})

    def drop(self, row_id: int) -> None:
        """A row in flight given up unstored (its lease may be another node's): it is
        leased again, by whichever node then can, and so are the rows after it."""
        self.in_flight.discard(row_id)
        self.holding.discard(row_id)
        self.tokens.pop(row_id, None)
        self.exhausted = False

    def leases(self, outcomes: Sequence[tuple[int, RowOutcome]]) -> dict[int, int]:
        """`{row id: lease token}` of the rows of a write: each outcome is stored only
        under the lease it ran with (fencing). A row with no token known is written
        under none (`NO_LEASE`): the store refuses it rather than trust it."""
        return {rid: self.tokens.get(rid, NO_LEASE) for rid, _ in outcomes}

    def should_flush(self, now: float) -> bool:
        """Something to store, no write under way, no failed write to wait out, and a
        group worth writing: big enough, old enough, or all there will be for now."""
        if not self.buffer or self.writing or now < self.retry_at:
            return False
        return (len(self.buffer) >= self.flush_rows or now - self.buffered_at >= LINGER_S
                or not self.in_flight or self.stopping)

    def take_flush(self) -> list[tuple[int, RowOutcome]]:
        """The next group to write, oldest first; it is under way until `stored`."""
        batch, self.buffer = self.buffer[:self.group_rows], self.buffer[self.group_rows:]
        self.writing = batch
        return batch

    def stored(self, *, ok: bool, now: float) -> None:
        """The write under way ended. A failed one goes back to the front of the
        buffer and the next write waits, with backoff."""
        batch, self.writing = self.writing, []
        if ok:
            self.write_failures, self.retry_at = 0, 0.0
            for rid, _ in batch:
                self.tokens.pop(rid, None)
            return
        self.buffer[:0] = batch
        self.write_failures += 1
        self.retry_at = now + write_retry_delay(self.write_failures)

    def forget_queue(self) -> None:
        """The leases on the queued rows may be lost (the node could not renew them):
        start none of them; lease again once it can."""
        for work in self.queue:
            self.tokens.pop(work.id, None)
        self.queue.clear()
        self.exhausted = False

    def stop(self) -> None:
        """Dispatch nothing more; rows still queued stay pending in the store."""
        self.stopping = True
        self.queue.clear()

    def end_early(self, now: float) -> None:
        """A cancel or the completion window: `stop`, and from `now` on wait at most
        `GIVE_UP_S` for outcomes the store keeps refusing (see `give_up`)."""
        self.stop()
        if self.ended_at is None:
            self.ended_at = now

    def give_up(self, now: float) -> list[tuple[int, RowOutcome]]:
        """The outcomes to drop: those of a job ended early `GIVE_UP_S` ago whose last
        write failed, so that the job ends although the store refuses them (the ending
        marks their rows as never run). None while a write is under way: it may yet
        store them."""
        if (self.ended_at is None or now < self.ended_at + GIVE_UP_S or self.writing
                or not self.write_failures):
            return []
        dropped, self.buffer = self.buffer, []
        return dropped

    @property
    def done_dispatching(self) -> bool:
        """Nothing left to start and nothing in flight."""
        idle = not self.in_flight
        return idle and (self.stopping or (self.exhausted and not self.queue))

    @property
    def done(self) -> bool:
        """Every row this run will handle has its outcome stored."""
        return self.done_dispatching and not self.buffer and not self.writing
