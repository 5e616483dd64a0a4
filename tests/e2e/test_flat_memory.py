"""A job's memory does not grow with its rows, end to end (real `relayd serve` and
`relayd simulate` processes): the batch's file is validated a chunk at a time, its rows
leased and stored in groups, its result files written by streaming from the store, and
each database connection's page cache is bounded (8 MB). relayd's peak resident set
after a 20,000-row batch is about 13 MB above its peak after a 2,000-row one (the page
caches filling as the database grows); validating the whole file in memory, with 32 MB
caches, added 30 MB. The bench's scale scenario runs the same at a million rows."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from daemon.testing import Simulator
from tests.e2e.harness import Relayd, wait_for_status

pytestmark = pytest.mark.e2e

CHAT = "/v1/chat/completions"
GROWTH_MB = 20  # what the bigger batch may add to the peak


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def run_file(relayd: Relayd, n: int, *, tag: str) -> None:
    records = "".join(json.dumps({
        "custom_id": f"{tag}-{i}", "method": "POST", "url": CHAT,
        "body": {"model": "gpt-4o-mini", "max_tokens": 8, "messages": [
            {"role": "user", "content": f"Classify review {tag}-{i}: the tent kept us dry."}]},
    }) + "\n" for i in range(n))
    client = relayd.client()
    uploaded = client.post("/v1/files", data={"purpose": "batch"},
                           files={"file": (f"{tag}.jsonl", records.encode())})
    assert uploaded.status_code == 200, uploaded.text
    made = client.post("/v1/batches", json={"input_file_id": uploaded.json()["id"],
                                            "endpoint": CHAT, "completion_window": "24h"})
    assert made.status_code == 200, made.text
    done = wait_for_status(client, made.json()["id"], "completed", "failed", timeout=150)
    assert done["request_counts"] == {"total": n, "completed": n, "failed": 0}, done
    output = client.get(f"/v1/files/{done['output_file_id']}/content")
    assert output.content.count(b"\n") == n


@pytest.mark.timeout(240)
def test_a_batch_ten_times_bigger_does_not_grow_relayds_memory(
        simulator_factory: Callable[..., Simulator],
        relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "0")
    relayd = relayd_factory(sim, concurrency=32).start()
    run_file(relayd, 2_000, tag="warm")  # every path taken once, every cache in use
    before = peak_mb(relayd.pid)
    run_file(relayd, 20_000, tag="big")
    after = peak_mb(relayd.pid)
    assert after - before <= GROWTH_MB, (
        f"relayd's peak RSS grew from {before:.0f} MB to {after:.0f} MB with a batch ten "
        "times bigger")
