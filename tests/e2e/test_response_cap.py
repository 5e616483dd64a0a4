"""The response cap end to end (`[gateway] max_response_mb`): a real relayd on a real
simulator that answers some rows with 100 MB of valid JSON, streamed without a
Content-Length. Those rows fail `response_too_large` (their fallback is tried, like
after any permanent failure); every other row succeeds; relayd's memory, database and
results stay small."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from daemon.testing import Simulator
from tests.e2e.harness import Relayd, rows, wait_for_status

pytestmark = pytest.mark.e2e

MiB = 1024 * 1024
TOO_LARGE = ("response_too_large: gpt-4o-mini answered 200 with a body over the 1 MB limit "
             "([gateway] max_response_mb)")


def row(custom_id: str, prompt: str) -> dict[str, Any]:
    return {"custom_id": custom_id, "messages": [{"role": "user", "content": prompt}]}


def peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    [line] = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(line.split()[1]) / 1024  # kB


def stored_bytes(data: Path) -> int:
    return sum(path.stat().st_size for path in data.glob("relay.db*"))


def test_huge_answers_fail_their_rows_and_nothing_else(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim, gateway={"max_response_mb": 1}).start()
    huge = [row("huge-0", "a [sim:huge=100]"), row("huge-1", "b [sim:huge=100]"),
            row("fell-back", "c [sim:huge=100 model=sim-small]")]
    with relayd.client() as client:
        created = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                                   "requests": rows(20) + huge})
        assert created.status_code == 200, created.text
        job = wait_for_status(client, created.json()["id"], "completed", timeout=60)
        assert (job["completed"], job["failed"], job["dead_letter"]) == (21, 2, 0)

        results = client.get(f"/v1/batches/{job['id']}/results")
        by_id = {item["custom_id"]: item for item in results.json()["data"]}
        for custom_id in ("huge-0", "huge-1"):
            assert by_id[custom_id]["error"] == (
                f"{TOO_LARGE}; fallback backup: answered 200 with a body over the 1 MB "
                "limit ([gateway] max_response_mb) (not retried)")
        assert "sim-large" in by_id["fell-back"]["content"]
        assert all("content" in by_id[f"r-{i}"] for i in range(20))
        assert len(results.content) < 64 * 1024

        detail = client.get(f"/v1/batches/{job['id']}/rows/huge-0").json()
        assert (detail["error_code"], detail["dead_letter"]) == ("response_too_large", False)
        assert [a["model"] for a in detail["attempt_log"]] == ["gpt-4o-mini", "backup"]

    prompts = [r["prompt"] for r in sim.requests()]
    assert prompts.count("a [sim:huge=100]") == 2  # not retried; its fallback tried once
    assert stored_bytes(relayd.data) < 8 * MiB
    assert peak_rss_mb(relayd.pid) < 150  # five 100 MB answers: never read, never held
