"""A running job's bookkeeping on real threads: outcomes reach the store within the
flush interval, and a job whose model is gone fails as a whole."""

from __future__ import annotations

from tests.actors.harness import wait_until


def test_a_finished_row_is_stored_within_the_flush_interval(start_daemon, upstream, clock):
    relay = start_daemon(upstream)
    job = relay.submit(["fast", "slow BLOCK"])
    wait_until(lambda: upstream.seen("slow BLOCK") and upstream.seen("fast"), what="both rows")

    clock.advance(1.5)  # past the one-second flush interval

    wait_until(lambda: relay.repo.row_counts(job.seq)["completed"] == 1, what="the flush")
    assert relay.job(job).completed == 1
    assert relay.job(job).status == "running"


def test_a_job_whose_model_is_gone_fails_without_running_rows(start_daemon, upstream):
    relay = start_daemon(upstream)
    job = relay.submit(["anything"], model="retired-model")

    failed = wait_until(lambda: relay.job(job) if relay.job(job).status == "failed" else None,
                        what="the job to fail")

    assert "retired-model" in (failed.error or "")
    assert upstream.calls == []
    assert relay.repo.row_counts(job.seq)["pending"] == 1
