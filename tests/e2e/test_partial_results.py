"""Results while a job runs, end to end: a real relayd on a slow simulator, read while
its rows finish (`?partial=true` for a Relay job, `/results/lines` for an OpenAI
batch). Every finished row is met once across polls, and the reads after the end
equal the final results."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from daemon.testing import Simulator
from tests.e2e.harness import TIMEOUT_S, Relayd, rows, wait_for_status, wait_until

pytestmark = pytest.mark.e2e

POLL_S = 0.05
ENDED = ("completed", "failed", "canceled", "cancelled", "expired")


def slow_rows(n: int, ms: int) -> list[dict[str, Any]]:
    return rows(n, prefix=f"slow{ms}", text=f"Classify slowly [sim:sleep={ms}]")


def follow(client: httpx.Client, path: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Every row a poller of `path` meets until the job has ended, and the statuses it
    saw along the way for pages that held rows."""
    seen: list[dict[str, Any]] = []
    statuses: list[str] = []
    cursor = ""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        sep = "&" if "?" in path else "?"
        page = client.get(f"{path}{sep}limit=7&cursor={cursor}").raise_for_status().json()
        seen += page["data"]
        if page["data"]:
            statuses.append(page["status"])
        cursor = page["next_cursor"]
        if page["has_more"]:
            continue
        if page["status"] in ENDED:
            return seen, statuses
        time.sleep(POLL_S)
    raise AssertionError(f"{path} did not end in {TIMEOUT_S} s")


def test_a_relay_job_read_while_it_runs(simulator_factory: Callable[..., Simulator],
                                        relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    with relayd.client() as client:
        job = client.post("/v1/batches", json={
            "model": "gpt-4o-mini", "requests": [*rows(12), *slow_rows(4, 600),
                                                 *slow_rows(4, 1200)]}).json()
        seen, statuses = follow(client, f"/v1/batches/{job['id']}/results?partial=true")
        final = client.get(f"/v1/batches/{job['id']}/results").json()["data"]
        again, _ = follow(client, f"/v1/batches/{job['id']}/results?partial=true")
    assert "running" in statuses  # rows were read before the end
    assert len(seen) == 20 == len({r["custom_id"] for r in seen})
    assert sorted(seen, key=lambda r: r["custom_id"]) == sorted(
        final, key=lambda r: r["custom_id"])
    assert again == seen  # the finish order does not change once written
    assert all(r["custom_id"].startswith("slow1200") for r in seen[-4:])


def test_an_openai_batch_read_as_lines_while_it_runs(
        simulator_factory: Callable[..., Simulator],
        relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    records = [{"custom_id": r["custom_id"], "method": "POST", "url": "/v1/chat/completions",
                "body": {"model": "gpt-4o-mini", "messages": r["messages"]}}
               for r in [*rows(6), *slow_rows(3, 900),
                         {"custom_id": "bad", "messages": [
                             {"role": "user", "content": "x [sim:fail=400]"}]}]]
    with relayd.client() as client:
        batch = client.post("/v1/batches", json={
            "endpoint": "/v1/chat/completions", "completion_window": "24h",
            "requests": records}).json()
        seen, statuses = follow(client, f"/v1/batches/{batch['id']}/results/lines")
        assert "in_progress" in statuses
        done = wait_for_status(client, batch["id"], "completed")
        files = [client.get(f"/v1/files/{done[k]}/content").text
                 for k in ("output_file_id", "error_file_id")]
    written = [json.loads(line) for text in files for line in text.splitlines()]
    assert sorted(seen, key=lambda line: line["custom_id"]) == sorted(
        written, key=lambda line: line["custom_id"])
    assert len(seen) == 10


def test_output_file_id_stays_null_while_it_runs(
        simulator_factory: Callable[..., Simulator],
        relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    with relayd.client() as client:
        batch = client.post("/v1/batches", json={
            "endpoint": "/v1/chat/completions", "completion_window": "24h",
            "requests": [{"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
                          "body": {"model": "gpt-4o-mini", "messages": [
                              {"role": "user", "content": "x"}]}},
                         {"custom_id": "b", "method": "POST", "url": "/v1/chat/completions",
                          "body": {"model": "gpt-4o-mini", "messages": [
                              {"role": "user", "content": "late [sim:sleep=1500]"}]}}]}).json()

        def one_line() -> dict[str, Any] | None:
            page = client.get(f"/v1/batches/{batch['id']}/results/lines").json()
            return page if page["data"] else None

        page = wait_until(one_line)
        running = client.get(f"/v1/batches/{batch['id']}").json()
        assert page["status"] == "in_progress" and [line["custom_id"] for line in
                                                    page["data"]] == ["a"]
        assert running["status"] == "in_progress" and running["output_file_id"] is None

