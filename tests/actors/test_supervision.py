"""The scheduler watching its supervisors: a dead one is noticed on the next tick. The
supervisors here are stand-ins the test stops by hand, so each interleaving of
messages is exact rather than left to thread timing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pykka
import pytest

from daemon.domain.jobs import CANCELLING, COMPLETED, Job
from daemon.store.interface import Ending
from tests.actors.conftest import Running
from tests.actors.harness import FakeClock, Upstream, wait_until


class StandIn(pykka.ThreadingActor):
    """A supervisor that takes every message and does nothing."""

    def tick(self, now: float) -> None: ...
    def drain(self) -> None: ...
    def cancel(self) -> None: ...
    def expire(self) -> None: ...


class StandIns:
    """A supervisor factory: stand-ins, or real supervisors once `real` is set."""

    def __init__(self) -> None:
        self.started: list[tuple[Job, Any]] = []
        self.real: Any = None

    def __call__(self, job: Job, scheduler: Any) -> Any:
        real = self.real
        supervisor = real(job, scheduler) if real is not None else StandIn.start().proxy()
        self.started.append((job, supervisor))
        return supervisor

    def stop_last(self) -> str:
        """Stop the last supervisor started; its urn, as it tells `job_finished`."""
        ref = self.started[-1][1].actor_ref
        ref.stop(block=True)
        return str(ref.actor_urn)


@pytest.fixture
def stand_ins() -> StandIns:
    return StandIns()


def died_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "relay.scheduler" and r.levelno >= logging.ERROR and "died" in r.message]


def tick(relay: Running) -> None:
    relay.services.scheduler.tick(relay.daemon.clock()).get(timeout=5)


def test_a_dead_supervisors_job_is_requeued_and_runs_again(
        start_daemon: Callable[..., Running], upstream: Upstream, stand_ins: StandIns,
        caplog: pytest.LogCaptureFixture) -> None:
    relay = start_daemon(upstream, supervisors=stand_ins)
    job = relay.submit(["survives"])
    wait_until(lambda: stand_ins.started, what="the first supervisor")
    stand_ins.real = type(relay.daemon)._start_supervisor.__get__(relay.daemon)

    stand_ins.stop_last()  # dies without a word
    tick(relay)

    wait_until(lambda: relay.job(job).status == COMPLETED, what="the job to run again")
    assert len(stand_ins.started) == 2
    assert died_logs(caplog)
    assert upstream.prompts() == ["survives"]


def test_a_supervisor_that_finished_is_not_reported_dead(start_daemon: Callable[..., Running],
                                                         upstream: Upstream, stand_ins: StandIns,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    relay = start_daemon(upstream, supervisors=stand_ins)
    job = relay.submit(["done"])
    wait_until(lambda: stand_ins.started, what="the supervisor")
    now = relay.daemon.clock()
    # What JobSupervisor._finish does: end the job, tell job_finished, stop itself. A tick
    # already in the scheduler's inbox runs between the stop and job_finished.
    assert relay.repo.end_job(job.seq, Ending(COMPLETED), now=now) is not None
    urn = stand_ins.stop_last()
    tick(relay)
    relay.services.scheduler.job_finished(job.seq, urn).get(timeout=5)

    assert relay.job(job).status == COMPLETED
    assert died_logs(caplog) == [], "a normal finish was logged as a dead supervisor"


def test_a_supervisor_that_left_a_running_job_is_not_reported_dead_nor_its_successor_forgotten(
        start_daemon: Callable[..., Running], upstream: Upstream, stand_ins: StandIns,
        caplog: pytest.LogCaptureFixture) -> None:
    relay = start_daemon(upstream, supervisors=stand_ins)
    job = relay.submit(["left"])
    wait_until(lambda: stand_ins.started, what="the first supervisor")
    # What JobSupervisor._finish does when it leaves a job still running (paused, or to
    # another node): settle it, tell job_finished, stop. A tick already in the
    # scheduler's inbox runs between the stop and job_finished, and a free slot takes
    # the job again at once.
    relay.daemon.membership.settle(job.seq)
    urn = stand_ins.stop_last()
    tick(relay)
    assert died_logs(caplog) == [], "a supervisor that left was logged as dead"
    assert len(stand_ins.started) == 2
    successor = stand_ins.started[-1][1]

    relay.services.scheduler.job_finished(job.seq, urn).get(timeout=5)  # late, stale
    tick(relay)

    scheduler = relay.services.scheduler.actor_ref.proxy()  # untyped: reads its state
    running = scheduler.running.get(timeout=5)
    assert running[job.seq].actor_ref is successor.actor_ref, "the successor was forgotten"
    assert len(stand_ins.started) == 2, "a second supervisor runs the same job here"


def test_a_dead_supervisor_of_a_cancelling_job_ends_it_cancelled(
        start_daemon: Callable[..., Running], upstream: Upstream, stand_ins: StandIns) -> None:
    relay = start_daemon(upstream, supervisors=stand_ins)
    job = relay.submit(["one", "two"])
    wait_until(lambda: stand_ins.started, what="the supervisor")
    now = relay.daemon.clock()
    assert relay.repo.transition(job.seq, CANCELLING, now=now) is not None

    stand_ins.stop_last()
    tick(relay)

    try:
        wait_until(lambda: relay.job(job).status == "cancelled", timeout=1,
                   what="the cancelling job to end")
    except TimeoutError:
        pytest.fail(f"the job is left {relay.job(job).status!r} after its supervisor died")
    assert [r.error for r in relay.repo.rows(job.seq)] == ["canceled", "canceled"]


def test_a_free_slot_takes_a_running_job_that_nothing_runs(start_daemon: Callable[..., Running],
                                                           upstream: Upstream,
                                                           clock: FakeClock) -> None:
    relay = start_daemon(upstream, gateway={"max_running_jobs": 1})
    blocker = relay.submit(["hold BLOCK"], tag="blocker")
    wait_until(lambda: upstream.seen("hold BLOCK"), what="the blocker to run")
    orphan = relay.submit(["orphan"], tag="orphan")
    # As if its supervisor had died and its leases lapsed: the store says running, and
    # no node runs it. The slot the blocker frees takes it.
    assert relay.repo.transition(orphan.seq, "running", now=clock()) is not None
    upstream.gate.set()

    wait_until(lambda: relay.job(orphan).status == COMPLETED, what="the orphan to run")
    assert relay.job(blocker).status == COMPLETED
    assert upstream.prompts().count("orphan") == 1
