"""Fencing, Jepsen-style, on the real PostgreSQL: one of three real `relayd serve` nodes
is frozen (SIGSTOP) mid-job for longer than its lease, the others take its rows over,
and then it wakes (SIGCONT). Its heartbeat renews at once, but nothing it leased before
the freeze may start or go on: every tool loop it had in progress stops at its next
call, and whatever it still tries to store of those rows is refused. The simulator
counts every model and executor call per row, so a call made by the woken node shows
as a call beyond what the row needed.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable

import pytest

from tests.e2e.harness import wait_for_status, wait_until
from tests.e2e.test_cluster import Cluster, cluster, node_id_of  # noqa: F401 - a fixture
from tests.e2e.test_tools import LOOKUP, http_tools, tool_record

pytestmark = pytest.mark.e2e

ROUNDS = 3  # each record: ROUNDS + 1 model calls and ROUNDS executor calls
RECORDS = 60
LEASE = 4.0  # long enough that the nodes not frozen keep theirs on a loaded machine
FROZEN_S = LEASE * 2.5  # well past the lease: the others take the rows over


@pytest.mark.timeout(120)
def test_a_node_woken_from_a_freeze_runs_nothing_it_lost(
        cluster: Callable[..., Cluster]) -> None:  # noqa: F811
    nodes = cluster("--latency-ms", "150")
    for _ in range(3):
        nodes.add(concurrency=6, lease_s=LEASE)
    nodes.start()
    api, victim, _ = nodes.nodes
    victim_id = node_id_of(nodes, victim)
    records = [tool_record(f"t{i}", f"look it up [sim:tool_rounds={ROUNDS}] t{i}",
                           http_tools(nodes.sim), tools=[LOOKUP]) for i in range(RECORDS)]
    with nodes.client(api) as client:
        created = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                                   "requests": records})
        assert created.status_code == 200, created.text
        job = created.json()
    seq = nodes.seq_of(job["id"])

    def mid_loop() -> list[str]:  # the victim's rows with a round stored and more to go
        return [cid for (cid,) in nodes.sql(
            'SELECT r.custom_id FROM "row" r WHERE r.job_id = %s AND r.lease_node = %s '
            "AND r.status = 'pending' AND EXISTS (SELECT 1 FROM round WHERE row_id = r.id)",
            seq, victim_id)]

    wait_until(lambda: len(mid_loop()) >= 2)
    os.kill(victim.pid, signal.SIGSTOP)
    try:
        held = {cid for (cid,) in nodes.sql(
            "SELECT custom_id FROM \"row\" WHERE lease_node = %s AND status = 'pending'",
            victim_id)}
        time.sleep(FROZEN_S)  # the fault itself: frozen this long
        taken = {cid for (cid,) in nodes.sql(
            'SELECT custom_id FROM "row" WHERE job_id = %s AND custom_id = ANY(%s) AND '
            "(status <> 'pending' OR lease_node IS DISTINCT FROM %s)",
            seq, list(held), victim_id)}
    finally:
        os.kill(victim.pid, signal.SIGCONT)
    assert taken, "no row of the frozen node was taken over: the test proved nothing"

    with nodes.client(api) as client:
        done = wait_for_status(client, job["id"], "completed", timeout=90)
        assert (done["completed"], done["failed"]) == (RECORDS, 0)
        results = {r["custom_id"]: r for r in client.get(
            f"/v1/batches/{job['id']}/results", params={"limit": 1000}).json()["data"]}
        assert sorted(results) == sorted(f"t{i}" for i in range(RECORDS))
        for cid, result in results.items():  # what is stored agrees with itself
            assert result["openrelay"] == {"tool_rounds": ROUNDS,
                                           "model_calls": ROUNDS + 1}, cid
            detail = client.get(f"/v1/batches/{job['id']}/rows/{cid}").json()
            assert detail["tool_rounds"] == ROUNDS, cid
            assert len(detail["transcript"]) == ROUNDS, cid
            assert all(len(t["messages"]) == 2 for t in detail["transcript"]), cid
    counts = nodes.sql("SELECT completed, failed, input_tokens FROM job WHERE seq = %s", seq)
    assert counts[0][:2] == (RECORDS, 0)

    model_calls = Counter(r["prompt"].rsplit(" ", 1)[-1] for r in nodes.sim.requests())
    tool_calls = Counter(c["body"]["custom_id"] for c in nodes.sim.tool_calls())
    extra = {cid: model_calls[cid] - (ROUNDS + 1) + tool_calls[cid] - ROUNDS
             for cid in results}
    again = {cid: n for cid, n in extra.items() if n}
    # A row the frozen node had in flight repeats at most the one call that was on the
    # wire when it froze (its new owner makes it again); nothing else runs twice. (A
    # node not frozen that still missed its lease, on a loaded machine, may cost each
    # row it held one call more in the same way: counted from the nodes' logs.)
    assert set(again) <= held, again
    assert victim.log.read_text().count("past its lease") == 1
    lapses = sum(n.log.read_text().count("past its lease") for n in nodes.nodes)
    assert all(n <= lapses for n in again.values()), (
        {cid: (model_calls[cid], tool_calls[cid]) for cid in again}, lapses,
        # what each node said of leases and fencing, for the next reader of a failure
        {str(n.log): [line for line in n.log.read_text().splitlines()
                      if "lease" in line or "fenc" in line or "WARNING" in line][-30:]
         for n in nodes.nodes})
