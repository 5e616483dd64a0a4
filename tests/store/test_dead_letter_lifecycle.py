"""A dead-lettered row's lifecycle (open, re-driven, discarded) and the counters that
follow it: `dead_letter_open`, and `canceled` (failed rows that never ran)."""

from __future__ import annotations

from pathlib import Path

from daemon.domain import ids
from daemon.domain.jobs import CANCELLED, CANCELLING, DL_DISCARDED, DL_OPEN, DL_REDRIVEN
from daemon.store.interface import Store
from daemon.store.sqlite import open_sqlite
from tests.store.conftest import NOW, MakeJob, MakeOutcome, end
from tests.store.older import undo_version_11
from tests.store.test_job_store import dead_lettered


def states(repo: Store, seq: int) -> dict[str, str]:
    return {r.custom_id: r.dead_letter_state for r in repo.dead_letter_rows(seq)}


def open_count(repo: Store, seq: int) -> int:
    job = repo.job_by_seq(seq)
    assert job is not None
    return job.dead_letter_open


def test_a_retry_resolves_the_rows_it_took_and_keeps_dead_letter(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    seq, _ = dead_lettered(repo, make_job, make_outcome)
    assert open_count(repo, seq) == 2
    retry = repo.retry_dead_letter(seq, new_id=ids.relay_job_id(), custom_ids=["r-1"], now=NOW)
    assert retry is not None and retry.name == "October (dead-letter retry)"
    assert states(repo, seq) == {"r-1": DL_REDRIVEN, "r-3": DL_OPEN}
    assert open_count(repo, seq) == 1
    repo.retry_dead_letter(seq, new_id=ids.relay_job_id(), custom_ids=["r-1"], now=NOW,
                           force=True)  # again: resolved already, counted once
    job = repo.job_by_seq(seq)
    assert job is not None and (job.dead_letter, job.dead_letter_open) == (2, 1)


def test_discard_takes_open_rows_off_the_list(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    seq, _ = dead_lettered(repo, make_job, make_outcome)
    assert repo.discard_dead_letter(seq, custom_ids=["r-3"], now=NOW) == 1
    assert states(repo, seq) == {"r-1": DL_OPEN, "r-3": DL_DISCARDED}
    assert repo.discard_dead_letter(seq, custom_ids=["r-3"], now=NOW) == 0
    assert [r.custom_id for r in repo.redrivable_rows(seq)] == ["r-1"]
    assert repo.discard_dead_letter(seq, custom_ids=None, now=NOW + 1) == 1
    assert open_count(repo, seq) == 0
    assert repo.retry_dead_letter(seq, new_id=ids.relay_job_id(), custom_ids=None,
                                  now=NOW) is None


def test_the_workspace_dead_letter_spans_jobs_and_states(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    first, _ = dead_lettered(repo, make_job, make_outcome)
    second, _ = dead_lettered(repo, make_job, make_outcome)
    repo.discard_dead_letter(first, custom_ids=["r-1"], now=NOW)
    ws = repo.workspace("acme")
    assert ws is not None

    found, more = repo.workspace_dead_letter(ws.id, states=[DL_OPEN], limit=10)
    assert [(j.seq, r.custom_id) for j, r in found] == [
        (second, "r-1"), (second, "r-3"), (first, "r-3")]
    assert not more
    page, more = repo.workspace_dead_letter(ws.id, states=[DL_OPEN, DL_DISCARDED], limit=3)
    assert len(page) == 3 and more
    gone, _ = repo.workspace_dead_letter(ws.id, states=[DL_DISCARDED], limit=10)
    assert [(j.seq, r.custom_id, r.discarded_at) for j, r in gone] == [(first, "r-1", NOW)]
    other = repo.ensure_workspace("other", now=NOW)
    assert repo.workspace_dead_letter(other.id, states=[DL_OPEN], limit=10) == ([], False)


def test_rows_a_cancel_ended_count_as_canceled(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=5)
    work = repo.pending_rows(job, after_id=0, limit=10)
    repo.save_outcomes(job.seq, [
        (work[0].id, make_outcome()), (work[1].id, make_outcome(False)),
        # stopped by the ending before its first call went out
        (work[2].id, make_outcome(False, tries=0, error_code="canceled", never_ran=True)),
    ], now=NOW)
    repo.transition(job.seq, "running", now=NOW)
    repo.transition(job.seq, CANCELLING, now=NOW)
    ended = end(repo, job, CANCELLED, unrun=("canceled", "canceled"))
    assert ended is not None
    assert (ended.completed, ended.failed, ended.canceled) == (1, 4, 3)


def test_the_migration_counts_what_the_rows_say(tmp_path: Path,
                                                make_job: MakeJob) -> None:
    path = tmp_path / "relay.db"
    store = open_sqlite(path)
    job = make_job(store, rows=5)
    for n, (attempts, code, dead, went) in enumerate([
            (0, "canceled", 0, None), (0, "batch_expired", 0, None), (2, "canceled", 0, None),
            (3, None, 1, None), (3, None, 1, "elsewhere")], start=1):
        store.db.execute_sql(
            "UPDATE \"row\" SET status = 'failed', attempts = ?, error_code = ?, "
            "dead_letter = ?, redriven_to = ? WHERE custom_id = ?",
            (attempts, code, dead, went, f"r-{n}"))
    for column in ("dead_letter_open", "canceled"):
        store.db.execute_sql(f"ALTER TABLE job DROP COLUMN {column}")
    store.db.execute_sql('ALTER TABLE "row" DROP COLUMN discarded_at')
    undo_version_11(store.db)
    store.db.execute_sql("UPDATE schema_version SET version = 9")
    store.close()

    again = open_sqlite(path)
    migrated = again.job_by_seq(job.seq)
    assert migrated is not None and (migrated.canceled, migrated.dead_letter_open) == (2, 1)
    again.close()
