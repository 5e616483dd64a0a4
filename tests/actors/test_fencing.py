"""Fencing on real threads: a row whose lease this node may have lost goes no further
here and is leased again; an outcome under a lease that has moved on is not stored,
and the row runs under its new lease."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from daemon.domain.jobs import Job
from tests.actors.conftest import Running
from tests.actors.harness import Upstream, wait_until


def completed(relay: Running, job: Job) -> Job:
    done: Job = wait_until(lambda: relay.job(job) if relay.job(job).status == "completed" else None,
                      what="the job to complete")
    return done


def test_rows_leased_before_a_lapse_start_only_once_leased_again(
        start_daemon: Callable[..., Running], upstream: Upstream) -> None:
    relay = start_daemon(upstream, gateway={"batch_concurrency": 1})
    job = relay.submit(["first BLOCK", "second", "third"])
    wait_until(lambda: upstream.seen("first BLOCK"), what="the first row on the wire")
    relay.daemon.membership.epoch += 1  # as a heartbeat after a silence past the lease
    upstream.gate.set()  # the first row's answer arrives; the others wait for its slot

    done = completed(relay, job)

    assert (done.completed, done.failed) == (3, 0)
    assert [upstream.count(p) for p in ("first BLOCK", "second", "third")] == [1, 1, 1]
    assert relay.repo.row_counts(job.seq)["completed"] == 3


def test_an_outcome_under_a_lease_that_moved_on_is_not_stored(
        start_daemon: Callable[..., Running], upstream: Upstream,
        caplog: pytest.LogCaptureFixture) -> None:
    relay = start_daemon(upstream, gateway={"batch_concurrency": 1})
    caplog.set_level(logging.WARNING, logger="relay.supervisor")
    job = relay.submit(["only BLOCK"])
    wait_until(lambda: upstream.seen("only BLOCK"), what="the row on the wire")
    # Another lease of the row meanwhile (as a node that took it over would take it).
    relay.repo.db.execute_sql(  # type: ignore[attr-defined]
        'UPDATE "row" SET lease_token = lease_token + 1 WHERE job_id = ?', (job.seq,))
    upstream.gate.set()

    done = completed(relay, job)

    assert (done.completed, done.input_tokens) == (1, 3)  # stored once: the second run
    assert upstream.count("only BLOCK") == 2
    assert "1 outcomes not stored: another node leased those rows" in caplog.text
