"""save_outcomes: row outcomes and the job's counters move together, and the counters
always equal what the row table says, even when a row is reported twice."""

from __future__ import annotations

from daemon.domain.jobs import Job
from daemon.domain.outcome import Usage
from daemon.store.backend import SqlStore
from daemon.store.interface import Flushed, Store
from tests.store.conftest import NOW, MakeJob, MakeOutcome, end


def row_ids(repo: Store, job: Job) -> list[int]:
    return [w.id for w in repo.pending_rows(job, after_id=0, limit=1_000)]


def row_tokens(repo: SqlStore, job: Job) -> tuple[int, int]:
    return repo.db.execute_sql(repo.sql(
        'SELECT COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0) '
        'FROM "row" WHERE job_id = {p}'), (job.seq,)).fetchone()


def attempt_count(repo: SqlStore, row_id: int) -> int:
    (n,) = repo.db.execute_sql(repo.sql("SELECT COUNT(*) FROM attempt WHERE row_id = {p}"),
                               (row_id,)).fetchone()
    return n


def assert_counters_match_rows(repo: SqlStore, job: Job) -> Job:
    stored = repo.get_job(job.id)
    assert stored is not None
    counts = repo.row_counts(job.seq)
    assert (stored.completed, stored.failed, stored.dead_letter) == (
        counts["completed"], counts["failed"], counts["dead_letter"])
    assert (stored.input_tokens, stored.output_tokens) == row_tokens(repo, job)
    return stored


def test_counters_equal_row_counts(repo: SqlStore, make_job: MakeJob,
                                   make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=6)
    ids = row_ids(repo, job)
    flushed = repo.save_outcomes(job.seq, [
        (ids[0], make_outcome(tokens=(100, 20), cost_nano_usd=1000)),
        (ids[1], make_outcome(tokens=(50, 5), cost_nano_usd=234)),
        (ids[2], make_outcome(False, dead_letter=True, tries=3)),
        (ids[3], make_outcome(False)),
    ], now=NOW)
    assert flushed == Flushed(completed=2, failed=2, dead_letter=1)
    stored = assert_counters_match_rows(repo, job)
    assert (stored.completed, stored.failed, stored.dead_letter) == (2, 2, 1)
    assert (stored.input_tokens, stored.output_tokens) == (150, 25)
    assert stored.cost_nano_usd == 1234
    assert repo.row_counts(job.seq)["pending"] == 2


def test_cached_and_reasoning_tokens_add_up_on_the_job(repo: SqlStore, make_job: MakeJob,
                                                      make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=3)
    ids = row_ids(repo, job)
    repo.save_outcomes(job.seq, [(ids[0], make_outcome(usage=Usage(100, 20, 64, 8))),
                                 (ids[1], make_outcome(usage=Usage(50, 5)))], now=NOW)
    repo.save_outcomes(job.seq, [(ids[2], make_outcome(usage=Usage(30, 9, 16, 4))),
                                 (ids[0], make_outcome(usage=Usage(1, 1, 1, 1)))],  # a repeat
                       now=NOW + 1)
    stored = assert_counters_match_rows(repo, job)
    assert (stored.input_tokens, stored.cached_tokens) == (180, 80)
    assert (stored.output_tokens, stored.reasoning_tokens) == (34, 12)


def test_counters_accumulate_over_flushes(repo: SqlStore, make_job: MakeJob,
                                          make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=4)
    ids = row_ids(repo, job)
    repo.save_outcomes(job.seq, [(ids[0], make_outcome(cost_nano_usd=10))], now=NOW)
    repo.save_outcomes(job.seq, [(ids[1], make_outcome(cost_nano_usd=20)),
                                 (ids[2], make_outcome(False))], now=NOW + 1)
    stored = assert_counters_match_rows(repo, job)
    assert (stored.completed, stored.failed) == (2, 1)
    assert stored.cost_nano_usd == 30


def test_row_fields_are_stored(repo: Store, make_job: MakeJob,
                               make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=2)
    ids = row_ids(repo, job)
    repo.save_outcomes(job.seq, [
        (ids[0], make_outcome(tries=2, model="backup")),
        (ids[1], make_outcome(False, dead_letter=True, tries=3)),
    ], now=NOW + 9)
    ok, dead = repo.rows(job.seq)
    assert (ok.status, ok.attempts, ok.status_code, ok.model) == ("completed", 2, 200, "backup")
    assert ok.response == {"choices": [{"message": {"role": "assistant",
                                                    "content": "positive"}}]}
    assert ok.error is None
    assert (dead.status, dead.attempts, dead.dead_letter) == ("failed", 3, True)
    assert dead.error == "upstream_error: 503"
    assert dead.response is None


def test_attempts_are_stored(repo: SqlStore, make_job: MakeJob,
                             make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=2)
    ids = row_ids(repo, job)
    outcome = make_outcome(False, dead_letter=True, tries=3)
    repo.save_outcomes(job.seq, [(ids[0], outcome), (ids[1], make_outcome(tries=2))], now=NOW)
    assert attempt_count(repo, ids[0]) == 3
    assert attempt_count(repo, ids[1]) == 2
    (entry,) = repo.dead_letter_rows(job.seq)
    assert entry.custom_id == "r-1"
    assert [a["duration_ms"] for a in entry.attempt_log] == [a.duration_ms
                                                            for a in outcome.attempts]
    assert [a["status_code"] for a in entry.attempt_log] == [503, 503, 503]
    assert all(a["model"] == "gpt-4o-mini" for a in entry.attempt_log)


def test_empty_save_changes_nothing(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, rows=1)
    assert repo.save_outcomes(job.seq, [], now=NOW) == Flushed(0, 0, 0)
    assert repo.get_job(job.id) == job


def test_second_save_of_a_row_does_not_double_count(repo: SqlStore, make_job: MakeJob,
                                                    make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=3)
    ids = row_ids(repo, job)
    repo.save_outcomes(job.seq, [(ids[0], make_outcome(tokens=(10, 5)))], now=NOW)
    repo.save_outcomes(job.seq, [(ids[0], make_outcome(tokens=(10, 5)))], now=NOW + 1)
    stored = assert_counters_match_rows(repo, job)
    assert (stored.completed, stored.failed, stored.dead_letter) == (1, 0, 0)
    assert (stored.input_tokens, stored.output_tokens) == (10, 5)


def test_second_save_does_not_rewrite_the_row(repo: SqlStore, make_job: MakeJob,
                                              make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=1)
    (rid,) = row_ids(repo, job)
    repo.save_outcomes(job.seq, [(rid, make_outcome())], now=NOW)
    repo.save_outcomes(job.seq, [(rid, make_outcome(False, dead_letter=True))], now=NOW + 1)
    (row,) = repo.rows(job.seq)
    assert row.status == "completed"
    assert_counters_match_rows(repo, job)


def test_mixed_save_with_a_repeated_row_counts_the_new_ones(
        repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=3)
    ids = row_ids(repo, job)
    repo.save_outcomes(job.seq, [(ids[0], make_outcome(tokens=(10, 5), cost_nano_usd=100))],
                       now=NOW)
    repo.save_outcomes(job.seq, [
        (ids[0], make_outcome(tokens=(10, 5), cost_nano_usd=100)),  # already stored: a repeat
        (ids[1], make_outcome(tokens=(7, 3), cost_nano_usd=70)),
        (ids[2], make_outcome(False, dead_letter=True)),
    ], now=NOW + 1)
    stored = assert_counters_match_rows(repo, job)
    assert (stored.completed, stored.failed, stored.dead_letter) == (2, 1, 1)
    # the new row's tokens and cost count even though its group held a repeat
    assert (stored.input_tokens, stored.output_tokens) == (17, 8)
    assert stored.cost_nano_usd == 170


def test_repeated_row_does_not_duplicate_its_attempts(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=1)
    (rid,) = row_ids(repo, job)
    outcome = make_outcome(False, dead_letter=True, tries=3)
    repo.save_outcomes(job.seq, [(rid, outcome)], now=NOW)
    repo.save_outcomes(job.seq, [(rid, outcome)], now=NOW + 1)
    (entry,) = repo.dead_letter_rows(job.seq)
    assert entry.attempts == 3
    assert len(entry.attempt_log) == 3


def test_outcomes_of_a_cancelled_row_are_not_counted(
        repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=2)
    ids = row_ids(repo, job)
    repo.transition(job.seq, "cancelling", now=NOW)
    end(repo, job, "cancelled", unrun=("canceled", "canceled"))
    repo.save_outcomes(job.seq, [(ids[0], make_outcome())], now=NOW + 1)
    stored = assert_counters_match_rows(repo, job)
    assert (stored.completed, stored.failed) == (0, 2)
