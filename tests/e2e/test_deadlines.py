"""A deadline on a rate-limited model, end to end: a real relayd paced at 120 rpm by its
config, on the simulator. A job whose rows take longer at that pace than its deadline
allows is flagged at risk (refused when strict), ends `completed` when the deadline
passes, and the rows it did not reach fail `deadline_passed`."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.e2e.harness import Relayd, Simulator, rows, wait_for_status

pytestmark = pytest.mark.e2e

RPM = 120  # two rows a second
ROWS = 40  # twenty seconds at that pace
DEADLINE_S = 4


@pytest.mark.timeout(60)
def test_a_deadline_on_a_rate_limited_model(
        simulator_factory: Callable[..., Simulator],
        relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim, concurrency=8, model={"rpm": RPM}).start()
    body = {"model": "gpt-4o-mini", "requests": rows(ROWS), "deadline": f"{DEADLINE_S}s"}
    with relayd.client() as client:
        strict = client.post("/v1/batches", json={**body, "strict_deadline": True})
        assert strict.status_code == 400, strict.text
        error = strict.json()["error"]
        assert (error["code"], error["param"]) == ("cannot_meet_deadline", "deadline")

        started = time.monotonic()
        job = client.post("/v1/batches", json=body).json()
        assert job["deadline_at_risk"] is True
        assert job["deadline_estimate"]["drain_s"] >= ROWS / RPM * 60 * 0.9

        done = wait_for_status(client, job["id"], "completed", timeout=30)
        assert time.monotonic() - started < DEADLINE_S + 5  # ended by its deadline
        ran = done["completed"]
        assert 0 < ran < ROWS and done["failed"] == ROWS - ran
        results = client.get(f"/v1/batches/{job['id']}/results",
                             params={"limit": 1000}).json()["data"]
        failed = [r for r in results if "error" in r]
        assert len(failed) == ROWS - ran
        assert all(r["error"].startswith("deadline_passed: ") for r in failed)
    assert len(sim.requests()) == ran  # no row went upstream past the deadline
