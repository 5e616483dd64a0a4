"""`point_read`: a one-row read by key runs on the API's loop where the store answers
it at once (SQLite), and on a thread otherwise (PostgreSQL, a round trip away); and the
collector is settled once the daemon has started."""

from __future__ import annotations

import asyncio
import gc
import threading

from daemon.api.reads import point_read
from daemon.runtime import settle_garbage_collector


class Reads:
    def __init__(self, *, quick: bool) -> None:
        self.QUICK_READS = quick
        self.threads: list[int] = []

    def read(self, key: str, *, workspace: int) -> str:
        self.threads.append(threading.get_ident())
        return f"{key}@{workspace}"


async def read_on(store: Reads) -> tuple[str, int]:
    found = await point_read(store, store.read, "k", workspace=3)  # type: ignore[arg-type]
    return found, threading.get_ident()


def test_a_quick_store_is_read_on_the_loop_itself() -> None:
    store = Reads(quick=True)
    found, loop_thread = asyncio.run(read_on(store))
    assert found == "k@3" and store.threads == [loop_thread]


def test_any_other_store_is_read_on_a_thread() -> None:
    store = Reads(quick=False)
    found, loop_thread = asyncio.run(read_on(store))
    assert found == "k@3" and len(store.threads) == 1 and store.threads != [loop_thread]


def test_what_the_start_made_leaves_the_collectors_scans() -> None:
    before = gc.get_freeze_count()
    made = [[i] for i in range(1000)]  # containers the collector tracks
    try:
        settle_garbage_collector()
        assert gc.get_freeze_count() >= before + len(made)
    finally:
        if not before:  # else the suite froze what it had (tests/conftest.py): kept so
            gc.unfreeze()
