"""`GET /v1/nodes`: every registered node with its health, the answering one marked,
and of the jobs each runs only the caller's workspace's."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from daemon.domain.cluster import NodeRecord
from tests.actors.harness import wait_for
from tests.api.conftest import Relay, assert_envelope, batch

LEASE_S = 15.0  # the default [cluster] lease_s


async def listed(relay: Relay, *, key: str | None = None) -> list[dict[str, Any]]:
    body = await relay.ok("GET", "/v1/nodes", key=key)
    assert body["object"] == "list"
    return body["data"]


async def register(relay: Relay, node_id: str, *, started: float, silent: float,
                   jobs: tuple[int, ...] = (), stopping: bool = False) -> None:
    """A node that started `started` seconds ago and beat `silent` seconds ago."""
    now = relay.clock()
    await asyncio.to_thread(relay.services.repo.register_node, NodeRecord(
        id=node_id, address=f"http://{node_id}:8080", version="0.1.0",
        started_at=now - started, heartbeat_at=now - silent, stopping=stopping, jobs=jobs))


async def seq_of(relay: Relay, job_id: str) -> int:
    job = await asyncio.to_thread(relay.services.repo.get_job, job_id)
    assert job is not None
    return job.seq


def by_id(nodes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {n["id"]: n for n in nodes}


async def test_the_answering_node_lists_itself(relay: Relay) -> None:
    node = relay.daemon.membership
    [me] = await listed(relay)
    assert set(me) == {"object", "id", "address", "version", "started_at", "heartbeat_at",
                       "seconds_since_heartbeat", "health", "self", "jobs"}
    assert (me["object"], me["id"], me["address"], me["version"]) == (
        "node", node.id, node.address, node.version)
    assert (me["health"], me["self"], me["jobs"]) == ("healthy", True, [])
    assert me["started_at"].endswith("Z")  # ISO 8601, as every Relay instant
    assert datetime.fromisoformat(me["started_at"]).timestamp() == int(node.started_at)
    assert 0 <= me["seconds_since_heartbeat"] < LEASE_S


async def test_every_node_is_listed_with_its_health_oldest_first(relay: Relay) -> None:
    await register(relay, "lost-1", started=7200, silent=2 * LEASE_S)
    await register(relay, "late-1", started=3600, silent=0.8 * LEASE_S)
    await register(relay, "draining-1", started=1800, silent=1, stopping=True)
    await register(relay, "fine-1", started=-5, silent=0)  # started after this node

    nodes = await listed(relay)

    assert [(n["id"], n["health"], n["self"]) for n in nodes] == [
        ("lost-1", "lost", False), ("late-1", "late", False),
        ("draining-1", "stopping", False), (relay.daemon.membership.id, "healthy", True),
        ("fine-1", "healthy", False)]
    assert by_id(nodes)["lost-1"]["seconds_since_heartbeat"] >= 2 * LEASE_S
    assert by_id(nodes)["lost-1"]["address"] == "http://lost-1:8080"


async def test_a_node_lists_only_the_callers_jobs(relay: Relay) -> None:
    other_key = await relay.new_key("ws-b")
    stranger_key = await relay.new_key("ws-c")
    mine = await relay.submit(batch("mine", name="mine"))
    theirs = await relay.submit(batch("theirs", name="theirs"), key=other_key)
    await relay.wait_status(mine["id"], "completed")
    await relay.wait_status(theirs["id"], "completed", key=other_key)
    both = (await seq_of(relay, theirs["id"]), await seq_of(relay, mine["id"]))
    await register(relay, "busy-1", started=60, silent=1, jobs=(*both, 99_999))
    await register(relay, "lost-1", started=120, silent=3600, jobs=both)

    seen = by_id(await listed(relay))
    assert seen["busy-1"]["jobs"] == seen["lost-1"]["jobs"] == [
        {"id": mine["id"], "status": "completed", "name": "mine", "dialect": "relay"}]
    assert [j["id"] for j in by_id(await listed(relay, key=other_key))["busy-1"]["jobs"]] \
        == [theirs["id"]]
    assert {n["id"]: n["jobs"] for n in await listed(relay, key=stranger_key)} == {
        "lost-1": [], "busy-1": [], relay.daemon.membership.id: []}


async def test_a_job_this_node_runs_is_listed_from_its_next_heartbeat(relay: Relay) -> None:
    job = await relay.submit(batch("held BLOCK", name="held"))
    seq = await seq_of(relay, job["id"])
    node = relay.daemon.membership
    await wait_for(lambda: seq in node.jobs, what="the scheduler to tell the node")
    try:
        await asyncio.to_thread(node.beat, relay.clock())
        [me] = await listed(relay)
        assert me["jobs"] == [{"id": job["id"], "status": "running", "name": "held",
                               "dialect": "relay"}]
    finally:
        relay.upstream.gate.set()
    await relay.wait_status(job["id"], "completed")


async def test_without_a_valid_key_the_answer_is_401(relay: Relay) -> None:
    async with relay.client.get("/v1/nodes") as resp:
        assert resp.status == 401
        assert_envelope(await resp.json(), code="missing_api_key")
    status, body = await relay.call("GET", "/v1/nodes", key="rk_not_a_key")
    assert status == 401
    assert_envelope(body, code="invalid_api_key")


async def test_a_workspace_without_batch_access_is_answered_404(relay: Relay) -> None:
    closed = await relay.new_key("ws-closed")
    await asyncio.to_thread(relay.services.repo.set_workspace, "ws-closed",
                            now=relay.clock(), batch_access=False)
    status, body = await relay.call("GET", "/v1/nodes", key=closed)
    assert status == 404
    assert_envelope(body, code="not_found")
