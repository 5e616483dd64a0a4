"""Cron templates in the store: which are due, and one run per tick."""

from __future__ import annotations

from daemon.domain import ids
from daemon.domain.jobs import Job, RowDraft
from daemon.store.interface import Store
from tests.store.conftest import NOW, MakeJob, end

HOUR = 3600.0


def make_template(repo: Store, make_job: MakeJob, **overrides: object) -> Job:
    fields: dict[str, object] = {"status": "scheduled", "cron": "0 * * * *",
                                 "next_run_at": NOW + HOUR, "priority": 4,
                                 "webhook_url": "https://h.example/x", "tier": "expedited"}
    return make_job(repo, **(fields | overrides))


def test_due_templates(repo: Store, make_job: MakeJob) -> None:
    later = make_template(repo, make_job, next_run_at=NOW + 2 * HOUR)
    sooner = make_template(repo, make_job, next_run_at=NOW + HOUR)
    make_job(repo, next_run_at=NOW)  # a queued job with a time is no template
    cancelled = make_template(repo, make_job, next_run_at=NOW)
    repo.transition(cancelled.seq, "cancelling", now=NOW)
    end(repo, cancelled, "cancelled")
    assert repo.due_templates(NOW + HOUR - 1) == []
    assert [t.id for t in repo.due_templates(NOW + HOUR)] == [sooner.id]
    assert [t.id for t in repo.due_templates(NOW + 3 * HOUR)] == [sooner.id, later.id]


def test_spawn_run_copies_the_template(repo: Store, make_job: MakeJob) -> None:
    rows = [RowDraft(custom_id="a", body={"messages": [{"role": "user", "content": "x"}]}),
            RowDraft(custom_id="b", body={"messages": [{"role": "user", "content": "y"}]},
                     model="backup")]
    template = make_template(repo, make_job, rows=rows)
    run_id = ids.relay_job_id()
    tick = NOW + HOUR
    run = repo.spawn_run(template, tick=tick, next_run_at=tick + HOUR, run_id=run_id,
                         now=tick + 3)
    assert run is not None
    assert run.id == run_id
    assert run.status == "queued"
    assert run.template_id == template.id
    assert run.cron is None and not run.is_template
    assert (run.total, run.completed, run.failed) == (2, 0, 0)
    assert (run.priority, run.tier, run.webhook_url) == (4, "expedited", "https://h.example/x")
    assert run.created_at == tick + 3
    assert [(r.custom_id, r.position, r.body, r.status) for r in repo.rows(run.seq)] == [
        (r.custom_id, r.position, r.body, "pending") for r in repo.rows(template.seq)]
    assert [w.model for w in repo.pending_rows(run, after_id=0, limit=10)] == [
        "gpt-4o-mini", "backup"]
    after = repo.get_job(template.id)
    assert after is not None
    assert after.last_run_id == run_id
    assert after.next_run_at == tick + HOUR
    assert after.status == "scheduled"
    assert repo.queued_jobs(10) == [run]


def test_same_tick_spawns_once(repo: Store, make_job: MakeJob) -> None:
    template = make_template(repo, make_job)
    tick = NOW + HOUR
    first = repo.spawn_run(template, tick=tick, next_run_at=tick + HOUR,
                           run_id=ids.relay_job_id(), now=tick)
    again = repo.spawn_run(template, tick=tick, next_run_at=tick + HOUR,
                           run_id=ids.relay_job_id(), now=tick + 1)
    assert first is not None
    assert again is None
    runs, _ = repo.list_jobs(template.workspace_id, limit=10, template_id=template.id)
    assert [r.id for r in runs] == [first.id]


def test_cancelled_template_spawns_nothing(repo: Store, make_job: MakeJob) -> None:
    template = make_template(repo, make_job)
    repo.transition(template.seq, "cancelling", now=NOW)
    end(repo, template, "cancelled")
    assert repo.spawn_run(template, tick=NOW + HOUR, next_run_at=NOW + 2 * HOUR,
                          run_id=ids.relay_job_id(), now=NOW + HOUR) is None
    assert repo.queued_jobs(10) == []
