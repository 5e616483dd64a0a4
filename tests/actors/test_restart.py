"""Graceful stop and restart on the same data dir: stored outcomes stay stored, the rest
runs after the restart, and no row goes upstream again once its outcome is stored."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest

from daemon.dialects.relay.render import relay_result
from daemon.domain import cron, ids
from daemon.domain.jobs import Job, JobDraft, RowDraft
from daemon.store.faults import StoreUnavailable
from daemon.store.sqlite import SqliteStore
from tests.actors.conftest import Running
from tests.actors.harness import PRIMARY, FakeClock, Upstream, answer, wait_until

ROWS = 20
INSTANT = 6  # rows answered before the upstream starts blocking
CONCURRENCY = 2


def prompts() -> list[str]:
    return [f"row {i}" if i <= INSTANT else f"row {i} BLOCK" for i in range(1, ROWS + 1)]


def test_stop_mid_job_then_restart_finishes_without_resending(start_daemon: Callable[..., Running],
                                                              upstream: Upstream) -> None:
    first = start_daemon(upstream, gateway={"batch_concurrency": CONCURRENCY})
    job = first.submit(prompts())
    wait_until(lambda: upstream.in_flight() == CONCURRENCY and upstream.seen(f"row {INSTANT + 2}"),
               what="the rows after the instant ones to block in the upstream")

    first.stop()

    stopped = first.repo.job_by_seq(job.seq)
    assert stopped is not None and stopped.status == "running"
    counts = first.repo.row_counts(job.seq)
    assert counts == {"completed": INSTANT, "failed": 0, "dead_letter": 0,
                      "pending": ROWS - INSTANT}
    assert stopped.completed == INSTANT
    stored = {r.body["messages"][0]["content"] for r in first.repo.rows(job.seq)
              if r.status == "completed"}

    again = Upstream()
    again.gate.set()
    second = start_daemon(again, gateway={"batch_concurrency": CONCURRENCY})
    wait_until(lambda: second.job(job).status == "completed", what="the job after restart")

    resent = set(again.prompts()) & stored
    assert not resent, f"rows sent again after their outcome was stored: {resent}"
    sent_twice = (Counter(upstream.prompts()) + Counter(again.prompts())) - Counter(prompts())
    assert sum(sent_twice.values()) <= CONCURRENCY
    results = [relay_result(r) for r in second.repo.rows(job.seq)]
    assert [r["custom_id"] for r in results] == [f"job-{i}" for i in range(1, ROWS + 1)]
    assert [r.get("content") for r in results] == [answer(p) for p in prompts()]
    done = second.job(job)
    assert (done.completed, done.failed) == (ROWS, 0)
    assert second.repo.row_counts(job.seq)["completed"] == ROWS


def test_a_cancel_cut_short_by_a_stop_ends_at_the_next_start(start_daemon: Callable[..., Running],
                                                             upstream: Upstream) -> None:
    first = start_daemon(upstream, gateway={"batch_concurrency": 1})
    job = first.submit(["held BLOCK", "never sent"])
    wait_until(lambda: upstream.seen("held BLOCK"), what="the first row in flight")
    cancelling = first.repo.transition(job.seq, "cancelling",
                                       now=first.daemon.clock())
    assert cancelling is not None
    acknowledged = threading.Event()
    first.services.scheduler.cancel(job.seq, acknowledged)
    assert acknowledged.wait(5)

    first.stop()
    stored = first.repo.job_by_seq(job.seq)
    assert stored is not None and stored.status == "cancelling"

    second = start_daemon(Upstream())
    wait_until(lambda: second.job(job).status == "cancelled", what="the cancel to end")
    assert [r.error for r in second.repo.rows(job.seq)] == ["canceled", "canceled"]
    assert second.job(job).failed == 2
    assert upstream.prompts() == ["held BLOCK"]


def test_ticks_missed_while_stopped_spawn_one_run_at_start(start_daemon: Callable[..., Running],
                                                           upstream: Upstream,
                                                           clock: FakeClock) -> None:
    first = start_daemon(upstream)
    now = clock()
    template = first.repo.create_job(JobDraft(
        id=ids.relay_job_id(), workspace_id=first.workspace.id, dialect="relay",
        name="hourly", model=PRIMARY, endpoint="/v1/chat/completions", status="scheduled",
        priority=0, created_at=now, cron="*/5 * * * *", next_run_at=cron.next_after(
            "*/5 * * * *", now)), [RowDraft(custom_id="only", body={
                "messages": [{"role": "user", "content": "report"}]})])
    first.stop()

    clock.advance(3 * 3600)  # 36 ticks missed
    second = start_daemon(upstream)

    runs = wait_until(lambda: second.repo.list_jobs(
        first.workspace.id, limit=10, template_id=template.id)[0], what="the catch-up run")
    wait_until(lambda: second.job(runs[0]).status == "completed", what="the run to finish")
    assert len(second.repo.list_jobs(first.workspace.id, limit=10,
                                     template_id=template.id)[0]) == 1
    assert (second.job(template).next_run_at or 0) > clock()
    assert upstream.prompts() == ["report"]


def test_a_store_that_fails_the_recovery_at_start_does_not_kill_the_scheduler(
        start_daemon: Callable[..., Running], upstream: Upstream,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler's first act is to deal with what a previous process left; a store
    fault then used to kill the actor (its exception escaped `on_start`). Now the next
    ticks try again, and the jobs left running run once the store takes it."""
    first = start_daemon(upstream)
    job = first.submit(["left BLOCK"])
    wait_until(lambda: upstream.seen("left BLOCK"), what="the row in flight")
    first.stop()

    real = SqliteStore.requeue_running
    refused: list[int] = []

    def flaky(self: SqliteStore, *, now: float) -> list[Job]:
        if len(refused) < 3:
            refused.append(1)
            raise StoreUnavailable("database is locked")
        return real(self, now=now)

    monkeypatch.setattr(SqliteStore, "requeue_running", flaky)
    again = Upstream()
    again.gate.set()
    second = start_daemon(again)
    wait_until(lambda: second.job(job).status == "completed", what="the job after the fault")
    assert len(refused) == 3
    assert second.daemon.scheduler.actor_ref.is_alive()
