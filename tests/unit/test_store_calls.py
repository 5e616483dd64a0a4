"""Store calls on the I/O loop (`StoreCalls`, and the `GroupCommit` writes of tool rounds
and workflow states built on it): a storage fault is waited out with the outcomes'
backoff and reported; any other error is raised to the row."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Mapping, Sequence

import pytest

from daemon.domain.jobs import RowWork
from daemon.domain.run import RETRY_CAP_S, write_retry_delay
from daemon.executors.group_commit import GroupCommit
from daemon.executors.store_calls import StoreCalls
from daemon.store.faults import SPACE, UNAVAILABLE, StorageFull, StoreError, StoreUnavailable

# as the store boundary raises them (store/faults.py)
FULL = StorageFull("database or disk is full")
ROLLBACK = StoreUnavailable("cannot rollback - no transaction is active")


class Recorded:
    def __init__(self) -> None:
        self.faults: list[tuple[StoreError | None, float]] = []

    def record(self, fault: StoreError | None, *, now: float) -> None:
        self.faults.append((fault, now))


class Flaky:
    """A store write that raises `errors` in turn, then stores what it is given."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.tries: list[list[int]] = []
        self.stored: list[int] = []

    def __call__(self, items: Sequence[int], *, leases: Mapping[int, int] = {}) -> list[int]:
        self.tries.append(list(items))
        if self.errors:
            raise self.errors.pop(0)
        self.stored.extend(items)
        return []  # no row's lease was lost


def row(row_id: int) -> RowWork:
    return RowWork(id=row_id, job_seq=1, custom_id=f"r{row_id}", model="m",
                   endpoint="/v1/chat/completions", body={"messages": []}, token=1)


def patient(health: Recorded | None = None) -> tuple[StoreCalls, list[float]]:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    return StoreCalls(health=health, sleep=sleep, clock=lambda: 100.0), slept


def test_the_backoff_doubles_up_to_its_cap() -> None:
    assert [write_retry_delay(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, RETRY_CAP_S,
                                                          RETRY_CAP_S]


async def test_a_storage_fault_is_waited_out_and_reported() -> None:
    health = Recorded()
    calls, slept = patient(health)
    write = Flaky(FULL, ROLLBACK, StoreUnavailable("disk I/O error"))

    await calls.run("storing", lambda: write([1]))

    assert write.stored == [1] and len(write.tries) == 4
    assert slept == [0.5, 1.0, 2.0]
    assert [(f.code if f else None, now) for f, now in health.faults] == [
        (SPACE, 100.0), (UNAVAILABLE, 100.0), (UNAVAILABLE, 100.0)]


async def test_any_other_error_is_raised_at_once() -> None:
    health = Recorded()
    calls, slept = patient(health)
    bug = sqlite3.OperationalError("no such column: lease_token")

    with pytest.raises(sqlite3.OperationalError, match="no such column"):
        await calls.run("storing", lambda: Flaky(bug)([1]))
    assert slept == [] and health.faults == []


async def test_a_group_commit_stores_its_group_once_the_fault_passes() -> None:
    calls, slept = patient()
    write = Flaky(FULL, FULL)
    log: GroupCommit[int] = GroupCommit(write, what="tool rounds", calls=calls)

    await asyncio.gather(*(log.save(row(i), i) for i in (1, 2, 3)))

    assert sorted(write.stored) == [1, 2, 3]
    assert write.tries[0] == write.tries[1] == write.tries[2]  # the same group, again
    assert slept == [0.5, 1.0]


async def test_a_group_commit_raises_a_bug_to_every_row_of_its_group() -> None:
    calls, _ = patient()
    write = Flaky(ValueError("bug"))
    log: GroupCommit[int] = GroupCommit(write, calls=calls)

    answers = await asyncio.gather(log.save(row(1), 1), log.save(row(2), 2),
                                   return_exceptions=True)

    assert [type(a) for a in answers] == [ValueError, ValueError]
    await log.save(row(3), 3)  # the next group is written as usual
    assert write.stored == [3]
