"""Group commit: rows on the I/O loop that must store something before they go on wait
for one transaction that carries everything queued meanwhile, instead of one each.

Each write is fenced: it carries the lease token every row was run under, and the store
writes nothing for a row another node has leased since. Such a row's `save` raises
`LeaseLost`, and the row goes no further here. A write that meets a storage fault is
tried again until the store takes it (`StoreCalls`): the rows waiting on it wait the
fault out."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from functools import partial
from typing import Generic, Protocol, TypeVar

from daemon.domain.jobs import RowWork
from daemon.executors.lane import LeaseLost
from daemon.executors.store_calls import StoreCalls

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class Write(Protocol[T_contra]):
    def __call__(self, items: Sequence[T_contra], /, *,
                 leases: Mapping[int, int]) -> Collection[int]:
        """Store `items` (a blocking store call) unless their row's lease `{row id:
        token}` has moved on; the rows refused."""
        ...


class GroupCommit(Generic[T]):
    """`await save(work, item)` returns once `write` (a blocking store call, run in a
    worker thread) has stored `item` of row `work`, together with every item queued
    while it waited."""

    def __init__(self, write: Write[T], *, what: str = "items",
                 calls: StoreCalls | None = None) -> None:
        self.write = write
        self.what = what  # what the items are, for the log
        self.calls = calls or StoreCalls()
        self.queued: list[tuple[RowWork, T, asyncio.Future[None]]] = []
        self.writing = False

    async def save(self, work: RowWork, item: T) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.queued.append((work, item, done))
        if not self.writing:
            self.writing = True
            asyncio.create_task(self._drain())  # noqa: RUF006 - it ends when the queue does
        await done

    async def _drain(self) -> None:
        try:
            while self.queued:
                group, self.queued = self.queued, []
                try:
                    lost = await self.calls.run(
                        f"storing {len(group)} {self.what}",
                        partial(self.write, [item for _, item, _ in group],
                                leases=_leases(group)))
                except Exception as exc:
                    _settle(group, failed=exc)
                else:
                    _settle(group, lost=lost)
        finally:
            self.writing = False


def _leases(group: Sequence[tuple[RowWork, T, asyncio.Future[None]]]) -> Mapping[int, int]:
    return {work.id: work.token for work, _, _ in group}


def _settle(group: Sequence[tuple[RowWork, T, asyncio.Future[None]]], *,
            failed: Exception | None = None, lost: Collection[int] = ()) -> None:
    """Wake every row of a write: with the write's failure, `LeaseLost` for the rows
    it refused, or as stored."""
    for work, _, done in group:
        if done.done():
            continue
        if failed is not None:
            done.set_exception(failed)
        elif work.id in lost:
            done.set_exception(LeaseLost(f"row {work.id}: another node leased it since"))
        else:
            done.set_result(None)
