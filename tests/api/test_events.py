"""GET /v1/events: a snapshot of active jobs for a late joiner, then the live
created / progress / ended events of the key's workspace only."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import ClientResponse

from tests.actors.harness import wait_for
from tests.api.conftest import Relay, batch


class EventStream:
    """Reads server-sent events off a streaming response."""

    def __init__(self, response: ClientResponse) -> None:
        self.response = response

    async def next(self, timeout: float = 5.0) -> tuple[str, dict[str, Any]]:
        kind, data = None, None
        while True:
            raw = await asyncio.wait_for(self.response.content.readline(), timeout)
            assert raw, "the event stream closed"
            line = raw.decode().rstrip("\n")
            if not line:
                if kind is not None:
                    return kind, json.loads(data or "null")
                continue
            field, _, value = line.partition(": ")
            if field == "event":
                kind = value
            elif field == "data":
                data = value

    async def until(self, kind: str, job_id: str,
                    **fields: Any) -> list[tuple[str, dict[str, Any]]]:
        """Every event up to and including the first `kind` event of `job_id` whose
        data has `fields`."""
        seen = []
        while True:
            event = await self.next()
            seen.append(event)
            kind_seen, data = event
            if (kind_seen == kind and data["id"] == job_id
                    and all(data[k] == v for k, v in fields.items())):
                return seen


async def test_events_snapshot_then_live_events_of_own_workspace(relay: Relay) -> None:
    active = await relay.submit(batch("held BLOCK"))
    await relay.wait_status(active["id"], "running")
    template = await relay.submit(batch("cron row", cron="0 * * * *"))
    finished = await relay.submit(batch("done already"))
    await relay.wait_status(finished["id"], "completed")
    other_key = await relay.new_key("ws-b")

    async with relay.client.get("/v1/events", headers=relay.headers()) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        stream = EventStream(response)

        assert await stream.next() == ("stream.hello", {"workspace": "ws-a"})
        snapshot = [await stream.next(), await stream.next()]
        assert {kind for kind, _ in snapshot} == {"job.snapshot"}
        assert {data["id"] for _, data in snapshot} == {active["id"], template["id"]}
        assert {data["relay_status"] for _, data in snapshot} == {"running", "scheduled"}

        theirs = await relay.submit(batch("their row"), key=other_key)
        mine = await relay.submit(batch("fast row", "slow row BLOCK"))
        created = await stream.until("job.created", mine["id"])
        await wait_for(lambda: relay.upstream.seen("slow row BLOCK"), what="the slow row")
        relay.clock.advance(2)  # past the supervisor's flush interval: a progress event
        progressed = await stream.until("job.progress", mine["id"], completed=1)
        relay.upstream.gate.set()
        ended = await stream.until("job.ended", mine["id"])

    events = created + progressed + ended
    assert all(data["id"] != theirs["id"] for _, data in events)
    kinds = [kind for kind, data in events if data["id"] == mine["id"]]
    assert kinds[0] == "job.created" and kinds[-1] == "job.ended"
    assert "job.progress" in kinds
    final = ended[-1][1]
    assert (final["relay_status"], final["completed"], final["total"]) == ("completed", 2, 2)


async def read_ids(response: ClientResponse, count: int) -> list[str]:
    ids: list[str] = []
    while len(ids) < count:
        line = (await asyncio.wait_for(response.content.readline(), 5)).decode().rstrip("\n")
        if line.startswith("id: "):
            ids.append(line[4:])
    return ids


async def test_each_stream_has_its_own_unguessable_ids(relay: Relay) -> None:
    other = await relay.new_key("ws-b")
    async with relay.client.get("/v1/events", headers=relay.headers()) as mine, \
            relay.client.get("/v1/events", headers=relay.headers(other)) as theirs:
        (hello_a,) = await read_ids(mine, 1)
        (hello_b,) = await read_ids(theirs, 1)
        for _ in range(3):  # activity in one workspace moves no other stream's ids
            await relay.submit(batch("a"))
        next_a = await read_ids(mine, 3)
        await relay.submit(batch("b"), key=other)
        (next_b,) = await read_ids(theirs, 1)
    token_a, token_b = hello_a.split("-")[0], hello_b.split("-")[0]
    assert token_a != token_b and len(token_a) == 16
    assert (hello_a, next_a) == (f"{token_a}-1", [f"{token_a}-{n}" for n in (2, 3, 4)])
    assert (hello_b, next_b) == (f"{token_b}-1", f"{token_b}-2")


async def test_revoking_a_key_closes_its_stream_within_a_second(relay: Relay) -> None:
    async with relay.client.get("/v1/events", headers=relay.headers()) as stream:
        await read_ids(stream, 1)  # hello
        await asyncio.to_thread(relay.services.repo.revoke_key, relay.key[:10],
                                now=relay.clock())
        body = await asyncio.wait_for(stream.content.read(), 5)  # until the server ends it
    assert b"event: stream.closed" in body


async def test_stopping_relayd_ends_every_stream_at_once(relay: Relay) -> None:
    async with relay.client.get("/v1/events", headers=relay.headers()) as stream:
        await read_ids(stream, 1)  # hello
        relay.services.hub.close_all()  # what the app's shutdown does
        body = await asyncio.wait_for(stream.content.read(), 0.5)  # well inside a key check
    assert b"event: stream.closed" in body
    assert b"relayd is stopping" in body


async def test_rows_true_adds_each_finished_row_before_its_jobs_event(relay: Relay) -> None:
    async with relay.client.get("/v1/events?rows=true", headers=relay.headers()) as response:
        stream = EventStream(response)
        assert (await stream.next())[0] == "stream.hello"
        job = await relay.submit(batch("fast row", "REFUSE", "slow row BLOCK"))
        await wait_for(lambda: relay.upstream.seen("slow row BLOCK"), what="the slow row")
        relay.clock.advance(2)
        relay.upstream.gate.set()
        seen: list[tuple[str, ...]] = []
        while not seen or seen[-1] != ("job.ended", job["id"]):
            kind, data = await stream.next()
            if kind == "row":
                assert set(data) == {"job_id", "custom_id", "status", "error_code"}
                seen.append((kind, data["custom_id"], data["status"]))
            else:
                seen.append((kind, data.get("id") or data.get("job_id") or ""))
    rows = [event for event in seen if event[0] == "row"]
    assert sorted(rows) == [("row", "r-1", "completed"), ("row", "r-2", "failed"),
                            ("row", "r-3", "completed")]
    assert seen.index(("row", "r-3", "completed")) < seen.index(("job.ended", job["id"]))


async def test_without_rows_there_are_no_row_events_and_a_bad_value_is_400(
        relay: Relay) -> None:
    status, body = await relay.call("GET", "/v1/events?rows=yes")
    assert status == 400 and body["error"]["param"] == "rows"


async def test_a_stream_too_far_behind_a_job_gets_one_lagged_event(
        relay: Relay, monkeypatch: Any) -> None:
    from daemon.api import row_events
    from daemon.api.events import Event
    from daemon.domain import finish_order

    job = await relay.submit(batch(*[f"row {i}" for i in range(5)]))
    await relay.wait_status(job["id"], "completed")
    repo = relay.services.repo
    stored = await asyncio.to_thread(repo.get_job, job["id"])
    assert stored is not None
    progress = Event("job.progress", {"id": job["id"]})
    monkeypatch.setattr(row_events, "ROW_BUFFER", 2)
    behind = row_events.RowFeed(repo, stored.workspace_id)
    lag = await asyncio.to_thread(behind.catch_up, progress)
    assert [(e.type, e.data) for e in lag] == [
        ("lagged", {"job_id": job["id"], "cursor": finish_order.cursor(0)})]
    assert await asyncio.to_thread(behind.catch_up, progress) == []  # went on from the end
    monkeypatch.setattr(row_events, "ROW_BUFFER", 10)
    caught = row_events.RowFeed(repo, stored.workspace_id)
    assert len(await asyncio.to_thread(caught.catch_up, progress)) == 5
    dropped = row_events.RowFeed(repo, stored.workspace_id, places={job["id"]: 0})
    assert len(await asyncio.to_thread(dropped.catch_up_all)) == 5  # after a drop
    assert await asyncio.to_thread(dropped.catch_up_all) == []
