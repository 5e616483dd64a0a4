"""Group commit: rows on the I/O loop that must store something before they go on wait
for one transaction that carries everything queued meanwhile, instead of one each."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


class GroupCommit(Generic[T]):
    """`await save(item)` returns once `write` (a blocking store call, run in a worker
    thread) has stored `item`, together with every item queued while it waited."""

    def __init__(self, write: Callable[[Sequence[T]], None]) -> None:
        self.write = write
        self.queued: list[tuple[T, asyncio.Future[None]]] = []
        self.writing = False

    async def save(self, item: T) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.queued.append((item, done))
        if not self.writing:
            self.writing = True
            asyncio.create_task(self._drain())  # noqa: RUF006 - it ends when the queue does
        await done

    async def _drain(self) -> None:
        try:
            while self.queued:
                group, self.queued = self.queued, []
                try:
                    await asyncio.to_thread(self.write, [item for item, _ in group])
                except Exception as exc:
                    _settle(group, exc)
                else:
                    _settle(group, None)
        finally:
            self.writing = False


def _settle(group: list[tuple[T, asyncio.Future[None]]], error: Exception | None) -> None:
    for _, done in group:
        if not done.done():
            done.set_exception(error) if error else done.set_result(None)
