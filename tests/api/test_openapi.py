"""`GET /openapi.json` (daemon/api/openapi.py) against the real app: a valid OpenAPI 3.1
document that lists exactly the routes the app serves, and whose response schemas
every real answer of both dialects matches (tests/api/openapi_contract.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import schemathesis
from jsonschema import Draft202012Validator

from daemon.api.app import create_app
from daemon.api.body_budget import BODY_BUDGET
from daemon.api.context import Services
from daemon.api.openapi import EVENTS, document
from daemon.api.row_events import lagged
from daemon.dialects import DIALECTS
from daemon.dialects.relay.render import row_detail
from daemon.domain.cluster import NodeRecord
from daemon.domain.jobs import Job, RowRecord
from daemon.domain.outcome import Turn, Usage
from tests.actors.harness import PRIMARY, make_config, wait_for
from tests.api.conftest import MakeRelay, batch
from tests.api.openapi_contract import OPERATIONS, Contract, pointer, problems, validate

MiB = 1024 * 1024
CHAT = "/v1/chat/completions"


def record(custom_id: str, prompt: str) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": CHAT,
            "body": {"model": PRIMARY, "messages": [{"role": "user", "content": prompt}]}}


def upload_form(content: bytes, **fields: str) -> aiohttp.FormData:
    form = aiohttp.FormData()
    for name, value in fields.items():
        form.add_field(name, value)
    form.add_field("file", content, filename="input.jsonl")
    return form


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


# -- the document itself ----------------------------------------------------------------


def test_the_document_is_valid_openapi_3_1() -> None:
    doc = document()
    schemathesis.openapi.from_dict(json.loads(json.dumps(doc))).validate()
    for schema in doc["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)
    assert doc["openapi"].startswith("3.1")


def test_the_document_lists_exactly_the_routes_the_app_serves(tmp_path: Path) -> None:
    unused: Any = None  # routes only: nothing is served
    app = create_app(Services(repo=unused, config=make_config(tmp_path), scheduler=unused,
                              notifier=unused, files=unused, validator=unused))
    served = {(r.method.lower(), r.resource.canonical) for r in app.router.routes()
              if r.method != "HEAD" and r.resource is not None}  # HEAD: aiohttp's, per GET
    documented = {(op.method, op.template) for op in OPERATIONS}
    assert served - documented == set(), "routes the document does not describe"
    assert documented - served == set(), "documented routes the app does not serve"


async def test_the_document_is_served_without_a_key(make_relay: MakeRelay) -> None:
    relay = await make_relay()
    async with relay.client.get("/openapi.json") as resp:
        assert resp.status == 200 and resp.content_type == "application/json"
        assert await resp.json() == json.loads(json.dumps(document()))


def test_row_details_with_a_transcript_and_a_workflow_match_the_document() -> None:
    """Shapes the API scenario below cannot reach cheaply: a tool row's transcript and a
    workflow record's state."""
    job = Job(id="b" * 32, workspace_id=1, dialect="relay", name="n", model=PRIMARY,
              endpoint=CHAT, status="running", priority=0, created_at=0.0, seq=1)
    row = RowRecord(id=1, position=0, custom_id="w-1", status="pending",
                    body={"messages": [], "openrelay": {"tool_config": {
                        "url": "https://t.example/x", "authorization": "secret"}}},
                    executor_calls=({"round": 1, "executor": "http", "status_code": 503,
                                     "error": "the executor answered 503", "duration_ms": 4,
                                     "started_at": 1.5},))
    turns = [Turn(PRIMARY, Usage(3, 2), ({"role": "assistant", "content": "x"},
                                         {"role": "tool", "content": "y"}))]
    workflow = {"state": {"phase": "waiting", "step": 2, "requests_total": 3,
                          "history": [{"step": 1}], "event": {"type": "results"},
                          "requests": [{}], "wake_at": 5.0}, "results": [{}]}
    validate(row_detail(job, row, turns, workflow), pointer("components", "schemas",
                                                            "RowDetail"))


# -- real answers of every route --------------------------------------------------------


async def test_every_route_of_both_dialects_answers_as_documented(make_relay: MakeRelay) -> None:
    relay = await make_relay(server={"max_body_mb": 1, "max_upload_mb": 1})
    contract = Contract(relay)

    await service_routes(contract)
    await relay_dialect(contract)
    await openai_dialect(contract)
    await anthropic_dialect(contract)
    await refusals(contract)
    await event_stream(contract)
    await operator_routes(contract)

    assert contract.unchecked() == []


async def operator_routes(c: Contract) -> None:
    """After the dialects' jobs, so the stats have rows, attempts, usage to show."""
    stats = await c.ok("GET", "/v1/stats")
    assert stats["models"] and stats["usage"]["jobs"]
    assert (await c.call("GET", "/v1/stats?minutes=0"))[0] == 400
    assert (await c.call("GET", "/metrics", auth=False))[0] == 200
    await nodes(c)


async def nodes(c: Contract) -> None:
    """This node, and a lost one that ran a job of the caller's."""
    relay = c.relay
    listed = (await c.ok("GET", "/v1/batches?dialect=all&limit=1"))["data"][0]
    job = await asyncio.to_thread(relay.services.repo.get_job, listed["id"])
    assert job is not None
    at = relay.clock() - 3600
    await asyncio.to_thread(relay.services.repo.register_node, NodeRecord(
        id="gone-1", address="http://10.0.0.9:8080", version="0.0.1", started_at=at - 60,
        heartbeat_at=at, jobs=(job.seq,)))
    found = (await c.ok("GET", "/v1/nodes"))["data"]
    assert [(n["self"], n["health"], len(n["jobs"])) for n in found] == [
        (False, "lost", 1), (True, "healthy", 0)]


async def service_routes(c: Contract) -> None:
    await c.call("GET", "/healthz", auth=False)
    await c.call("GET", "/openapi.json", auth=False)
    await c.ok("GET", "/v1/models")
    c.relay.services.accepting = False
    try:
        assert (await c.call("GET", "/healthz", auth=False))[0] == 503
        assert (await c.call("POST", "/v1/batches", json=batch("x")))[0] == 503
    finally:
        c.relay.services.accepting = True


async def relay_dialect(c: Contract) -> None:
    job = await c.ok("POST", "/v1/batches", json=batch("fine", "x OUTAGE", "REFUSE",
                                                      "y OUTAGE"))
    one = f"/v1/batches/{job['id']}"
    await c.relay.wait_status(job["id"], "completed")
    await c.ok("GET", one)
    assert len((await c.ok("GET", one + "/results"))["data"]) == 4
    page = await c.ok("GET", one + "/results?limit=1")
    assert (page["has_more"], page["last_id"]) == (True, "r-1")
    await c.ok("GET", one + "/results?limit=5&after=r-1")
    so_far = await c.ok("GET", one + "/results?partial=true&limit=3")
    assert (len(so_far["data"]), so_far["has_more"]) == (3, True)
    rest = await c.ok("GET", one + f"/results?partial=true&cursor={so_far['next_cursor']}")
    assert (len(rest["data"]), rest["has_more"]) == (1, False)
    assert len((await c.ok("GET", one + "/results/lines"))["data"]) == 4
    assert len((await c.ok("GET", one + "/dead_letter"))["data"]) == 2
    retry = await c.ok("POST", one + "/dead_letter/retry", json={"custom_ids": ["r-2"]})
    assert retry["retry_of"] == job["id"]
    assert (await c.ok("GET", "/v1/dead_letter"))["data"][0]["custom_id"] == "r-4"
    await c.ok("POST", one + "/dead_letter/discard")
    assert (await c.call("POST", one + "/dead_letter/discard"))[0] == 400
    assert (await c.call("POST", one + "/dead_letter/retry"))[0] == 400
    await c.ok("GET", "/v1/dead_letter?state=all&limit=5")
    assert (await c.call("GET", "/v1/dead_letter?state=nope"))[0] == 400
    await c.ok("GET", one + "/rows/r-1")
    assert (await c.call("GET", one + "/rows/nope"))[0] == 404
    await c.ok("GET", one + "/workflows")
    assert (await c.call("POST", one + "/cancel"))[0] == 409
    assert (await c.call("POST", one + "/pause"))[0] == 409

    held = await c.ok("POST", "/v1/batches", json=batch("held BLOCK"))
    await c.relay.wait_status(held["id"], "running")
    running = await c.ok("GET", f"/v1/batches/{held['id']}/results?partial=true")
    assert (running["data"], running["status"]) == ([], "running")
    assert (await c.ok("POST", f"/v1/batches/{held['id']}/pause"))["paused"] == "operator"
    assert (await c.ok("POST", f"/v1/batches/{held['id']}/resume"))["paused"] is None
    await c.ok("POST", f"/v1/batches/{held['id']}/cancel")
    template = await c.ok("POST", "/v1/batches", json=batch("hourly", cron="0 * * * *",
                                                            name="hourly", priority=3))
    assert "last_run_id" in await c.ok("GET", f"/v1/batches/{template['id']}")
    for query in ("?dialect=relay", "?dialect=all&limit=1", "?dialect=relay&status=running",
                  f"?dialect=relay&template_id={template['id']}"):
        await c.ok("GET", "/v1/batches" + query)


async def anthropic_dialect(c: Contract) -> None:
    """The Message Batches API, its answers and its error envelope."""
    version = {"anthropic-version": "2023-06-01"}
    base = "/v1/messages/batches"

    def request(custom_id: str, prompt: str) -> dict[str, Any]:
        return {"custom_id": custom_id, "params": {"model": PRIMARY, "max_tokens": 16,
                                                   "messages": [{"role": "user",
                                                                 "content": prompt}]}}

    async def reaching(path: str, status: str) -> dict[str, Any]:
        async def reached() -> dict[str, Any] | None:
            found: dict[str, Any] = await c.ok("GET", path, headers=version)
            return found if found["processing_status"] == status else None
        return await wait_for(reached, timeout=5.0, what=f"{path} {status}")

    created = await c.ok("POST", base, headers=version, json={"requests": [
        request("a", "fine"), request("b", "REFUSE")]})
    one = f"{base}/{created['id']}"
    ended = await reaching(one, "ended")
    assert ended["processing_status"] == "ended" and ended["results_url"].endswith("/results")
    lines = await c.ok("GET", one + "/results", headers=version)
    assert lines.count(b"\n") == 2
    so_far = await c.ok("GET", f"/v1/batches/{created['id']}/results/lines")
    assert sorted(line["result"]["type"] for line in so_far["data"]) == [
        "errored", "succeeded"]
    await c.ok("GET", base + "?limit=1", headers=version)
    await c.ok("GET", f"{base}?before_id={created['id']}", headers=version)
    assert (await c.ok("GET", f"/v1/batches/{created['id']}"))["id"] == created["id"]
    assert (await c.call("POST", one + "/cancel", headers=version))[0] == 400  # ended
    await c.ok("DELETE", one, headers=version)
    assert (await c.call("GET", one, headers=version))[0] == 404
    held = await c.ok("POST", base, headers=version, json={"requests": [
        request("h", "held BLOCK")]})
    assert (await c.call("GET", f"{base}/{held['id']}/results", headers=version))[0] == 400
    assert (await c.call("DELETE", f"{base}/{held['id']}", headers=version))[0] == 400
    await c.ok("POST", f"{base}/{held['id']}/cancel", headers=version)
    c.relay.upstream.gate.set()  # the held rows (this batch's and the Relay job's) go
    await reaching(f"{base}/{held['id']}", "ended")
    assert (await c.call("GET", base))[0] == 400  # no anthropic-version
    c.relay.services.accepting = False  # shutting down: Relay's 503 is Anthropic's 529
    try:
        assert (await c.call("POST", base, headers=version, json={"requests": [
            request("late", "fine")]}))[0] == 529
    finally:
        c.relay.services.accepting = True
    assert (await c.call("POST", base, headers=version, json={"requests": []}))[0] == 400


async def openai_dialect(c: Contract) -> None:
    form = upload_form(jsonl(record("a", "fine"), record("b", "REFUSE"), record("c", "OUTAGE")),
                       purpose="batch", **{"expires_after[anchor]": "created_at",
                                           "expires_after[seconds]": "3600"})
    upload = await c.ok("POST", "/v1/files", data=form)
    assert upload["expires_at"] is not None
    created = await c.ok("POST", "/v1/batches", json={
        "input_file_id": upload["id"], "endpoint": CHAT, "completion_window": "24h",
        "metadata": {"team": "a"}, "output_expires_after": {"anchor": "created_at",
                                                            "seconds": 7200}})
    done = await c.relay.wait_status(created["id"], "completed")
    assert done["usage"] is not None
    one = f"/v1/batches/{done['id']}"
    await c.ok("GET", one + "/results")
    lines = await c.ok("GET", one + "/results/lines?limit=2")
    assert all(line["custom_id"] in "abc" for line in lines["data"]) and lines["has_more"]
    await c.ok("GET", one + "/dead_letter")
    await c.ok("POST", one + "/dead_letter/retry")
    inline = await c.ok("POST", "/v1/batches", json={
        "endpoint": CHAT, "completion_window": "24h", "requests": [record("i", "fine")]})
    await c.relay.wait_status(inline["id"], "completed")
    await c.ok("GET", "/v1/batches")
    await c.ok("GET", "/v1/batches?limit=2&status=completed")
    await c.ok("GET", "/v1/batches?dialect=all")  # both shapes in one list

    for file_id in (done["output_file_id"], done["error_file_id"], upload["id"]):
        await c.ok("GET", f"/v1/files/{file_id}")
        await c.ok("GET", f"/v1/files/{file_id}/content")
    await c.ok("GET", "/v1/files?purpose=batch_output&order=asc&limit=1")
    await c.ok("DELETE", f"/v1/files/{upload['id']}")
    assert (await c.call("GET", f"/v1/files/{upload['id']}"))[0] == 404
    assert (await c.call("DELETE", f"/v1/files/{upload['id']}"))[0] == 404


async def refusals(c: Contract) -> None:
    async def status(method: str, path: str, **kwargs: Any) -> int:
        return (await c.call(method, path, **kwargs))[0]

    assert await status("GET", "/v1/models", auth=False) == 401
    assert await status("GET", "/v1/batches", key="not-a-key") == 401
    assert await status("GET", "/v1/batches/" + "0" * 32) == 404
    assert await status("POST", "/v1/batches/" + "0" * 32 + "/cancel") == 404
    assert await status("POST", "/v1/batches", data=b"{not json",
                        headers={"Content-Type": "application/json"}) == 400
    assert await status("POST", "/v1/batches", json={"endpoint": CHAT, "nope": 1}) == 400
    assert await status("POST", "/v1/batches", json={"x": "y" * (2 * MiB)}) == 413
    assert await status("GET", "/v1/batches?status=sideways") == 400
    assert await status("GET", "/v1/batches?dialect=klingon") == 400
    assert await status("GET", "/v1/files?limit=0") == 400
    assert await status("POST", "/v1/files", data=upload_form(b"{}\n")) == 400
    big = upload_form(b"x" * (2 * MiB), purpose="batch")
    assert await status("POST", "/v1/files", data=big) == 413
    assert await status("GET", "/v1/files/file-" + "0" * 32 + "/content") == 404
    closed = await c.relay.new_key("ws-closed")
    await asyncio.to_thread(c.relay.services.repo.set_workspace, "ws-closed",
                            now=c.relay.clock(), batch_access=False)
    assert await status("GET", "/v1/batches", key=closed) == 404
    assert await status("GET", "/v1/events", key=closed) == 404
    assert await status("GET", "/v1/nodes", key=closed) == 404
    job = await c.ok("POST", "/v1/batches", json=batch("paged"))
    await c.relay.wait_status(job["id"], "completed")
    assert await status("GET", f"/v1/batches/{job['id']}/results?limit=0") == 400
    assert await status("GET", f"/v1/batches/{job['id']}/results?after=nope") == 400
    for query in ("?partial=maybe", "?cursor=x", "?partial=true&cursor=x",
                  "?partial=true&after=r-1"):
        assert await status("GET", f"/v1/batches/{job['id']}/results{query}") == 400
    assert await status("GET", f"/v1/batches/{job['id']}/results/lines?cursor=x") == 400


async def event_stream(c: Contract) -> None:
    """The stream's media type, and each event's `data` against the schema its name has
    in the document's x-events."""
    assert (await c.call("GET", "/v1/events", auth=False))[0] == 401
    async with c.relay.client.get("/v1/events", headers=c.relay.headers()) as resp:
        c.check("GET", "/v1/events", resp.status, resp.content_type, None, resp.headers)
        seen = [kind async for kind in checked_events(resp)]
    assert seen[0] == "stream.hello" and "job.snapshot" in seen
    async with c.relay.client.get("/v1/events?rows=true", headers=c.relay.headers()) as resp:
        await c.ok("POST", "/v1/batches", json=batch("fine", "REFUSE"))
        seen = [kind async for kind in checked_events(resp)]
    assert seen.count("row") == 2 and "job.ended" in seen
    listed = (await c.ok("GET", "/v1/batches?dialect=relay&limit=1"))["data"][0]
    job = await asyncio.to_thread(c.relay.services.repo.get_job, listed["id"])
    assert job is not None  # a lagged event is checked here; tests/api/test_events.py
    validate(lagged(job, 7).data,  # has a stream fall behind
             pointer("components", "schemas", EVENTS["lagged"]))


async def checked_events(resp: aiohttp.ClientResponse) -> AsyncIterator[str]:
    """Each event's name, its data validated, until the snapshot is over (a second of
    silence)."""
    kind = None
    while True:
        try:
            line = (await asyncio.wait_for(resp.content.readline(), 1.0)).decode()
        except TimeoutError:
            return
        name, _, value = line.rstrip("\n").partition(": ")
        if name == "event":
            kind = value
        elif name == "data" and kind is not None:
            validate(json.loads(value), pointer("components", "schemas", EVENTS[kind]))
            yield kind


def test_a_job_view_of_each_dialect_is_one_branch_of_batch() -> None:
    """`Batch` is anyOf the two dialects' objects: each job reads as exactly one."""
    job = Job(id="0" * 32, workspace_id=1, dialect="relay", name="n", model=PRIMARY,
              endpoint=CHAT, status="completed", priority=0, created_at=0.0, seq=1)
    views = {"RelayJob": DIALECTS["relay"].render(job),
             "OpenAIBatch": DIALECTS["openai"].render(replace(
                 job, id="batch_" + "0" * 32, dialect="openai", input_file_id="f"))}
    for name, view in views.items():
        matched = [other for other in views
                   if not problems(view, pointer("components", "schemas", other))]
        assert matched == [name]


async def test_a_full_body_budget_answers_the_documented_429(make_relay: MakeRelay) -> None:
    relay = await make_relay(server={"max_body_mb": 1, "max_parsing_mb": 1})
    contract, release = Contract(relay), asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:  # chunked: it reserves the whole cap
        yield b'{"model": "gpt-4o-mini", '
        await release.wait()
        yield b'"requests": []}'

    holder = asyncio.create_task(contract.call(
        "POST", "/v1/batches", data=slow_body(), headers={"Content-Type": "application/json"}))
    budget = relay.client.app[BODY_BUDGET]
    await wait_for(lambda: budget.reserved > 0, what="the first body to reserve the budget")
    status, body = await contract.call("POST", "/v1/batches", json=batch("x"))
    release.set()
    assert (status, body["error"]["code"]) == (429, "server_busy")
    assert (await holder)[0] == 400  # its empty `requests`
