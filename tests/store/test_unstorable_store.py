"""Outcomes a real store refuses for a reason that is not a storage fault, and totals
that must not overflow: on every backend.

The poison is real: a count past 64 bits (SQLite: `OverflowError`; PostgreSQL:
`bigint out of range`), and on PostgreSQL a NUL character in text. `save_apart` (what
the supervisor's writer calls) stores the rest of the group as it is and the poison
row as failed `internal_error`; a job's totals saturate at 2^63 − 1."""

from __future__ import annotations

from dataclasses import replace

import pytest

from daemon.domain.jobs import Job
from daemon.domain.outcome import RowOutcome, Usage
from daemon.domain.unstorable import save_apart
from daemon.domain.usage import MAX_STORED
from daemon.store.backend import SqlStore
from daemon.store.faults import StoreError, store_fault
from daemon.store.interface import Store
from daemon.store.postgres import PostgresStore
from tests.store.conftest import NOW, MakeJob, MakeOutcome


def row_ids(repo: Store, job: Job) -> list[int]:
    return [w.id for w in repo.pending_rows(job, after_id=0, limit=1_000)]


def save_apart_in(repo: Store, job: Job,
                  outcomes: list[tuple[int, RowOutcome]]) -> list[tuple[int, Exception]]:
    return save_apart(outcomes, lambda group: repo.save_outcomes(job.seq, group, now=NOW),
                      is_fault=lambda exc: isinstance(exc, StoreError))  # as the supervisor


def test_a_count_past_64_bits_is_refused_and_not_a_storage_fault(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    """The write the issue found wedged: it fails whole, leaving nothing behind."""
    job = make_job(repo, rows=3)
    ids = row_ids(repo, job)
    poison = make_outcome(usage=Usage(9223372036854775813, 5))
    with pytest.raises(Exception) as refused:  # each backend its own type
        repo.save_outcomes(job.seq, [(ids[0], make_outcome()), (ids[1], poison)], now=NOW)
    assert store_fault(refused.value) is None
    assert not isinstance(refused.value, StoreError)  # nor made one at the store boundary
    assert repo.row_counts(job.seq)["pending"] == 3  # rolled back: the good row too


def test_the_poison_row_fails_internal_error_and_the_rest_is_stored(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=8)
    ids = row_ids(repo, job)
    poison = make_outcome(usage=Usage(9223372036854775813, 5), cost_nano_usd=3)
    group = [(rid, make_outcome(tokens=(10, 5), cost_nano_usd=100)) for rid in ids[:7]]
    group[4] = (ids[4], poison)
    refused = save_apart_in(repo, job, group)
    assert [rid for rid, _ in refused] == [ids[4]]

    stored = repo.job_by_seq(job.seq)
    assert stored is not None
    assert (stored.completed, stored.failed, stored.input_tokens, stored.output_tokens,
            stored.cost_nano_usd) == (6, 1, 60, 30, 600)  # the good rows; the poison unbilled
    assert repo.row_counts(job.seq) == {"completed": 6, "failed": 1, "dead_letter": 0,
                                        "pending": 1}
    row = repo.row(job.seq, "r-5")
    assert row is not None and row.status == "failed" and row.error_code == "internal_error"
    assert row.error is not None and row.error.startswith(
        "internal_error: the store refused this row's outcome (")
    assert row.response == poison.response  # the answer is kept
    assert len(row.attempt_log) == len(poison.attempts)


def test_a_nul_in_text_is_poison_on_postgresql_only(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    """An upstream's error message with `\\u0000` in it (the router quotes it in the
    row's error and its attempt's): PostgreSQL text cannot hold the NUL, so the row is
    stored without anything from upstream; SQLite keeps it as is."""
    job = make_job(repo, rows=3)
    ids = row_ids(repo, job)
    said = make_outcome(False).attempts[0]
    nul = make_outcome(False, error="upstream_error: 400 from m (upstream said: bad\x00)",
                       error_body={"error": {"message": "bad\x00"}},
                       attempts=(replace(said, error="400 bad\x00"),))
    refused = save_apart_in(repo, job, [(ids[0], make_outcome()), (ids[1], nul)])
    row = repo.row(job.seq, "r-2")
    assert row is not None and row.status == "failed"
    if isinstance(repo, PostgresStore):
        assert [rid for rid, _ in refused] == [ids[1]]
        assert row.error_code == "internal_error"
        assert (row.attempt_log, row.response) == ((), None)  # the bare stand-in
        assert row.error is not None and "\x00" not in row.error
    else:
        assert refused == [] and row.error == nul.error
    assert repo.row_counts(job.seq)["completed"] == 1


def test_a_jobs_totals_saturate_rather_than_overflow(
        repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    """Each row's totals are storable; many of them may add up past 64 bits."""
    job = make_job(repo, rows=4)
    ids = row_ids(repo, job)
    near = MAX_STORED - 5
    repo.save_outcomes(job.seq, [(ids[0], make_outcome(usage=Usage(near, near, near, near),
                                                       cost_nano_usd=near))], now=NOW)
    repo.save_outcomes(job.seq, [(ids[1], make_outcome(usage=Usage(10, 3, 10, 3),
                                                       cost_nano_usd=10)),
                                 (ids[2], make_outcome(usage=Usage(MAX_STORED, 0),
                                                       cost_nano_usd=MAX_STORED))], now=NOW)
    stored = repo.job_by_seq(job.seq)
    assert stored is not None
    assert (stored.input_tokens, stored.output_tokens, stored.cached_tokens,
            stored.reasoning_tokens, stored.cost_nano_usd) == (
        MAX_STORED, MAX_STORED - 2, MAX_STORED, MAX_STORED - 2, MAX_STORED)
    assert (stored.completed, stored.failed) == (3, 0)
    (cost,) = repo.db.execute_sql(repo.sql('SELECT cost_nano_usd FROM "row" WHERE id = {p}'),
                                  (ids[1],)).fetchone()
    assert cost == 10  # each row keeps its own
