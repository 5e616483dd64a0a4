"""The finish order partial results page through (`Store.finished_rows`): a reader that
pages by the last finish sequence it saw meets every finished row exactly once, even
while writes of one job's outcomes commit side by side from two store handles (two
nodes on one PostgreSQL database), and paging after the end gives the final results."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from daemon.domain.jobs import EXPIRED, FAILED, Job, RowRecord
from daemon.store.backend import SqlStore
from daemon.store.postgres import open_postgres
from daemon.store.sqlite import open_sqlite
from tests.store import postgres
from tests.store.conftest import NOW, MakeJob, MakeOutcome, end, make_rows

WAIT_S = 30.0  # far longer than any step here takes


@contextmanager
def two_handles(backend: str, tmp: Path) -> Iterator[tuple[SqlStore, SqlStore]]:
    """Two stores open on one database, as two nodes have it."""
    if backend == "sqlite":
        one, two = open_sqlite(tmp / "relay.db"), open_sqlite(tmp / "relay.db")
        try:
            yield one, two
        finally:
            one.close()
            two.close()
        return
    with postgres.clean_schema() as url:
        first, second = open_postgres(url), open_postgres(url)
        try:
            yield first, second
        finally:
            first.close()
            second.close()


@pytest.fixture(params=["sqlite", "postgres"])
def handles(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[SqlStore, SqlStore]]:
    with two_handles(request.param, tmp_path) as pair:
        yield pair


def read_all(repo: SqlStore, job: Job, *, after: int = 0, limit: int = 3) -> list[RowRecord]:
    """Every row finished past `after`, a page of `limit` at a time."""
    seen: list[RowRecord] = []
    while page := repo.finished_rows(job.seq, after_seq=after, limit=limit):
        seen += page
        after = last(page)
    return seen


def last(rows: list[RowRecord]) -> int:
    """The cursor after `rows`: the last one's finish sequence (0 before any)."""
    return (rows[-1].finished_seq or 0) if rows else 0


def pending_ids(repo: SqlStore, job: Job) -> list[int]:
    return [w.id for w in repo.pending_rows(job, after_id=0, limit=10_000)]


def test_rows_come_in_finish_order_each_once(repo: SqlStore, make_job: MakeJob,
                                             make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=6)
    ids = pending_ids(repo, job)
    repo.save_outcomes(job.seq, [(ids[4], make_outcome()), (ids[1], make_outcome(False))],
                       now=NOW)
    first = repo.finished_rows(job.seq, after_seq=0, limit=10)
    assert [r.custom_id for r in first] == ["r-5", "r-2"]
    cursor = last(first)
    assert repo.finished_rows(job.seq, after_seq=cursor, limit=10) == []
    repo.save_outcomes(job.seq, [(ids[0], make_outcome()), (ids[4], make_outcome())], now=NOW)
    assert [r.custom_id for r in repo.finished_rows(job.seq, after_seq=cursor, limit=10)] == [
        "r-1"]  # r-5 was stored already: it is not finished twice


def test_rows_refused_on_the_way_in_are_finished_first(repo: SqlStore, make_job: MakeJob,
                                                       make_outcome: MakeOutcome) -> None:
    rows = make_rows(3)
    rows[1] = replace(rows[1], custom_id="bad", error="no messages", error_code="invalid_row")
    job = make_job(repo, rows=rows)
    repo.save_outcomes(job.seq, [(pending_ids(repo, job)[0], make_outcome())], now=NOW)
    assert [r.custom_id for r in read_all(repo, job)] == ["bad", "r-1"]


def test_the_ending_finishes_unrun_rows_after_the_rest(repo: SqlStore, make_job: MakeJob,
                                                       make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=5)
    ids = pending_ids(repo, job)
    repo.save_outcomes(job.seq, [(ids[3], make_outcome())], now=NOW)
    seen = read_all(repo, job)
    assert end(repo, job, EXPIRED, unrun=("batch_expired", "expired"))
    rest = read_all(repo, job, after=last(seen))
    assert [r.custom_id for r in seen + rest] == ["r-4", "r-1", "r-2", "r-3", "r-5"]
    repo.save_outcomes(job.seq, [(ids[0], make_outcome())], now=NOW)  # too late: stored
    assert read_all(repo, job, after=last(rest)) == []


def test_a_job_failed_as_a_whole_still_lists_its_unstarted_rows(
        repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    """A job that fails before its rows run (its model left the config) keeps them
    pending, explained by its error; they are numbered all the same, so a reader that
    followed it while it ran goes on to every row."""
    job = make_job(repo, rows=3)
    ids = pending_ids(repo, job)
    repo.save_outcomes(job.seq, [(ids[1], make_outcome())], now=NOW)
    seen = read_all(repo, job)
    assert end(repo, job, FAILED, error="model 'gpt-4o-mini' is no longer configured")
    rest = read_all(repo, job, after=last(seen))
    assert [(r.custom_id, r.status) for r in seen + rest] == [
        ("r-2", "completed"), ("r-1", "pending"), ("r-3", "pending")]
    assert read_all(repo, job, after=last(rest)) == []


def test_partial_reads_after_the_end_equal_the_final_results(
        repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=7)
    ids = pending_ids(repo, job)
    polled: list[RowRecord] = []
    for group in (ids[5:], ids[:2], ids[2:4]):
        repo.save_outcomes(job.seq, [(i, make_outcome(i % 2 == 0)) for i in group], now=NOW)
        polled += read_all(repo, job, after=last(polled))
    assert end(repo, job, EXPIRED, unrun=("batch_expired", "expired"))
    polled += read_all(repo, job, after=last(polled))
    final = {r.custom_id: replace(r, body={}) for r in repo.rows(job.seq)}  # no requests
    assert len(polled) == len(final) == 7
    assert {r.custom_id: r for r in polled} == final
    assert read_all(repo, job) == polled  # the same cursor from the start, once ended


def test_a_write_committing_late_is_never_skipped(
        handles: tuple[SqlStore, SqlStore], make_job: MakeJob,
        make_outcome: MakeOutcome) -> None:
    """One handle's write is held open inside its transaction while the other's is
    sent; a reader polling meanwhile and after sees each row once."""
    one, two = handles
    job = make_job(one, rows=8)
    ids = pending_ids(one, job)
    inside, release = threading.Event(), threading.Event()
    stored = one._insert_attempts

    def held(done: Any) -> None:
        stored(done)
        inside.set()
        assert release.wait(WAIT_S)

    one._insert_attempts = held  # type: ignore[method-assign]
    with ThreadPoolExecutor(2) as pool:
        late = pool.submit(one.save_outcomes, job.seq,
                           [(i, make_outcome()) for i in ids[:4]], now=NOW)
        assert inside.wait(WAIT_S)
        seen = read_all(two, job)
        assert seen == []  # the open write is not visible
        early = pool.submit(two.save_outcomes, job.seq,
                            [(i, make_outcome()) for i in ids[4:]], now=NOW)
        seen += read_all(two, job)
        release.set()
        late.result(WAIT_S), early.result(WAIT_S)
    seen += read_all(two, job, after=last(seen))
    assert sorted(r.custom_id for r in seen) == sorted(f"r-{i}" for i in range(1, 9))


def test_writers_side_by_side_and_a_poller_meet_every_row_once(
        handles: tuple[SqlStore, SqlStore], make_job: MakeJob,
        make_outcome: MakeOutcome) -> None:
    one, two = handles
    job = make_job(one, rows=96)
    ids = pending_ids(one, job)
    groups = [ids[i:i + 6] for i in range(0, len(ids), 6)]
    writing = threading.Event()
    seen: list[RowRecord] = []

    def write(n: int) -> None:
        store = (one, two)[n % 2]
        store.save_outcomes(job.seq, [(i, make_outcome()) for i in groups[n]], now=NOW)

    def poll() -> None:
        after = 0
        while True:
            done = not writing.is_set()  # read before the page: a last full read follows
            page = two.finished_rows(job.seq, after_seq=after, limit=5)
            seen.extend(page)
            after = last(page) or after
            if done and not page:
                return

    writing.set()
    with ThreadPoolExecutor(5) as pool:
        poller = pool.submit(poll)
        list(pool.map(write, range(len(groups))))
        writing.clear()
        poller.result(WAIT_S)
    assert sorted(r.id for r in seen) == sorted(ids)
    assert [r.finished_seq for r in seen] == sorted(r.finished_seq or 0 for r in seen)
