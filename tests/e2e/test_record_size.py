"""The size of multi-call records, end to end (real `relayd serve` and `relayd simulate`
processes): a tool-calling transcript or a workflow state that would pass
`[limits] max_record_mb` ends the record `record_too_large`, before it is stored or
sent. Found as 16 records of 16 rounds whose tool answers were 7 MB each (relayd grew
to 2.9 GB, its last model request to 112 MB) and a workflow of 256 requests of 30 KB a
step; here the same shapes, scaled to a 1 and a 2 MB cap so the tests are quick."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable

import pytest

from daemon.testing import Simulator
from tests.e2e.harness import Relayd, config_tables, wait_for_status
from tests.e2e.test_tools import LOOKUP, http_tools, submit, tool_record
from tests.e2e.test_workflows import enable, lines, run_batch
from tests.e2e.test_workflows import record as workflow_record

pytestmark = pytest.mark.e2e

MB = 1024 * 1024


def test_a_transcript_past_the_cap_ends_its_record_and_is_neither_stored_nor_sent(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim)
    relayd.write_config(**config_tables(sim, concurrency=4), limits={"max_record_mb": 1})
    relayd.start()
    client = relayd.client()
    # 16 records that would run 16 rounds, each tool answer 200 KB: 3.2 MB a transcript.
    prompt = "look it up [sim:tool_rounds=16] [sim:tool_content=200]"
    job = submit(client, [tool_record(f"big-{i}", f"{prompt} #{i}", http_tools(sim),
                                      tools=[LOOKUP]) for i in range(16)])

    done = wait_for_status(client, job["id"], "completed", timeout=60)

    assert (done["completed"], done["failed"], done["dead_letter"]) == (0, 16, 0)
    errors = [r["error"] for r in client.get(f"/v1/batches/{job['id']}/results").json()["data"]]
    assert all(e.startswith("record_too_large: round ") for e in errors), errors[:3]
    assert all("tool results would take the record to 1.2 MB, past [limits] max_record_mb "
               "(1 MB)" in e for e in errors), errors[:3]
    # Nothing past the cap went out: no model request bigger than the cap, and each
    # record's last executor answer (the one that would pass it) was not sent on.
    models = [r for r in sim.requests() if r["prompt"].startswith("look it up")]
    assert max(r["bytes"] for r in models) <= MB
    per_record = Counter(r["prompt"] for r in models)
    executor = Counter(json.loads(c["body"]["tool_calls"][0]["function"]["arguments"])[
        "query"] for c in sim.tool_calls())
    assert per_record == executor and set(per_record.values()) == {6}  # rounds 1-6 of 16
    # Nothing past the cap was stored: each record's rounds add up to less.
    with sqlite3.connect(relayd.data / "relay.db") as db:
        stored = db.execute('SELECT row_id, SUM(LENGTH(messages)) FROM "round" '
                            "GROUP BY row_id").fetchall()
    assert len(stored) == 16 and max(size for _, size in stored) <= MB
    detail = client.get(f"/v1/batches/{job['id']}/rows/big-0").json()
    assert detail["tool_rounds"] == 5 and detail["status"] == "failed"


def test_a_workflow_state_past_the_cap_ends_its_record_before_it_is_stored_or_sent(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim)
    relayd.write_config(**config_tables(sim), limits={"max_record_mb": 2})
    relayd.start()
    enable(relayd)
    records = [
        # 32 requests of 10 KB, their answers as big, then the reduce request: 1 MB.
        workflow_record("fits", sim, "Fits. [sim:wf_fanout=32 wf_pad=10]"),
        # 256 requests of 30 KB a step, as found: 7.7 MB of requests.
        workflow_record("requests", sim, "Requests. [sim:wf_fanout=256 wf_pad=30]"),
        # 100 requests of 12 KB fit (1.2 MB); their answers, 12 KB each, do not.
        workflow_record("results", sim, "Results. [sim:wf_fanout=100 wf_pad=12]"),
    ]

    client, done = run_batch(relayd, records, timeout=90)

    assert (done.status, done.request_counts.completed, done.request_counts.failed) == (
        "completed", 1, 2)
    assert lines(client, done.output_file_id)["fits"]["response"]["body"]["output"]
    errors = {k: v["error"] for k, v in lines(client, done.error_file_id).items()}
    assert errors["requests"]["code"] == errors["results"]["code"] == "record_too_large"
    assert errors["requests"]["message"].startswith(
        "record_too_large: step 1's requests would take the record to 7.")
    assert errors["results"]["message"].startswith("record_too_large: step 1's result ")
    summaries = Counter(r["prompt"].split()[1] for r in sim.requests()
                        if r["prompt"].startswith("Summarise"))
    assert summaries["Requests."] == 0  # none of its requests was sent
    assert 0 < summaries["Results."] <= 100
    with sqlite3.connect(relayd.data / "relay.db") as db:
        sizes = dict(db.execute(
            'SELECT r.custom_id, LENGTH(w.state) + COALESCE((SELECT SUM(LENGTH(x.result)) '
            "FROM workflow_result x WHERE x.row_id = r.id), 0) "
            'FROM "row" r JOIN workflow w ON w.row_id = r.id').fetchall())
    assert set(sizes) == {"fits", "results"}  # "requests" stored nothing: no state changed
    assert max(sizes.values()) <= 2 * MB

