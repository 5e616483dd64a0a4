"""The dialect contract: the whole life of a job, in every dialect of `DIALECTS`, over
real HTTP on the real app, for the capabilities each declares. Every answer is checked
against the served `/openapi.json` (tests/dialects/conftest.py's `Face`). No test here
names a dialect: what differs is in tests/dialects/fixtures/."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from daemon.api.openapi import EVENTS
from daemon.dialects import DIALECTS
from daemon.dialects.base import Capability
from tests.actors.harness import answer, wait_for
from tests.api.openapi_contract import pointer, validate
from tests.dialects.conftest import Face
from tests.dialects.fixtures import FIXTURES
from tests.dialects.interface import Call, Counts, Phase

EVENT_WAIT_S = 10.0


def rows(*prompts: str) -> list[tuple[str, str]]:
    return [(f"row-{i}", p) for i, p in enumerate(prompts, 1)]


def test_every_dialect_has_a_fixture() -> None:
    assert sorted(FIXTURES) == sorted(DIALECTS)


# -- submit and get ----------------------------------------------------------------------


async def test_a_submitted_job_reads_back_and_runs_every_row(face: Face) -> None:
    job = await face.submit(rows("one", "two", "three"))
    job_id = face.d.job_id(job)
    assert not face.phase(job).ended

    assert face.d.job_id(await face.get(job_id)) == job_id
    done = await face.ended(job_id)
    assert face.phase(done) == Phase.COMPLETED
    assert face.counts(done) == Counts(total=3, succeeded=3, failed=0)


# -- list --------------------------------------------------------------------------------


@pytest.mark.capability(Capability.LIST_PAGING)
async def test_paging_through_the_list_gives_every_job_once_newest_first(face: Face) -> None:
    submitted = [face.d.job_id(await face.submit(rows(f"job {i}"))) for i in range(5)]
    seen, pages, cursor = [], [], None
    while True:
        page = face.d.read_page(await face.ok(Call("GET", face.d.list_page(2, cursor))))
        seen += page.ids
        pages.append((len(page.ids), page.has_more))
        if not page.has_more:
            break
        cursor = page.cursor
    assert seen == submitted[::-1]
    assert pages == [(2, True), (2, True), (1, False)]


# -- cancel ------------------------------------------------------------------------------


@pytest.mark.capability(Capability.CANCEL)
async def test_a_cancelled_job_ends_cancelled_and_a_second_cancel_is_refused(
        face: Face) -> None:
    job = await face.submit(rows(*(f"held {i} BLOCK" for i in range(6))))
    job_id = face.d.job_id(job)
    await wait_for(lambda: face.relay.upstream.seen("BLOCK"), what="a row in flight")

    cancelled = await face.ok(face.d.cancel(job_id))
    assert face.phase(cancelled) != Phase.COMPLETED
    face.relay.upstream.gate.set()
    done = await face.ended(job_id)

    assert face.phase(done) == Phase.CANCELLED
    counts = face.counts(done)
    assert counts.total == 6 and counts.succeeded + counts.failed == 6
    assert counts.failed >= 2  # at most batch_concurrency (4) rows ever started
    error = await face.refused(face.d.cancel(job_id), face.d.cancel_ended_status)
    assert job_id in error.message


# -- delete ------------------------------------------------------------------------------


@pytest.mark.capability(Capability.DELETE)
async def test_only_an_ended_job_can_be_deleted_and_then_it_is_gone(face: Face) -> None:
    job_id = face.d.job_id(await face.submit(rows("held BLOCK")))
    await wait_for(lambda: face.relay.upstream.seen("BLOCK"), what="the row in flight")
    await face.refused(face.d.delete(job_id), face.d.delete_open_status)
    face.relay.upstream.gate.set()
    await face.ended(job_id)

    await face.ok(face.d.delete(job_id))

    await face.refused(face.d.get(job_id), 404)
    await face.refused(face.d.delete(job_id), 404)
    listed = face.d.read_page(await face.ok(Call("GET", face.d.list_page(20, None))))
    assert job_id not in listed.ids


# -- results -----------------------------------------------------------------------------


@pytest.mark.capability(Capability.RESULTS)
async def test_results_give_each_row_once_with_its_answer_or_its_failure(face: Face) -> None:
    job = await face.submit(rows("fine", "REFUSE this", "OUTAGE here"))
    done = await face.ended(face.d.job_id(job))
    assert face.phase(done) == Phase.COMPLETED
    assert face.counts(done) == Counts(total=3, succeeded=1, failed=2)

    lines = await face.lines(done)

    assert sorted(lines) == ["row-1", "row-2", "row-3"]
    assert (lines["row-1"].succeeded, lines["row-1"].text) == (True, answer("fine"))
    assert not lines["row-2"].succeeded and not lines["row-3"].succeeded


# -- dead letter -------------------------------------------------------------------------


@pytest.mark.capability(Capability.DEAD_LETTER)
async def test_dead_lettered_rows_are_listed_re_driven_and_discarded(face: Face) -> None:
    job = await face.submit(rows("fine", "REFUSE", "a OUTAGE", "b OUTAGE"))
    job_id = face.d.job_id(job)
    await face.ended(job_id)
    dead_letter = face.d.dead_letter_path(job_id)
    listed = (await extension_ok(face, Call("GET", dead_letter)))["data"]
    assert [(e["custom_id"], e["state"]) for e in listed] == [("row-3", "open"),
                                                              ("row-4", "open")]
    face.relay.upstream.outage = False

    retry = await extension_ok(face, Call("POST", dead_letter + "/retry",
                                          {"custom_ids": ["row-3"]}))
    discarded = await extension_ok(face, Call("POST", dead_letter + "/discard",
                                              {"custom_ids": ["row-4"]}))

    retry_id = face.d.job_id(retry)
    assert retry_id != job_id
    assert discarded["discarded"] == 1 and discarded["dead_letter_open"] == 0
    entries = (await extension_ok(face, Call("GET", dead_letter)))["data"]
    assert [(e["custom_id"], e["state"], e["redriven_to"]) for e in entries] == [
        ("row-3", "redriven", retry_id), ("row-4", "discarded", None)]
    redone = await face.ended(retry_id)
    assert face.counts(redone) == Counts(total=1, succeeded=1, failed=0)
    if face.has(Capability.RESULTS):
        assert [(k, v.succeeded) for k, v in (await face.lines(redone)).items()] == [
            ("row-3", True)]
    for again in ("/retry", "/discard"):  # nothing open is left to take
        status, _ = await face.extension(Call("POST", dead_letter + again))
        assert status == 400


async def extension_ok(face: Face, call: Call) -> Any:
    status, body = await face.extension(call)
    assert status == 200, body
    return body


# -- webhook -----------------------------------------------------------------------------


class Receiver:
    """A webhook endpoint on loopback that keeps the bodies it was sent."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.read())
        return web.Response(text="thanks")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        return app


@pytest.mark.capability(Capability.WEBHOOKS)
async def test_the_webhook_carries_the_ended_job(face: Face, aiohttp_server: Any) -> None:
    receiver = Receiver()
    server = await aiohttp_server(receiver.app())
    job = await face.submit(rows("fine", "REFUSE"), webhook_url=str(server.make_url("/hook")))
    job_id = face.d.job_id(job)
    done = await face.ended(job_id)
    await wait_for(lambda: receiver.bodies, what="the webhook")
    await face.relay.webhooks_settled()

    assert len(receiver.bodies) == 1
    payload = json.loads(receiver.bodies[0])
    if face.d.webhook_schema is not None:
        validate(payload, pointer("components", "schemas", face.d.webhook_schema))
    assert face.d.job_id(payload) == job_id
    assert (face.phase(payload), face.counts(payload)) == (face.phase(done), face.counts(done))


# -- the event stream --------------------------------------------------------------------


async def test_the_event_stream_follows_a_job_in_documented_payloads(face: Face) -> None:
    relay = face.relay
    headers = face.d.extension_auth(relay.key)
    async with relay.client.get("/v1/events", headers=headers) as resp:
        face.contract.check("GET", "/v1/events", resp.status, resp.content_type, None,
                            resp.headers)
        events, seen = checked_events(resp), []
        async with asyncio.timeout(EVENT_WAIT_S):
            assert await anext(events) == ("stream.hello", {"workspace": "ws-a"})
            job_id = face.d.job_id(await face.submit(rows("fine")))
            async for kind, data in events:
                if data.get("id") == job_id:
                    seen.append((kind, data["dialect"]))
                if (kind, data.get("id")) == ("job.ended", job_id):
                    break
    # a job created while the stream sends its snapshot is in the snapshot instead
    assert seen[0] in {("job.created", face.d.name), ("job.snapshot", face.d.name)}
    assert seen[-1][0] == "job.ended"


async def checked_events(resp: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, Any]]:
    """Each event's name and data, the data validated against its schema in the
    document's x-events."""
    kind = None
    async for raw in resp.content:
        name, _, value = raw.decode().rstrip("\n").partition(": ")
        if name == "event":
            kind = value
        elif name == "data" and kind is not None:
            data = json.loads(value)
            validate(data, pointer("components", "schemas", EVENTS[kind]))
            yield kind, data


# -- refusals, in the dialect's envelope -------------------------------------------------


async def test_an_invalid_body_is_refused_naming_the_field(face: Face) -> None:
    call, field_name = face.d.invalid_submit
    error = await face.refused(call, 400)
    assert error.names(field_name), error


async def test_the_dialects_own_refusals(face: Face) -> None:
    for refusal in face.d.refusals:
        headers = None if refusal.headers is None else refusal.headers(face.relay.key)
        error = await face.refused(refusal.call, refusal.status, headers=headers)
        assert refusal.field is None or error.names(refusal.field), (refusal, error)


async def test_a_missing_or_unknown_key_is_refused(face: Face) -> None:
    job_id = face.d.job_id(await face.submit(rows("x")))
    for call in (face.d.get(job_id), Call("GET", face.d.list_page(1, None)),
                 face.d.submit(rows("y"), None)):
        await face.refused(call, 401, headers=face.d.auth(None))
        await face.refused(call, 401, key="not-a-key")


async def test_an_unknown_id_or_another_workspaces_job_is_not_found(face: Face) -> None:
    job_id = face.d.job_id(await face.submit(rows("x")))
    other = await face.relay.new_key("ws-b")
    for call in (face.d.get(face.d.unknown_id), face.d.cancel(face.d.unknown_id)):
        await face.refused(call, 404)
    error = await face.refused(face.d.get(job_id), 404, key=other)
    assert job_id in error.message


async def test_a_request_no_route_serves_is_refused_in_the_envelope(face: Face) -> None:
    for call, status in face.d.unrouted:
        await face.refused(call, status)
