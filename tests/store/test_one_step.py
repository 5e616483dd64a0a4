"""The SQLite backend's statements over many rows are one step each (multi-row
statements and `IN` lists padded to a power of two, reads as one JSON array: see
`store/sqlite.py`). What they store and read is what one statement a row stored and
read, on every backend: padding touches no other row, and a read keeps every value."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.domain.jobs import ROW_COMPLETED, ROW_PENDING, RowDraft
from daemon.store import sqlite
from daemon.store.backend import SqlStore
from daemon.store.sql import PENDING_ROWS, WORK_COLUMNS, padded
from tests.store.conftest import NOW, MakeJob, MakeOutcome, sqlite_store


def statuses(repo: SqlStore, seq: int) -> dict[str, str]:
    return dict(repo.db.execute_sql(repo.sql(
        'SELECT custom_id, status FROM "row" WHERE job_id = {p}'), (seq,)).fetchall())


@pytest.mark.parametrize("group", [1, 3, 5, 7, 9])
def test_a_padded_group_stores_exactly_its_own_rows(repo: SqlStore, make_job: MakeJob,
                                                    make_outcome: MakeOutcome,
                                                    group: int) -> None:
    job = make_job(repo, rows=12)
    ids = [w.id for w in repo.pending_rows(job, after_id=0, limit=100)]
    flushed = repo.save_outcomes(job.seq, [(rid, make_outcome()) for rid in ids[:group]],
                                 now=NOW)
    assert flushed.completed == group
    by_status = statuses(repo, job.seq)
    assert sorted(by_status.values()) == sorted(
        [ROW_COMPLETED] * group + [ROW_PENDING] * (12 - group))
    stored = repo.get_job(job.id)
    assert stored is not None and stored.completed == group and stored.finished_seq == group


@pytest.mark.parametrize("rows", [1, 5, 17])
def test_padded_inserts_add_exactly_the_rows_given(repo: SqlStore, make_job: MakeJob,
                                                   rows: int) -> None:
    job = make_job(repo, rows=[RowDraft(custom_id=f"r{i}", body={"n": i, "text": "é\u2028"})
                               for i in range(rows)])
    found = repo.pending_rows(job, after_id=0, limit=100)
    assert [(w.custom_id, w.body) for w in found] == [
        (f"r{i}", {"n": i, "text": "é\u2028"}) for i in range(rows)]


def test_a_read_in_one_step_keeps_every_value(repo: SqlStore, make_job: MakeJob) -> None:
    job = make_job(repo, rows=[RowDraft(custom_id=f"c{i}", body={"q": "x" * i}, model=None
                                        if i % 2 else "other") for i in range(6)])
    params = (job.seq, ROW_PENDING, 0, 100)
    statement = repo.sql(PENDING_ROWS)
    plain = [tuple(row) for row in repo.db.execute_sql(statement, params).fetchall()]
    assert sorted(repo.fetch_all(statement, params, columns=WORK_COLUMNS)) == sorted(plain)


def test_padding_gives_a_few_lengths() -> None:
    assert [len(padded(list(range(n)))) for n in (1, 2, 3, 5, 9, 500)] == [1, 2, 4, 8, 16, 512]
    assert padded([7, 8, 9]) == [7, 8, 9, None]


def test_an_older_sqlite_library_takes_a_statement_a_row(
        tmp_path: Path, make_job: MakeJob, make_outcome: MakeOutcome,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before SQLite 3.38 (no `UPDATE … FROM` before 3.33, JSON not built in before
    3.38) the SQLite backend writes and reads as the PostgreSQL one does."""
    monkeypatch.setattr(sqlite, "ONE_STEP", False)
    with sqlite_store(tmp_path) as repo:
        run_a_group(repo, make_job, make_outcome)


def run_a_group(repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=6)
    works = repo.pending_rows(job, after_id=0, limit=100)
    assert [w.custom_id for w in works] == [f"r-{i}" for i in range(1, 7)]
    repo.save_outcomes(job.seq, [(w.id, make_outcome()) for w in works[:3]], now=NOW)
    assert sorted(statuses(repo, job.seq).values()) == [ROW_COMPLETED] * 3 + [ROW_PENDING] * 3
    assert [r.finished_seq for r in repo.finished_rows(job.seq, after_seq=0, limit=10)] == [
        1, 2, 3]
