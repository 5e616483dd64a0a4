"""A core actor that dies ends `relayd serve` with status 70 (EX_SOFTWARE), for its
manager to start it again; every state being in the store, the restarted process
finishes the work. Real processes: relayd's own entry point, with a test seam that
kills the actor on SIGUSR1 (tests/e2e/actor_killer.py), and a simulator."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable

import pytest

from daemon.testing import Simulator
from tests.e2e.harness import RELAYD, Relayd, rows, wait_for_status, wait_until

pytestmark = pytest.mark.e2e

ROWS = 60


def test_a_dead_scheduler_ends_serve_with_status_70_and_a_restart_finishes_the_job(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "50")
    relayd = relayd_factory(sim, concurrency=2)
    relayd.command = (sys.executable, "-m", "tests.e2e.actor_killer", "Scheduler")
    relayd.start()
    proc = relayd.proc
    assert proc is not None
    try:
        client = relayd.client()
        job = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                               "requests": rows(ROWS)}).json()
        wait_until(lambda: client.get(f"/v1/batches/{job['id']}").json()["completed"] >= 5)

        proc.send_signal(signal.SIGUSR1)

        assert proc.wait(timeout=30) == 70
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    said = relayd.log_tail(50_000)
    assert "Unhandled exception in Scheduler" in said  # Pykka's word: the actor died
    assert "scheduler died: relayd stops and exits with status 70" in said
    assert "exiting with status 70: scheduler died" in said

    relayd.command = RELAYD
    relayd.start()  # what its manager does, at the same address
    done = wait_for_status(client, job["id"], "completed", timeout=60)
    data = client.get(f"/v1/batches/{job['id']}/results").json()["data"]
    assert sorted(item["custom_id"] for item in data) == sorted(f"r-{i}" for i in range(ROWS))
    assert (done["completed"], done["failed"]) == (ROWS, 0)
    client.close()
