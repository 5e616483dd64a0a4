"""Retention in the store: which ended jobs are past it, their purge a chunk of rows a
write (attempts, rounds and workflow state with them), then the job and its files; cron
templates and their latest runs kept; and the sizes `relayd db stats` prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon import cli
from daemon.domain import ids
from daemon.domain.files import FileRecord
from daemon.domain.jobs import Job, JobDraft
from daemon.domain.outcome import Turn, Usage
from daemon.domain.retention import DAY_S, Purgeable, cutoff
from daemon.store.backend import SqlStore
from daemon.store.sqlite import open_sqlite
from tests.store.conftest import NOW, MakeJob, MakeOutcome, end, make_rows

DAYS = 3


def ended(repo: SqlStore, job: Job, *, at: float, status: str = "completed") -> Job:
    repo.transition(job.seq, "running", now=at - 1)
    done = end(repo, job, status, now=at)  # type: ignore[arg-type]
    assert done is not None
    return done


def with_history(repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome, *,
                 rows: int, at: float, **overrides: object) -> Job:
    """A job whose rows have attempts, a tool round and workflow state, ended at `at`."""
    job = make_job(repo, rows=rows, **overrides)
    work = repo.pending_rows(job, after_id=0, limit=rows)
    repo.save_rounds([(work[0].id, 1, Turn(model="m", usage=Usage(1, 1),
                                           messages=({"role": "assistant", "content": "x"},)))])
    repo.save_workflows([(work[0].id, {"step": 1}, (0, 0, {"index": 0, "body": {}}))])
    repo.save_outcomes(job.seq, [(w.id, make_outcome()) for w in work], now=at - 1)
    return ended(repo, job, at=at)


def test_only_ended_jobs_past_retention_are_purgeable(repo: SqlStore, make_job: MakeJob) -> None:
    now = NOW + 10 * DAY_S
    old = ended(repo, make_job(repo), at=now - 4 * DAY_S)
    cancelled = make_job(repo)
    repo.transition(cancelled.seq, "cancelling", now=now - 5 * DAY_S)
    end(repo, cancelled, "cancelled", now=now - 5 * DAY_S)
    ended(repo, make_job(repo), at=now - 2 * DAY_S)  # ended, but recently
    make_job(repo, created_at=now - 9 * DAY_S)  # old, but still queued
    assert [t.id for t in repo.purgeable_jobs(cutoff(now, DAYS))] == [old.id, cancelled.id]


def test_cron_templates_and_their_latest_runs_are_kept(repo: SqlStore,
                                                       make_job: MakeJob) -> None:
    now = NOW + 10 * DAY_S
    template = make_job(repo, status="scheduled", cron="0 0 * * *", next_run_at=NOW + DAY_S)
    first, latest = (repo.spawn_run(template, tick=NOW + d * DAY_S,
                                    next_run_at=NOW + (d + 1) * DAY_S,
                                    run_id=ids.relay_job_id(), now=NOW + d * DAY_S)
                     for d in (1, 2))
    assert first is not None and latest is not None
    for run in (first, latest):
        ended(repo, run, at=run.created_at + 60)
    assert [t.id for t in repo.purgeable_jobs(cutoff(now, DAYS))] == [first.id]


def test_a_purge_goes_a_chunk_of_rows_a_write_then_the_job(
        repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    job = with_history(repo, make_job, make_outcome, rows=5, at=NOW)
    (target,) = repo.purgeable_jobs(NOW + 1)
    row_ids = [r.id for r in repo.rows(job.seq)]
    assert repo.purge_rows(job.seq, limit=2) == 2
    assert repo.purge_job(target) is None  # rows left: not yet
    assert repo.get_job(job.id) is not None
    assert repo.purge_rows(job.seq, limit=10) == 3
    assert repo.purge_rows(job.seq, limit=10) == 0
    assert repo.purge_job(target) == []
    assert repo.get_job(job.id) is None
    assert repo.rounds(row_ids[0]) == [] and repo.workflow(row_ids[0]) is None
    left = {t.name: t.rows for t in repo.table_sizes()}
    assert (left["row"], left["attempt"], left["round"], left["workflow"],
            left["workflow_result"], left["job"]) == (0, 0, 0, 0, 0, 0)


def file_record(repo: SqlStore, tmp_path: Path, workspace_id: int, name: str) -> FileRecord:
    path = tmp_path / name
    path.write_text("{}\n")
    return repo.add_file(FileRecord(id=ids.file_id(), workspace_id=workspace_id,
                                    filename=name, purpose="batch", bytes=3, status="processed",
                                    path=str(path), created_at=NOW))


def test_a_purged_job_takes_its_result_files_and_an_input_file_no_one_else_names(
        repo: SqlStore, make_job: MakeJob, tmp_path: Path) -> None:
    ws = repo.ensure_workspace("acme", now=NOW)
    shared_input, own_input, output = (file_record(repo, tmp_path, ws.id, n)
                                       for n in ("shared.jsonl", "own.jsonl", "out.jsonl"))
    old = make_job(repo, input_file_id=shared_input.id)
    also = make_job(repo, input_file_id=own_input.id)
    make_job(repo, input_file_id=shared_input.id)  # still queued, names the shared input
    for job in (old, also):
        ended(repo, job, at=NOW)
    target = Purgeable(seq=old.seq, id=old.id, files=(shared_input.id, output.id))
    while repo.purge_rows(old.seq):
        pass
    assert repo.purge_job(target) == [output.path]
    assert repo.file(shared_input.id) is not None and repo.file(output.id) is None
    (other,) = repo.purgeable_jobs(NOW + 1)
    while repo.purge_rows(other.seq):
        pass
    assert repo.purge_job(other) == [own_input.path]


def test_records_of_long_deleted_files_are_forgotten(repo: SqlStore, tmp_path: Path) -> None:
    ws = repo.ensure_workspace("acme", now=NOW)
    gone, recent, live = (file_record(repo, tmp_path, ws.id, n) for n in "abc")
    repo.delete_file(gone.id, workspace_id=ws.id, now=NOW)
    repo.delete_file(recent.id, workspace_id=ws.id, now=NOW + 2 * DAY_S)
    assert repo.purge_deleted_files(NOW + DAY_S) == 1
    assert {t.name: t.rows for t in repo.table_sizes()}["file"] == 2
    assert repo.file(live.id) is not None


def test_purge_counts_say_what_a_purge_would_take(repo: SqlStore, make_job: MakeJob) -> None:
    for rows in (2, 3):
        ended(repo, make_job(repo, rows=rows), at=NOW)
    make_job(repo, rows=7)
    counts = repo.purge_counts(NOW + 1)
    assert (counts.jobs, counts.rows, counts.files) == (2, 5, 0)


def test_table_sizes_name_every_table_with_its_bytes(repo: SqlStore, make_job: MakeJob) -> None:
    make_job(repo, rows=20)
    sizes = {t.name: t for t in repo.table_sizes()}
    assert {"job", "row", "attempt", "file", "workflow"} <= set(sizes)
    assert sizes["row"].rows == 20
    assert sizes["row"].bytes is not None and sizes["row"].bytes > 0


def test_relayd_db_stats_prints_tables_and_what_retention_would_purge(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "relay.toml"
    config.write_text(f'[server]\ndata_dir = "{tmp_path / "data"}"\n')
    assert cli.main(["db", "stats", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["TABLE", "ROWS", "BYTES"]
    assert any(line.split()[:2] == ["row", "0"] for line in out.splitlines())
    assert "retention: off" in out
    store = open_sqlite(tmp_path / "data" / "relay.db")
    ws = store.ensure_workspace("acme", now=NOW)
    job = store.create_job(JobDraft(id=ids.relay_job_id(), workspace_id=ws.id, dialect="relay",
                                    name="old", model="m", endpoint="/v1/chat/completions",
                                    status="running", priority=0, created_at=NOW),
                           make_rows(4))
    ended(store, job, at=NOW)
    store.close()
    config.write_text(config.read_text() + "\n[retention]\ndays = 30\n")
    assert cli.main(["db", "stats", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "retention: 30 day(s): 1 ended job(s) with 4 row(s) and 0 file(s) would be purged" in out
