"""Rate limits end to end: `relayd simulate --rpm` as a provider that enforces them,
and a relayd that drains a job at that rate without a storm of 429s."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.harness import Relayd, Simulator, rows, wait_for_status

pytestmark = pytest.mark.e2e

RPM = 1200  # 20 a second; the simulator's burst is one second of it
ROWS = 80


@pytest.fixture
def start_relayd(relayd_factory: Callable[..., Relayd]) -> Callable[..., Relayd]:
    """`start_relayd(sim, **model_keys)`: a started relayd on `sim`, gpt-4o-mini allowed 64
    at once and Retry-After obeyed in full; stopped at teardown."""
    def start(sim: Simulator, **model: Any) -> Relayd:
        return relayd_factory(sim, concurrency=32, model={"max_concurrency": 64, **model},
                              retry={"retry_after_cap_s": 60}).start()

    return start


def drain(relayd: Relayd, sim: Simulator) -> tuple[float, dict[str, int], dict[str, Any]]:
    """Run ROWS rows; (seconds, the simulator's answers by status, the model's state)."""
    with relayd.client() as client:
        started = time.monotonic()
        job = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                               "requests": rows(ROWS)}).json()
        done = wait_for_status(client, job["id"], "completed", timeout=60)
        elapsed = time.monotonic() - started
        assert (done["completed"], done["failed"]) == (ROWS, 0)
        [model] = [m for m in client.get("/v1/models").json()["data"]
                   if m["id"] == "gpt-4o-mini"]
    return elapsed, sim.stats()["by_status"], model


def test_a_configured_rpm_drains_at_the_limit_with_no_429s(
        simulator_factory: Callable[..., Simulator], start_relayd: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--rpm", str(RPM))
    relayd = start_relayd(sim, rpm=RPM)
    elapsed, statuses, model = drain(relayd, sim)
    assert statuses.get("429", 0) <= 1
    rate = RPM / 60
    # Paced: no faster than the upstream's burst and rate allow; and not held back.
    assert (ROWS - rate) / rate <= elapsed <= ROWS / rate * 2.5, elapsed
    assert model["rpm"] == RPM and model["state"]["rpm"] == RPM
    assert model["state"]["upstream_rpm"] == RPM and model["state"]["in_flight"] == 0


def test_without_rpm_the_limit_is_learned_from_the_headers(
        simulator_factory: Callable[..., Simulator], start_relayd: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--rpm", str(RPM))
    relayd = start_relayd(sim)
    elapsed, statuses, model = drain(relayd, sim)
    # Only the first burst, before any answer announced the limit, can meet a 429.
    assert statuses.get("429", 0) <= 32 - RPM // 60 + 4  # 12 seen here
    assert statuses["200"] == ROWS
    assert model["rpm"] is None and model["state"]["upstream_rpm"] == RPM
    assert elapsed <= ROWS / (RPM / 60) * 2.5, elapsed
