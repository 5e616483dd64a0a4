"""Fixtures for actor tests: a real Daemon (store, router, actors) on a temp SQLite
file, fed through the repo and the scheduler, no HTTP."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon.actors.scheduler import SupervisorFactory
from daemon.domain import ids
from daemon.domain.jobs import QUEUED, Job, JobDraft, RowDraft
from daemon.runtime import Daemon
from daemon.store.interface import Store
from tests.actors.harness import (
    PRIMARY,
    FakeClock,
    Upstream,
    actor_state,
    make_config,
    make_daemon,
    stop_daemon,
)


class Running:
    """A started Daemon and what tests reach through it."""

    def __init__(self, daemon: Daemon, *, supervisors: SupervisorFactory | None = None) -> None:
        self.daemon = daemon
        if supervisors is not None:  # the seam where the scheduler starts supervisors
            daemon._start_supervisor = supervisors  # type: ignore[method-assign, assignment]
        self.services = daemon.start()
        self.repo: Store = self.services.repo
        self.stopped = False
        self.workspace = self.repo.ensure_workspace("ws-a", now=daemon.clock())

    def stop(self) -> None:
        """Stop now, whatever is in flight (the graceful stop under test)."""
        if not self.stopped:
            self.stopped = True
            self.daemon.stop()

    def teardown(self, upstream: Upstream) -> None:
        if not self.stopped:
            self.stopped = True
            stop_daemon(self.daemon, upstream)

    def submit(self, prompts: list[str], *, priority: int = 0, model: str = PRIMARY,
               tag: str = "job") -> Job:
        """Store a queued job with one row per prompt, then wake the scheduler."""
        rows = [RowDraft(custom_id=f"{tag}-{i}",
                         body={"messages": [{"role": "user", "content": p}]})
                for i, p in enumerate(prompts, 1)]
        draft = JobDraft(id=ids.relay_job_id(), workspace_id=self.workspace.id,
                         dialect="relay", name=tag, model=model,
                         endpoint="/v1/chat/completions", status=QUEUED, priority=priority,
                         created_at=self.daemon.clock())
        job = self.repo.create_job(draft, rows)
        self.services.scheduler.wake()
        return job

    def waiting_for_the_model(self, alias: str = PRIMARY) -> int:
        """Calls the model's limit holds at its gate now (the router's own gate)."""
        return self.daemon.router._gates[alias].waiting

    def waiting_in_the_lane(self, job: Job) -> int:
        """Rows of `job` handed to its worker that wait for one of its
        `batch_concurrency` slots now."""
        supervisor = actor_state(self.services.scheduler).running.get(timeout=5).get(job.seq)
        return 0 if supervisor is None else supervisor.worker.get(timeout=5).rows.waiting

    def job(self, job: Job) -> Job:
        found = self.repo.job_by_seq(job.seq)
        assert found is not None
        return found


@pytest.fixture
def upstream() -> Upstream:
    return Upstream()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def start_daemon(tmp_path: Path, clock: FakeClock) -> Iterator[Callable[..., Running]]:
    """`start_daemon(upstream, gateway={...}, ...)`: a started Daemon on this test's data
    dir; every one is stopped at teardown."""
    started: list[tuple[Running, Upstream]] = []

    def start(upstream: Upstream, *, supervisors: SupervisorFactory | None = None,
              **sections: dict[str, Any]) -> Running:
        running = Running(make_daemon(make_config(tmp_path, **sections), upstream, clock),
                          supervisors=supervisors)
        started.append((running, upstream))
        return running

    yield start
    for running, upstream in started:
        running.teardown(upstream)
