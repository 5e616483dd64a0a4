"""End-to-end harness: real `relayd simulate` and `relayd serve` processes (started
through `daemon.testing`), a real SQLite file in a temp dir, real HTTP.

Here: the pytest fixtures, the test daemons' config, keys and clients per workspace,
and small helpers for rows and job states."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from daemon import testing
from daemon.testing import RELAYD, Simulator, closed_port, simulated_model

__all__ = ["RELAYD", "Relayd", "Simulator", "closed_port", "config_tables", "relayd_factory",
           "rows", "running_pair", "simulator_factory", "wait_for_status", "wait_until"]

TIMEOUT_S = 20.0  # how long a test waits for a condition unless it says otherwise


@dataclass(kw_only=True)
class Relayd(testing.Relayd):
    """A test daemon, with one API key per workspace made on first use."""

    keys: dict[str, str] = field(default_factory=dict)

    def key(self, workspace: str) -> str:
        if workspace not in self.keys:
            self.keys[workspace] = self.create_key(workspace)
        return self.keys[workspace]

    def client(self, workspace: str = "acme") -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30,
                            headers={"Authorization": f"Bearer {self.key(workspace)}"})


def wait_until(check: Callable[[], Any], *, timeout: float = TIMEOUT_S) -> Any:
    """`daemon.testing.wait_until` with the end-to-end default timeout."""
    return testing.wait_until(check, timeout=timeout)


def config_tables(sim: Simulator, *, concurrency: int = 8, running: int = 2,
                  allow_private: bool = True, attempts: int = 3,
                  server: dict[str, Any] | None = None,
                  gateway: dict[str, int] | None = None,
                  retry: dict[str, Any] | None = None,
                  model: dict[str, Any] | None = None) -> dict[str, Any]:
    """A test daemon's config (`Relayd.write_config`'s keywords): tiny backoffs, and
    "gpt-4o-mini" on the simulator with "backup" as its fallback. `server`, `gateway` and
    `retry` add keys to those tables, `model` to gpt-4o-mini's."""
    return {
        "server": server or {},
        "gateway": {"batch_concurrency": concurrency, "max_running_jobs": running,
                    **(gateway or {})},
        "security": {"allow_private_targets": allow_private},
        "retry": {"attempts": attempts, "backoff_base_s": 0.01, "backoff_cap_s": 0.05,
                  "retry_after_cap_s": 0.05, "request_timeout_s": 5, **(retry or {})},
        "models": [simulated_model("gpt-4o-mini", sim, fallbacks=["backup"],
                                   **({"input_usd_per_mtok": 0.15, "output_usd_per_mtok": 0.60}
                                      | (model or {}))),
                   simulated_model("backup", sim, model="sim-large")],
    }


@pytest.fixture
def simulator_factory() -> Iterator[Callable[..., Simulator]]:
    """`simulator_factory("--latency-ms", "20")`: a started simulator, stopped at teardown."""
    started: list[Simulator] = []

    def start(*args: str) -> Simulator:
        started.append(Simulator.start(*args))
        return started[-1]

    yield start
    for sim in started:
        sim.stop()


@pytest.fixture(scope="module")
def sdk_simulator() -> Iterator[Simulator]:
    """One `relayd simulate --rpm 6000` for a module of SDK tests (its answers carry
    rate-limit headers; no test comes near the limit)."""
    started = Simulator.start("--rpm", "6000")
    yield started
    started.stop()


@pytest.fixture
def relayd_factory(tmp_path: Path) -> Iterator[Callable[..., Relayd]]:
    """`relayd_factory(sim, concurrency=1)`: a relayd on `sim` (`config_tables`'s
    options), not yet started; every one is stopped at teardown."""
    made: list[Relayd] = []

    def make(sim: Simulator, **options: Any) -> Relayd:
        daemon = Relayd(home=tmp_path / f"relayd-{len(made)}")
        made.append(daemon.write_config(**config_tables(sim, **options)))
        return daemon

    yield make
    for daemon in made:
        daemon.stop()


@contextlib.contextmanager
def running_pair(root: Path, *, tables: dict[str, Any] | None = None,
                 **options: Any) -> Iterator[Relayd]:
    """A simulator and a started relayd under `root`, stopped on exit: for a daemon
    shared by a module or a session (each test taking its own workspace). `tables` adds
    config tables (`{"cluster": {...}}`), `options` are `config_tables`'s."""
    sim = Simulator.start()
    try:
        daemon = Relayd(home=root).write_config(**config_tables(sim, **options),
                                                **(tables or {}))
        try:
            yield daemon.start()
        finally:
            daemon.stop()
    finally:
        sim.stop()


def rows(n: int, *, prefix: str = "r", text: str = "Classify: fine product") -> list[dict]:
    return [{"custom_id": f"{prefix}-{i}", "messages": [{"role": "user",
                                                        "content": f"{text} {prefix}-{i}"}]}
            for i in range(n)]


def wait_for_status(client: httpx.Client, job_id: str, *statuses: str,
                    timeout: float = 30) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        job = client.get(f"/v1/batches/{job_id}").json()
        return job if job["status"] in statuses else None

    return testing.wait_until(check, timeout=timeout,
                              message=f"job {job_id} to be {' or '.join(statuses)}")
