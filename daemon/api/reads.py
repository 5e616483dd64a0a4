"""Reads the API makes on its own loop.

Every API request reads its key's workspace, and a status poll its job: one row each,
by its key. On SQLite that read takes tens of microseconds and no writer holds it up
(the write-ahead log), which is less than handing it to a thread costs: while a job
runs, the hand-back waits for the interpreter lock, and a status read made of two such
hand-offs took a p99 of 23–26 ms during a 50,000-row job, against 13–18 ms read here.
On PostgreSQL the read is a round trip away, and goes to a thread as every other does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from daemon.store.interface import Store

P = ParamSpec("P")
T = TypeVar("T")


async def point_read(repo: Store, read: Callable[P, T], *args: P.args,
                     **kwargs: P.kwargs) -> T:
    """`read(*args, **kwargs)`, a read of one row by its key: here when the store
    answers such a read at once (`Store.QUICK_READS`), else on a thread."""
    if repo.QUICK_READS:
        return read(*args, **kwargs)
    return await asyncio.to_thread(read, *args, **kwargs)
