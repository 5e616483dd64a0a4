"""Retention as the sweeper runs it, on every backend, with an injected clock: jobs past
`[retention] days` purged with their files in passes of bounded rows, tick after tick
while work is left, and a week of a nightly job leaving the SQLite file flat."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.actors.sweeper import Sweeper, purge_ended
from daemon.domain import ids
from daemon.domain.files import FileRecord
from daemon.domain.jobs import Job, JobDraft, RowDraft
from daemon.domain.outcome import Attempt, RowOutcome, Usage
from daemon.domain.retention import DAY_S, PURGE_EVERY_S
from daemon.store.backend import SqlStore
from daemon.store.files import FileStore
from daemon.store.interface import Ending
from daemon.store.sqlite import SqliteStore
from tests.store.conftest import BACKENDS

NOW = 1_800_000_000.0
DAYS = 3
_seq = itertools.count()


@pytest.fixture(params=sorted(BACKENDS))
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    with BACKENDS[request.param](tmp_path) as store:
        yield store


@pytest.fixture
def files(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "data")


def finished(repo: SqlStore, *, rows: int, at: float, answer: str = "positive") -> Job:
    """A job of `rows` answered rows, ended `completed` at `at`."""
    ws = repo.ensure_workspace("acme", now=at)
    drafts = [RowDraft(custom_id=f"r{i}", body={"messages": [
        {"role": "user", "content": f"review {i}: the product was fine"}]}) for i in range(rows)]
    job = repo.create_job(JobDraft(
        id=ids.relay_job_id(), workspace_id=ws.id, dialect="relay", name=f"night {next(_seq)}",
        model="m", endpoint="/v1/chat/completions", status="running", priority=0,
        created_at=at - 60), drafts)
    outcome = RowOutcome(
        ok=True, status_code=200, model="m", usage=Usage(20, 3),
        attempts=(Attempt(model="m", status_code=200, error=None, duration_ms=5,
                          started_at=at - 30),),
        response={"choices": [{"message": {"role": "assistant", "content": answer}}]})
    work = repo.pending_rows(job, after_id=0, limit=rows)
    repo.save_outcomes(job.seq, [(w.id, outcome) for w in work], now=at - 1)
    done = repo.end_job(job.seq, Ending("completed"), now=at)
    assert done is not None
    return done


def with_output(repo: SqlStore, files: FileStore, job: Job) -> str:
    """Give `job` an output file on disk; returns its path."""
    path = files.path_for(ids.file_id())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"{}\n")
    record = repo.add_file(FileRecord(id=path.name, workspace_id=job.workspace_id,
                                      filename="out.jsonl", purpose="batch_output", bytes=3,
                                      created_at=job.created_at, path=str(path)))
    repo.JobModel.update(output_file_id=record.id).where(repo.JobModel.seq == job.seq).execute()
    return str(path)


def test_purge_takes_jobs_past_retention_with_their_files(repo: SqlStore,
                                                          files: FileStore) -> None:
    old = finished(repo, rows=4, at=NOW)
    kept = finished(repo, rows=4, at=NOW + 2 * DAY_S)
    path = with_output(repo, files, old)
    purged = purge_ended(repo, files, now=NOW + 3 * DAY_S + 1, days=DAYS)
    assert (purged.jobs, purged.rows, purged.files, purged.more) == (1, 4, 1, False)
    assert repo.get_job(old.id) is None and not Path(path).exists()
    assert repo.get_job(kept.id) is not None and len(list(repo.rows(kept.seq))) == 4


def test_a_pass_stops_at_its_rows_and_the_next_goes_on(repo: SqlStore,
                                                       files: FileStore) -> None:
    job = finished(repo, rows=5, at=NOW)
    later = NOW + 4 * DAY_S
    first = purge_ended(repo, files, now=later, days=DAYS, rows=3)
    assert (first.jobs, first.rows, first.more) == (0, 3, True)
    assert repo.get_job(job.id) is not None  # still there, with fewer rows
    second = purge_ended(repo, files, now=later, days=DAYS, rows=3)
    assert (second.jobs, second.rows, second.more) == (1, 2, False)
    assert repo.get_job(job.id) is None


def test_the_sweeper_purges_on_its_timer_and_goes_on_while_work_is_left(
        repo: SqlStore, files: FileStore) -> None:
    first, second = (finished(repo, rows=2, at=NOW + i) for i in range(2))
    sweeper = Sweeper(repo=repo, files=files, retention_days=DAYS, rows_per_tick=2)
    later = NOW + 4 * DAY_S
    sweeper.tick(later)  # due at its first tick; two rows: the first job's
    assert repo.get_job(first.id) is None and repo.get_job(second.id) is not None
    sweeper.tick(later + 1)  # work was left: not waiting for the timer
    assert repo.get_job(second.id) is None
    third = finished(repo, rows=1, at=NOW + 2)
    sweeper.tick(later + 2)  # nothing left last time: the timer again
    assert repo.get_job(third.id) is not None
    sweeper.tick(later + PURGE_EVERY_S)
    assert repo.get_job(third.id) is None


def test_without_retention_nothing_is_purged(repo: SqlStore, files: FileStore) -> None:
    job = finished(repo, rows=1, at=NOW)
    Sweeper(repo=repo, files=files).tick(NOW + 1000 * DAY_S)
    assert repo.get_job(job.id) is not None


@pytest.mark.timeout(120)
def test_a_week_of_a_nightly_job_leaves_the_database_flat(tmp_path: Path,
                                                          files: FileStore) -> None:
    with BACKENDS["sqlite"](tmp_path) as repo:
        assert isinstance(repo, SqliteStore)
        sizes = []
        for day in range(1, 8):
            night = NOW + day * DAY_S
            finished(repo, rows=1_500, at=night, answer="a fairly long answer " * 20)
            while purge_ended(repo, files, now=night + 3600, days=DAYS).more:
                pass
            repo.db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            sizes.append(Path(repo.db.database).stat().st_size)
            assert repo.purge_counts(night + 3600 - DAYS * DAY_S).jobs == 0
        # Days 1-3 grow; from day 4 each night adds a job as retention drops one.
        assert sizes[2] > 2 * sizes[0], sizes
        assert all(size <= sizes[2] * 1.05 for size in sizes[3:]), sizes
        while purge_ended(repo, files, now=NOW + 30 * DAY_S, days=DAYS).more:
            pass
        repo.db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        assert Path(repo.db.database).stat().st_size < sizes[0] / 2  # pages given back
