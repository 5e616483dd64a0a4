"""Stores open side by side in one process: two SQLite files, and SQLite with
PostgreSQL. Each writes and reads only its own database, also from many threads at
once, as the actors, each job's writer thread and the API's `asyncio.to_thread` use
it. Each store binds its own copy of the models (`store/models.py`, `bind`); with one
shared set re-pointed by every open, the store opened last took every query."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from daemon.domain.jobs import Job, RowWork
from daemon.domain.outcome import RowOutcome
from daemon.store import models
from daemon.store.backend import SqlStore
from daemon.store.interface import Store
from tests.store.conftest import BACKENDS, MakeJob, MakeOutcome

THREADS = 4  # per store
GROUPS = 4  # writes per thread
GROUP = 16  # outcomes per write
ROWS = THREADS * GROUPS * GROUP
BARRIER_S = 30.0  # every thread is started long before this

Share = tuple[Store, Job, Sequence[RowWork], RowOutcome]


@pytest.fixture(params=[("sqlite", "sqlite"), ("sqlite", "postgres")], ids="+".join)
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """Two empty stores, both open until the test ends, the second opened last."""
    first, second = request.param
    with BACKENDS[first](tmp_path / "one") as one, BACKENDS[second](tmp_path / "two") as two:
        yield one, two


def names_in(store: Store) -> list[str]:
    """The workspaces in the store's database, read past its models (raw SQL on its
    own connection)."""
    assert isinstance(store, SqlStore)
    return [name for (name,) in store.db.execute_sql("SELECT name FROM workspace ORDER BY name")]


def attempts_in(store: Store) -> int:
    assert isinstance(store, SqlStore)
    (count,) = store.db.execute_sql("SELECT COUNT(*) FROM attempt").fetchone()
    return int(count)


def test_each_store_writes_and_reads_its_own_database(
        pair: tuple[Store, Store], make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    one, two = pair
    job_one = make_job(one, rows=3, workspace="one")
    job_two = make_job(two, rows=5, workspace="two")

    assert (names_in(one), names_in(two)) == (["one"], ["two"])
    assert [w.name for w in one.workspaces()] == ["one"]
    assert [w.name for w in two.workspaces()] == ["two"]
    assert one.get_job(job_two.id) is None and two.get_job(job_one.id) is None

    for store, job, outcome in ((one, job_one, make_outcome()),
                                (two, job_two, make_outcome(ok=False))):
        rows = store.pending_rows(job, after_id=0, limit=10)
        store.save_outcomes(job.seq, [(r.id, outcome) for r in rows], now=job.created_at)
    assert one.row_counts(job_one.seq) == {"completed": 3, "failed": 0, "dead_letter": 0,
                                           "pending": 0}
    assert two.row_counts(job_two.seq) == {"completed": 0, "failed": 5, "dead_letter": 0,
                                           "pending": 0}
    assert (attempts_in(one), attempts_in(two)) == (3, 5)
    assert one.get_job(job_one.id).completed == 3  # type: ignore[union-attr]
    assert two.get_job(job_two.id).failed == 5  # type: ignore[union-attr]


def test_each_store_has_its_own_models_and_the_definitions_stay_unbound(
        pair: tuple[Store, Store]) -> None:
    one, two = pair
    assert isinstance(one, SqlStore) and isinstance(two, SqlStore)
    for store in (one, two):
        assert store.RowModel._meta.database is store.db
        assert issubclass(store.RowModel, models.RowModel)
        assert store.RowModel.job.rel_model is store.JobModel  # its joins stay in its tables
        assert store.WorkflowModel.row.rel_model is store.RowModel
    assert one.JobModel is not two.JobModel
    assert all(model._meta.database is None for model in models.TABLES)


def store_share(share: Share, start: threading.Barrier) -> None:
    """One thread's part: its rows' outcomes in groups, each write checked against the
    store's own job; every thread starts at once, so the two stores' writes interleave."""
    store, job, works, outcome = share
    start.wait(BARRIER_S)
    for i in range(0, len(works), GROUP):
        group = [(w.id, outcome) for w in works[i:i + GROUP]]
        flushed = store.save_outcomes(job.seq, group, now=job.created_at,
                                      leases={w.id: w.token for w in works[i:i + GROUP]})
        assert flushed.completed + flushed.failed == len(group)
        assert store.get_job(job.id) is not None


def in_threads(shares: list[Share], start: threading.Barrier) -> None:
    """As actors and each job's writer thread do: plain threads of their own."""
    with ThreadPoolExecutor(len(shares)) as pool:
        for done in [pool.submit(store_share, share, start) for share in shares]:
            done.result()


def through_to_thread(shares: list[Share], start: threading.Barrier) -> None:
    """As the API does: `asyncio.to_thread` from the event loop (its default executor
    made large enough that every share runs at once)."""
    async def run() -> None:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(len(shares)))
        await asyncio.gather(*(asyncio.to_thread(store_share, share, start)
                               for share in shares))
    asyncio.run(run())


@pytest.mark.parametrize("run", [in_threads, through_to_thread],
                         ids=["threads", "asyncio.to_thread"])
def test_each_store_keeps_to_its_database_from_many_threads(
        pair: tuple[Store, Store], make_job: MakeJob, make_outcome: MakeOutcome,
        run: Callable[[list[Share], threading.Barrier], None]) -> None:
    one, two = pair
    jobs = (make_job(one, rows=ROWS, workspace="one"), make_job(two, rows=ROWS, workspace="two"))
    outcomes = (make_outcome(), make_outcome(ok=False))
    shares: list[Share] = []
    for store, job, outcome in zip(pair, jobs, outcomes, strict=True):
        works = store.pending_rows(job, after_id=0, limit=ROWS)
        per_thread = len(works) // THREADS
        shares += [(store, job, works[i * per_thread:(i + 1) * per_thread], outcome)
                   for i in range(THREADS)]

    run(shares, threading.Barrier(len(shares)))

    assert one.row_counts(jobs[0].seq) == {"completed": ROWS, "failed": 0, "dead_letter": 0,
                                           "pending": 0}
    assert two.row_counts(jobs[1].seq) == {"completed": 0, "failed": ROWS, "dead_letter": 0,
                                           "pending": 0}
    assert (attempts_in(one), attempts_in(two)) == (ROWS, ROWS)
    assert (names_in(one), names_in(two)) == (["one"], ["two"])
