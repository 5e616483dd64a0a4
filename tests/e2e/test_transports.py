"""A small job end to end through each upstream client (`[gateway] transport`): a
real relayd on a real simulator, with a retried 429, a fallback, a reset connection
and an answer over the cap. Both clients must give the same results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from daemon.config import TRANSPORTS
from daemon.testing import Simulator
from tests.e2e.harness import Relayd, rows, wait_for_status

pytestmark = pytest.mark.e2e

# How each client names the simulator's dropped connection: proof it was the one used.
RESET_BY = {"aiohttp": ("ClientOSError", "ServerDisconnectedError"),
            "pyreqwest": ("ConnectError", "ReadError")}


def row(custom_id: str, prompt: str) -> dict[str, Any]:
    return {"custom_id": custom_id, "messages": [{"role": "user", "content": prompt}]}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_job_runs_alike_through_each_client(simulator_factory: Callable[..., Simulator],
                                              relayd_factory: Callable[..., Relayd],
                                              transport: str) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim, attempts=2,
                            gateway={"transport": transport, "max_response_mb": 1}).start()
    special = [row("retried", "a [sim:fail=429 times=1]"),
               row("fell-back", "b [sim:fail=503 model=sim-small]"),
               row("reset", "c [sim:reset]"),
               row("huge", "d [sim:huge=20]")]
    with relayd.client() as client:
        created = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                                   "requests": rows(30) + special})
        assert created.status_code == 200, created.text
        job = wait_for_status(client, created.json()["id"], "completed", timeout=60)
        assert (job["completed"], job["failed"]) == (32, 2)
        data = client.get(f"/v1/batches/{job['id']}/results").json()["data"]
        reset = client.get(f"/v1/batches/{job['id']}/rows/reset").json()

    by_id = {item["custom_id"]: item for item in data}
    assert all("content" in by_id[f"r-{i}"] for i in range(30))
    assert "content" in by_id["retried"] and "sim-large" in by_id["fell-back"]["content"]
    assert by_id["huge"]["error"].startswith(
        "response_too_large: gpt-4o-mini answered 200 with a body over the 1 MB limit")
    assert by_id["reset"]["error"].startswith("upstream_error: connection error from")
    errors = [attempt["error"] for attempt in reset["attempt_log"]]
    assert len(errors) == 4 and all(any(name in error for name in RESET_BY[transport])
                                    for error in errors), errors
