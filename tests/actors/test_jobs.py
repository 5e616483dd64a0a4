"""A running job's bookkeeping on real threads: outcomes reach the store as soon as
they finish (group commit, no timer), and a job whose model is gone fails as a whole."""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Any

import pytest

from daemon.domain.jobs import Job
from daemon.store.interface import Flushed
from tests.actors.conftest import Running
from tests.actors.harness import FakeClock, Upstream, wait_until


def test_a_finished_row_is_stored_while_others_still_run(start_daemon: Callable[..., Running],
                                                         upstream: Upstream) -> None:
    relay = start_daemon(upstream)
    job = relay.submit(["fast", "slow BLOCK"])
    wait_until(lambda: upstream.seen("slow BLOCK") and upstream.seen("fast"), what="both rows")

    # No clock is advanced: the write starts as soon as the outcome arrives.
    wait_until(lambda: relay.repo.row_counts(job.seq)["completed"] == 1, what="the flush")
    assert relay.job(job).completed == 1
    assert relay.job(job).status == "running"


def test_a_job_whose_model_is_gone_fails_without_running_rows(start_daemon: Callable[..., Running],
                                                              upstream: Upstream) -> None:
    relay = start_daemon(upstream)
    job = relay.submit(["anything"], model="retired-model")

    failed = wait_until(lambda: relay.job(job) if relay.job(job).status == "failed" else None,
                        what="the job to fail")

    assert "retired-model" in (failed.error or "")
    assert upstream.calls == []
    assert relay.repo.row_counts(job.seq)["pending"] == 1


def test_a_failed_write_is_kept_and_tried_again_without_rerunning_rows(
        start_daemon: Callable[..., Running], upstream: Upstream, clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    relay = start_daemon(upstream)
    save = relay.repo.save_outcomes
    failing = {"on": True, "refused": 0}

    def flaky_save(*args: Any, **kwargs: Any) -> Flushed:
        if failing["on"]:
            failing["refused"] += 1
            raise OSError("disk full")
        return save(*args, **kwargs)

    monkeypatch.setattr(relay.repo, "save_outcomes", flaky_save)
    job = relay.submit(["one", "two"])
    wait_until(lambda: upstream.seen("one") and upstream.seen("two"), what="both rows")
    wait_until(lambda: failing["refused"] >= 1, what="a refused write")
    assert relay.repo.row_counts(job.seq)["completed"] == 0

    failing["on"] = False
    clock.advance(60)  # past any backoff: the scheduler's tick tries the write again
    done = wait_until(lambda: relay.job(job) if relay.job(job).status == "completed" else None,
                      what="the job to complete")

    assert done.completed == 2
    assert upstream.count("one") == upstream.count("two") == 1


def test_an_ending_the_store_refuses_is_tried_again_on_a_later_tick(
        start_daemon: Callable[..., Running], upstream: Upstream, clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    relay = start_daemon(upstream)
    end = relay.repo.end_job
    refused: list[bool] = []

    def full_disk(*args: Any, **kwargs: Any) -> Job | None:
        if not refused:
            refused.append(True)
            raise OSError(errno.ENOSPC, "No space left on device")
        return end(*args, **kwargs)

    monkeypatch.setattr(relay.repo, "end_job", full_disk)
    job = relay.submit(["only"])
    wait_until(lambda: refused, what="the refused ending")
    assert relay.job(job).status == "running"

    clock.advance(5)  # past the retry's wait: the next tick ends it
    wait_until(lambda: relay.job(job).status == "completed", what="the job to end")
    assert upstream.count("only") == 1
