"""Jobs and rows in the store: atomic creation, paging, listing, queue order, transitions,
restart recovery, cancel and dead-letter retry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from daemon.domain import ids
from daemon.domain.files import FileRecord
from daemon.domain.jobs import RowDraft, Status
from daemon.store import jobs as store_jobs
from daemon.store import rows as rows_module
from daemon.store.backend import SqlStore
from daemon.store.interface import Store
from tests.store.conftest import NOW, MakeJob, MakeOutcome, end, make_rows


def count(repo: SqlStore, table: str) -> int:
    (n,) = repo.db.execute_sql(f'SELECT COUNT(*) FROM "{table}"').fetchone()
    return n


# -- create_job -------------------------------------------------------------------


def test_create_job_stores_job_and_rows(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, rows=4, name="October", priority=3, webhook_url="https://h.example/x")
    assert job.total == 4
    assert (job.completed, job.failed, job.dead_letter) == (0, 0, 0)
    assert job.status == "queued"
    assert job.stamps == {"queued": job.created_at}
    stored = repo.get_job(job.id)
    assert stored == job
    rows = list(repo.rows(job.seq))
    assert [r.position for r in rows] == [1, 2, 3, 4]
    assert [r.custom_id for r in rows] == ["r-1", "r-2", "r-3", "r-4"]
    assert rows[2].body == {"messages": [{"role": "user", "content": "prompt 3"}]}
    assert all(r.status == "pending" and r.attempts == 0 for r in rows)


def test_create_job_with_pre_failed_rows(repo: Store, make_job: MakeJob) -> None:
    rows = [*make_rows(2), RowDraft(custom_id="bad", body={}, error="invalid row")]
    job = make_job(repo, rows=rows)
    assert (job.total, job.failed) == (3, 1)
    assert repo.row_counts(job.seq) == {"completed": 0, "failed": 1, "dead_letter": 0,
                                        "pending": 2}


def test_get_job_respects_workspace(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, workspace="acme")
    other = repo.ensure_workspace("globex", now=NOW)
    assert repo.get_job(job.id, workspace_id=other.id) is None
    assert repo.get_job(job.id, workspace_id=job.workspace_id) == job
    assert repo.get_job("f" * 32) is None


def test_failure_mid_insert_leaves_nothing(repo: SqlStore, make_job: MakeJob) -> None:
    make_job(repo, rows=2)  # something already stored must survive
    before = (count(repo, "job"), count(repo, "row"))
    rows = make_rows(1200)
    rows[1100] = RowDraft(custom_id="bad", body={"not json": {1, 2}})  # third chunk
    with pytest.raises(TypeError):
        make_job(repo, rows=rows)
    assert (count(repo, "job"), count(repo, "row")) == before


def test_failure_after_rows_leaves_nothing(repo: SqlStore, make_job: MakeJob,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    original = rows_module.insert_rows  # what daemon.store.jobs calls

    def insert_then_fail(*args: Any, **kwargs: Any) -> None:
        original(*args, **kwargs)
        raise RuntimeError("disk full")

    monkeypatch.setattr(store_jobs, "insert_rows", insert_then_fail)
    with pytest.raises(RuntimeError):
        make_job(repo, rows=10)
    assert (count(repo, "job"), count(repo, "row")) == (0, 0)


def test_fifty_thousand_rows(repo: SqlStore, make_job: MakeJob) -> None:
    job = make_job(repo, rows=50_000)
    assert job.total == 50_000
    assert count(repo, "row") == 50_000
    seen: list[int] = []
    after = 0
    while page := repo.pending_rows(job, after_id=after, limit=5_000):
        assert len(page) <= 5_000
        seen += [w.id for w in page]
        after = page[-1].id
    assert len(seen) == 50_000
    assert seen == sorted(set(seen))
    last = repo.pending_rows(job, after_id=seen[-2], limit=10)
    assert [w.custom_id for w in last] == ["r-50000"]


def test_pending_rows_pages_by_id(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, rows=7, model="gpt-4o-mini")
    make_job(repo, rows=3)  # another job's rows never show up
    first = repo.pending_rows(job, after_id=0, limit=3)
    assert [w.custom_id for w in first] == ["r-1", "r-2", "r-3"]
    second = repo.pending_rows(job, after_id=first[-1].id, limit=3)
    assert [w.custom_id for w in second] == ["r-4", "r-5", "r-6"]
    third = repo.pending_rows(job, after_id=second[-1].id, limit=3)
    assert [w.custom_id for w in third] == ["r-7"]
    assert repo.pending_rows(job, after_id=third[-1].id, limit=3) == []
    work = first[0]
    assert (work.job_seq, work.model, work.endpoint) == (job.seq, "gpt-4o-mini",
                                                         "/v1/chat/completions")
    assert work.body == {"messages": [{"role": "user", "content": "prompt 1"}]}


def test_pending_rows_skips_finished_rows(repo: Store, make_job: MakeJob,
                                          make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=4)
    ids_ = [w.id for w in repo.pending_rows(job, after_id=0, limit=10)]
    repo.save_outcomes(job.seq, [(ids_[0], make_outcome()), (ids_[2], make_outcome(False))],
                       now=NOW)
    assert [w.id for w in repo.pending_rows(job, after_id=0, limit=10)] == [ids_[1], ids_[3]]


def test_per_row_model_overrides_job_model(repo: Store, make_job: MakeJob) -> None:
    rows = [RowDraft(custom_id="a", body={}, model="backup"), RowDraft(custom_id="b", body={})]
    job = make_job(repo, rows=rows, model="gpt-4o-mini")
    assert [w.model for w in repo.pending_rows(job, after_id=0, limit=10)] == [
        "backup", "gpt-4o-mini"]


# -- list_jobs ------------------------------------------------------------------


def test_list_jobs_newest_first_with_paging(repo: Store, make_job: MakeJob) -> None:
    made = [make_job(repo, rows=1) for _ in range(5)]
    ws = made[0].workspace_id
    page, more = repo.list_jobs(ws, limit=2)
    assert [j.id for j in page] == [made[4].id, made[3].id]
    assert more
    page, more = repo.list_jobs(ws, limit=2, after=page[-1].id)
    assert [j.id for j in page] == [made[2].id, made[1].id]
    assert more
    page, more = repo.list_jobs(ws, limit=2, after=page[-1].id)
    assert [j.id for j in page] == [made[0].id]
    assert not more
    assert repo.list_jobs(ws, limit=2, after=made[0].id) == ([], False)


def test_list_jobs_before_a_job_pages_toward_the_newest(repo: Store,
                                                        make_job: MakeJob) -> None:
    """`before`: the newest `limit` jobs of those newer than it, still newest first;
    "more" then means newer ones (Anthropic's `before_id`)."""
    made = [make_job(repo, rows=1) for _ in range(5)]
    ws = made[0].workspace_id
    page, more = repo.list_jobs(ws, limit=2, before=made[0].id)
    assert ([j.id for j in page], more) == ([made[2].id, made[1].id], True)
    page, more = repo.list_jobs(ws, limit=2, before=page[0].id)
    assert ([j.id for j in page], more) == ([made[4].id, made[3].id], False)
    assert repo.list_jobs(ws, limit=2, before=made[4].id) == ([], False)


def test_a_deleted_job_is_found_nowhere_but_still_pages_a_listing(
        repo: Store, make_job: MakeJob) -> None:
    made = [make_job(repo, rows=1) for _ in range(3)]
    ws, middle = made[0].workspace_id, made[1]
    assert not repo.delete_job(middle.seq, now=NOW)  # not ended: refused
    repo.transition(middle.seq, "running", now=NOW)
    end(repo, middle, "completed")
    assert repo.delete_job(middle.seq, now=NOW)
    assert not repo.delete_job(middle.seq, now=NOW)  # once
    assert repo.get_job(middle.id) is None
    assert [j.id for j in repo.list_jobs(ws, limit=10)[0]] == [made[2].id, made[0].id]
    # a client deleting as it lists goes on from the job it deleted
    assert [j.id for j in repo.list_jobs(ws, limit=10, after=middle.id)[0]] == [made[0].id]
    assert [j.id for j in repo.list_jobs(ws, limit=10, before=middle.id)[0]] == [made[2].id]
    again = make_job(repo, rows=1)
    assert again.seq > made[2].seq  # the deleted job keeps its seq: nothing reuses it


def test_list_jobs_exact_limit_has_no_more(repo: Store, make_job: MakeJob) -> None:
    made = [make_job(repo, rows=1) for _ in range(3)]
    page, more = repo.list_jobs(made[0].workspace_id, limit=3)
    assert len(page) == 3
    assert not more


def test_list_jobs_unknown_after_is_empty(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo)
    assert repo.list_jobs(job.workspace_id, limit=10, after="0" * 32) == ([], False)


def test_list_jobs_status_filter(repo: Store, make_job: MakeJob) -> None:
    queued = make_job(repo)
    running = make_job(repo)
    repo.transition(running.seq, "running", now=NOW)
    ws = queued.workspace_id
    assert [j.id for j in repo.list_jobs(ws, limit=10, statuses=["running"])[0]] == [running.id]
    both = repo.list_jobs(ws, limit=10, statuses=["queued", "running"])[0]
    assert [j.id for j in both] == [running.id, queued.id]
    assert repo.list_jobs(ws, limit=10, statuses=[])[0] == []


def test_list_jobs_template_filter(repo: Store, make_job: MakeJob) -> None:
    template = make_job(repo, status="scheduled", cron="0 * * * *", next_run_at=NOW + 60)
    run = make_job(repo, template_id=template.id)
    make_job(repo)
    page, _ = repo.list_jobs(template.workspace_id, limit=10, template_id=template.id)
    assert [j.id for j in page] == [run.id]


def test_list_jobs_workspace_isolation(repo: Store, make_job: MakeJob) -> None:
    mine = make_job(repo, workspace="acme")
    theirs = make_job(repo, workspace="globex")
    assert [j.id for j in repo.list_jobs(mine.workspace_id, limit=10)[0]] == [mine.id]
    assert [j.id for j in repo.list_jobs(theirs.workspace_id, limit=10)[0]] == [theirs.id]
    # another workspace's job id is no cursor here
    assert repo.list_jobs(mine.workspace_id, limit=10, after=theirs.id) == ([], False)


def test_list_jobs_dialect_filter_pages_within_the_filtered_jobs(
        repo: Store, make_job: MakeJob) -> None:
    made = [make_job(repo, rows=1, dialect=d) for d in ("openai", "relay") * 3]
    ws = made[0].workspace_id
    openai = [j.id for j in made if j.dialect == "openai"][::-1]
    page, more = repo.list_jobs(ws, limit=2, dialects=["openai"])
    assert ([j.id for j in page], more) == (openai[:2], True)
    page, more = repo.list_jobs(ws, limit=2, after=page[-1].id, dialects=["openai"])
    assert ([j.id for j in page], more) == (openai[2:], False)  # no relay job after it
    page, more = repo.list_jobs(ws, limit=3, dialects=["openai"])
    assert (len(page), more) == (3, False)
    both, _ = repo.list_jobs(ws, limit=10, dialects=["openai", "relay"])
    assert [j.id for j in both] == [j.id for j in made[::-1]]
    assert repo.list_jobs(ws, limit=10, dialects=[]) == ([], False)


# -- scheduling -------------------------------------------------------------------


def test_queued_jobs_order(repo: Store, make_job: MakeJob) -> None:
    old_low = make_job(repo, priority=0)
    high = make_job(repo, priority=5)
    standard = make_job(repo, priority=1)
    expedited = make_job(repo, priority=1, tier="expedited")
    new_low = make_job(repo, priority=0)
    newer_high = make_job(repo, priority=5)
    running = make_job(repo, priority=99)
    repo.transition(running.seq, "running", now=NOW)
    make_job(repo, priority=99, status="scheduled", cron="0 * * * *", next_run_at=NOW)
    order = [j.id for j in repo.queued_jobs(10)]
    assert order == [expedited.id, high.id, newer_high.id, standard.id, old_low.id, new_low.id]
    assert [j.id for j in repo.queued_jobs(2)] == [expedited.id, high.id]


def test_transition_from_listed_source(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo)
    moved = repo.transition(job.seq, "running", now=NOW + 10,
                            started_at=NOW + 10)
    assert moved is not None
    assert moved.status == "running"
    assert moved.started_at == NOW + 10
    assert moved.stamps == {"queued": job.created_at, "running": NOW + 10}
    done = end(repo, job, "completed", now=NOW + 20)
    assert done is not None
    assert (done.stamps["completed"], done.finished_at) == (NOW + 20, NOW + 20)
    assert repo.get_job(job.id) == done


@pytest.mark.parametrize(("start", "target"), [
    ("queued", "finalizing"), ("queued", "queued"), ("scheduled", "running"),
    ("validating", "running"), ("cancelling", "running"), ("cancelling", "queued"),
])
def test_transition_the_table_refuses_does_nothing(repo: Store, make_job: MakeJob,
                                                    start: Status, target: Status) -> None:
    job = make_job(repo, status=start)
    assert repo.transition(job.seq, target, now=NOW) is None
    assert repo.get_job(job.id) == job
    assert repo.transition(99_999, "running", now=NOW) is None


@pytest.mark.parametrize("target", ["completed", "failed", "expired", "cancelled"])
def test_a_job_ends_only_through_end_job(repo: Store, make_job: MakeJob,
                                         target: Status) -> None:
    job = make_job(repo)
    with pytest.raises(ValueError, match="end_job"):
        repo.transition(job.seq, target, now=NOW)


def test_end_job_refuses_what_the_table_refuses(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, rows=2)
    assert end(repo, job, "completed") is None  # queued never completes directly
    assert end(repo, job, "cancelled") is None  # a cancel is recorded first
    assert repo.get_job(job.id) == job
    assert repo.row_counts(job.seq)["pending"] == 2


def test_requeue_running(repo: Store, make_job: MakeJob) -> None:
    running = make_job(repo)
    repo.transition(running.seq, "running", now=NOW)
    queued = make_job(repo)
    done = make_job(repo)
    end(repo, done, "failed", error="no model")
    requeued = repo.requeue_running(now=NOW + 100)
    assert [j.id for j in requeued] == [running.id]
    assert requeued[0].status == "queued"
    assert repo.get_job(queued.id).status == "queued"  # type: ignore[union-attr]
    assert repo.get_job(done.id).status == "failed"  # type: ignore[union-attr]
    assert repo.requeue_running(now=NOW + 200) == []


def test_requeue_keeps_finished_rows(repo: Store, make_job: MakeJob,
                                     make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=3)
    repo.transition(job.seq, "running", now=NOW)
    first = repo.pending_rows(job, after_id=0, limit=1)[0]
    repo.save_outcomes(job.seq, [(first.id, make_outcome())], now=NOW)
    (requeued,) = repo.requeue_running(now=NOW + 1)
    assert requeued.completed == 1
    assert [w.custom_id for w in repo.pending_rows(requeued, after_id=0, limit=10)] == [
        "r-2", "r-3"]


# -- cancel -----------------------------------------------------------------------


def test_end_job_fails_only_pending_rows(repo: Store, make_job: MakeJob,
                                         make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=5)
    repo.transition(job.seq, "running", now=NOW)
    work = repo.pending_rows(job, after_id=0, limit=2)
    repo.save_outcomes(job.seq, [(work[0].id, make_outcome()),
                                 (work[1].id, make_outcome(False, dead_letter=True))], now=NOW)
    repo.transition(job.seq, "cancelling", now=NOW + 1)
    ended = end(repo, job, "cancelled", now=NOW + 2, unrun=("canceled", "canceled"))
    assert ended is not None
    assert ended.status == "cancelled"
    assert ended.finished_at == NOW + 2
    assert (ended.completed, ended.failed, ended.dead_letter) == (1, 4, 1)
    counts = repo.row_counts(job.seq)
    assert counts == {"completed": 1, "failed": 4, "dead_letter": 1, "pending": 0}
    rows = list(repo.rows(job.seq))
    assert [(r.error, r.error_code) for r in rows[2:]] == [("canceled", "canceled")] * 3
    assert rows[1].error == "upstream_error: 503"


def test_end_job_of_a_cancelled_queued_job(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, rows=2)
    repo.transition(job.seq, "cancelling", now=NOW)
    ended = end(repo, job, "cancelled", unrun=("x", "x"))
    assert ended is not None
    assert (ended.status, ended.failed) == ("cancelled", 2)


def test_end_job_of_an_ended_job_changes_nothing(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, rows=2)
    failed = end(repo, job, "failed", error="no model")
    assert failed is not None and failed.error == "no model"
    assert end(repo, job, "expired", unrun=("x", "x"), now=NOW + 1) is None
    stored = repo.get_job(job.id)
    assert stored is not None
    assert (stored.status, stored.failed) == ("failed", 0)
    assert repo.row_counts(job.seq)["pending"] == 2


def test_end_job_records_result_files_and_queues_the_webhook(
        repo: Store, make_job: MakeJob, tmp_path: Path) -> None:
    job = make_job(repo, rows=1, webhook_url="https://example.com/hook")
    repo.transition(job.seq, "running", now=NOW)
    output = FileRecord(id="file-" + "a" * 32, workspace_id=job.workspace_id,
                        filename="out.jsonl", purpose="batch_output", bytes=10,
                        created_at=NOW, path=str(tmp_path / "out"))
    ended = end(repo, job, "expired", unrun=("expired", "expired"), files=[output],
                output_file_id=output.id)
    assert ended is not None
    assert (ended.status, ended.output_file_id, ended.error_file_id) == (
        "expired", output.id, None)
    assert repo.file(output.id) == output
    assert [j.id for j in repo.unsent_webhooks()] == [job.id]


# -- dead-letter retry --------------------------------------------------------------


def dead_lettered(repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> tuple[int, str]:
    job = make_job(repo, rows=4, priority=2, webhook_url="https://h.example/x",
                   name="October")
    work = repo.pending_rows(job, after_id=0, limit=10)
    repo.save_outcomes(job.seq, [
        (work[0].id, make_outcome(False, dead_letter=True)),
        (work[1].id, make_outcome()),
        (work[2].id, make_outcome(False, dead_letter=True)),
        (work[3].id, make_outcome(False)),  # permanent: failed, not dead-lettered
    ], now=NOW)
    return job.seq, job.id


def test_retry_dead_letter_all(repo: Store, make_job: MakeJob,
                               make_outcome: MakeOutcome) -> None:
    seq, source_id = dead_lettered(repo, make_job, make_outcome)
    new_id = ids.relay_job_id()
    retry = repo.retry_dead_letter(seq, new_id=new_id, custom_ids=None, now=NOW + 50)
    assert retry is not None
    assert retry.id == new_id
    assert (retry.status, retry.total, retry.priority) == ("queued", 2, 2)
    assert retry.name == "October (dead-letter retry)"
    assert retry.webhook_url == "https://h.example/x"
    assert retry.created_at == NOW + 50
    rows = list(repo.rows(retry.seq))
    assert [r.custom_id for r in rows] == ["r-1", "r-3"]
    assert all(r.status == "pending" and not r.dead_letter for r in rows)
    source = repo.get_job(source_id)
    assert source is not None and source.dead_letter == 2  # the source is untouched


def test_retry_dead_letter_by_custom_ids(repo: Store, make_job: MakeJob,
                                         make_outcome: MakeOutcome) -> None:
    seq, _ = dead_lettered(repo, make_job, make_outcome)
    retry = repo.retry_dead_letter(seq, new_id=ids.relay_job_id(), custom_ids=["r-3", "r-2"],
                                   now=NOW)
    assert retry is not None
    assert [r.custom_id for r in repo.rows(retry.seq)] == ["r-3"]


def test_retry_dead_letter_none(repo: SqlStore, make_job: MakeJob,
                                make_outcome: MakeOutcome) -> None:
    seq, _ = dead_lettered(repo, make_job, make_outcome)
    before = count(repo, "job")
    assert repo.retry_dead_letter(seq, new_id=ids.relay_job_id(), custom_ids=["r-2", "r-4"],
                                  now=NOW) is None
    clean = make_job(repo)
    assert repo.retry_dead_letter(clean.seq, new_id=ids.relay_job_id(), custom_ids=None,
                                  now=NOW) is None
    assert count(repo, "job") == before + 1


def test_a_row_is_re_driven_once_unless_forced(repo: Store, make_job: MakeJob,
                                               make_outcome: MakeOutcome) -> None:
    seq, source_id = dead_lettered(repo, make_job, make_outcome)
    first = repo.retry_dead_letter(seq, new_id=ids.relay_job_id(), custom_ids=["r-1"],
                                   now=NOW)
    assert first is not None and first.retry_of == source_id
    again = repo.retry_dead_letter(seq, new_id=ids.relay_job_id(), custom_ids=None, now=NOW)
    assert again is not None and [r.custom_id for r in repo.rows(again.seq)] == ["r-3"]
    assert repo.retry_dead_letter(seq, new_id=ids.relay_job_id(), custom_ids=None,
                                  now=NOW) is None  # everything went somewhere already
    went = {r.custom_id: r.redriven_to for r in repo.dead_letter_rows(seq)}
    assert went == {"r-1": first.id, "r-3": again.id}
    forced = repo.retry_dead_letter(seq, new_id=ids.relay_job_id(), custom_ids=None,
                                    now=NOW, force=True)
    assert forced is not None and forced.total == 2


def test_redrivable_rows_are_what_a_retry_would_take(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    seq, _ = dead_lettered(repo, make_job, make_outcome)
    assert [r.custom_id for r in repo.redrivable_rows(seq)] == ["r-1", "r-3"]
    assert [r.custom_id for r in repo.redrivable_rows(seq, custom_ids=["r-3", "r-2"])] == [
        "r-3"]
    repo.retry_dead_letter(seq, new_id=ids.relay_job_id(), custom_ids=["r-1"], now=NOW)
    assert [r.custom_id for r in repo.redrivable_rows(seq)] == ["r-3"]
    assert [r.custom_id for r in repo.redrivable_rows(seq, force=True)] == ["r-1", "r-3"]
    assert repo.redrivable_rows(seq)[0].body == {
        "messages": [{"role": "user", "content": "prompt 3"}]}


def retry_input(repo: Store, seq: int, tmp_path: Path) -> FileRecord:
    job = repo.job_by_seq(seq)
    assert job is not None
    return FileRecord(id=ids.file_id(), workspace_id=job.workspace_id,
                      filename="retry.jsonl", purpose="batch", bytes=42,
                      created_at=NOW + 50, path=str(tmp_path / "retry"))


def test_retry_with_an_input_file_records_it_and_its_window(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome, tmp_path: Path) -> None:
    seq, source_id = dead_lettered(repo, make_job, make_outcome)
    record = retry_input(repo, seq, tmp_path)
    retry = repo.retry_dead_letter(seq, new_id=ids.openai_batch_id(), custom_ids=None,
                                   now=NOW + 50, input_file=record,
                                   input_rows=[r.id for r in repo.redrivable_rows(seq)],
                                   expires_at=NOW + 50 + 86_400)
    assert retry is not None
    assert (retry.input_file_id, retry.expires_at, retry.retry_of) == (
        record.id, NOW + 50 + 86_400, source_id)
    assert repo.file(record.id) == record
    assert [r.custom_id for r in repo.rows(retry.seq)] == ["r-1", "r-3"]


def test_retry_with_an_input_file_takes_all_its_rows_or_none(
        repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome, tmp_path: Path) -> None:
    seq, _ = dead_lettered(repo, make_job, make_outcome)
    written = [r.id for r in repo.redrivable_rows(seq)]
    repo.retry_dead_letter(seq, new_id=ids.relay_job_id(), custom_ids=["r-3"], now=NOW)
    jobs, files = count(repo, "job"), count(repo, "file")
    record = retry_input(repo, seq, tmp_path)  # written for r-1 and r-3; r-3 went meanwhile
    assert repo.retry_dead_letter(seq, new_id=ids.openai_batch_id(), custom_ids=None,
                                  now=NOW, input_file=record, input_rows=written) is None
    assert (count(repo, "job"), count(repo, "file")) == (jobs, files)
    assert [r.custom_id for r in repo.redrivable_rows(seq)] == ["r-1"]


def test_insert_chunking_keeps_positions(repo: SqlStore, make_job: MakeJob) -> None:
    n = rows_module.INSERT_CHUNK * 2 + 7
    job = make_job(repo, rows=n)
    positions = [p for (p,) in repo.db.execute_sql(
        repo.sql('SELECT position FROM "row" WHERE job_id = {p} ORDER BY id'), (job.seq,))]
    assert positions == list(range(1, n + 1))
    bodies = [json.loads(b) for (b,) in repo.db.execute_sql(
        repo.sql('SELECT body FROM "row" WHERE job_id = {p} AND position = {p}'), (job.seq, n))]
    assert bodies == [{"messages": [{"role": "user", "content": f"prompt {n}"}]}]


# -- results, a page at a time -------------------------------------------------------


def test_rows_page_in_input_order_after_a_position(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, rows=5)
    first = list(repo.rows(job.seq, limit=2))
    assert [r.custom_id for r in first] == ["r-1", "r-2"]
    rest = list(repo.rows(job.seq, after_position=first[-1].position, limit=10))
    assert [r.custom_id for r in rest] == ["r-3", "r-4", "r-5"]
    assert list(repo.rows(job.seq, after_position=5, limit=10)) == []


def test_rows_come_a_page_at_a_time_in_input_order(repo: Store, make_job: MakeJob,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("daemon.store.rows.ROWS_PAGE", 2)
    job = make_job(repo, rows=5)
    assert [r.custom_id for r in repo.rows(job.seq)] == [f"r-{i}" for i in range(1, 6)]
    assert [r.custom_id for r in repo.rows(job.seq, after_position=1, limit=3)] == [
        "r-2", "r-3", "r-4"]
    assert [r.custom_id for r in repo.rows(job.seq, limit=4)] == [f"r-{i}" for i in range(1, 5)]
    assert list(repo.rows(job.seq, after_position=5)) == []


def test_a_rows_executor_calls_are_stored_with_it_apart_from_its_attempts(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    """A tool-calling row's executor calls come back with the row (its detail, its
    dead-letter entry), in order; its attempts stay the model's."""
    from daemon.domain.outcome import ExecutorCall

    job = make_job(repo, rows=2)
    work = repo.pending_rows(job, after_id=0, limit=10)
    calls = tuple(ExecutorCall(round=1, executor="http", status_code=503,
                               error="the executor answered 503", duration_ms=12 + n,
                               started_at=NOW + n) for n in range(3))
    repo.save_outcomes(job.seq, [
        (work[0].id, make_outcome(False, dead_letter=True, executor_calls=calls)),
        (work[1].id, make_outcome())], now=NOW)

    row = repo.row(job.seq, work[0].custom_id)
    assert row is not None and len(row.attempt_log) == row.attempts == 1
    assert [(c["round"], c["executor"], c["status_code"], c["duration_ms"])
            for c in row.executor_calls] == [(1, "http", 503, 12), (1, "http", 503, 13),
                                            (1, "http", 503, 14)]
    assert [r.executor_calls for r in repo.dead_letter_rows(job.seq)] == [row.executor_calls]
    other = repo.row(job.seq, work[1].custom_id)
    assert other is not None and other.executor_calls == ()
