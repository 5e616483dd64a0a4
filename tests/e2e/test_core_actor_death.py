"""A core actor that dies ends `relayd serve` with status 70 (EX_SOFTWARE), for its
manager to start it again; every state being in the store, the restarted process
finishes the work. Real processes: relayd's own entry point, with a test seam that
kills the actor on SIGUSR1 (tests/e2e/actor_killer.py), and a simulator."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import rows, wait_for_status, wait_until

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
BANNER = re.compile(r"relayd: serving (http://\S+)")
ROWS = 60


def test_a_dead_scheduler_ends_serve_with_status_70_and_a_restart_finishes_the_job(
        simulator_factory, relayd_factory):
    sim = simulator_factory("--latency-ms", "50")
    relayd = relayd_factory(sim, concurrency=2)
    with open(relayd.log, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tests.e2e.actor_killer", "Scheduler",
                                 "serve", "--config", str(relayd.config)],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = wait_until(lambda: _banner(relayd.log_tail(20_000), proc))
        assert url == relayd.url
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

    relayd.start()  # what its manager does
    done = wait_for_status(client, job["id"], "completed", timeout=60)
    data = client.get(f"/v1/batches/{job['id']}/results").json()["data"]
    assert sorted(item["custom_id"] for item in data) == sorted(f"r-{i}" for i in range(ROWS))
    assert (done["completed"], done["failed"]) == (ROWS, 0)
    client.close()


def _banner(log: str, proc: subprocess.Popen[bytes]) -> str | None:
    if proc.poll() is not None:
        raise AssertionError(f"relayd exited with {proc.returncode}: {log[-2000:]}")
    found = BANNER.search(log)
    return found.group(1) if found else None
