"""Defects the schema-driven fuzzing (tests/e2e/test_api_fuzz.py) found, kept fixed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from daemon.api.openapi import EVENTS, document
from daemon.api.stream import SNAPSHOT_PAGE
from tests.actors.harness import wait_for
from tests.api.conftest import Relay, assert_envelope, batch, openai_batch
from tests.api.openapi_contract import pointer, problems


async def test_a_multipart_part_header_with_control_characters_is_a_400(relay: Relay) -> None:
    """aiohttp's multipart reader raises its own BadHttpMessage (not a ValueError) for a
    part header it cannot parse: that was a 500."""
    body = (b'--B\r\nContent-Disposition: form-data; name="a\x10b\x00"\r\n\r\n{}\r\n'
            b'--B\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--B--\r\n')
    async with relay.client.post("/v1/files", data=body, headers={
            **relay.headers(), "Content-Type": "multipart/form-data; boundary=B"}) as resp:
        assert resp.status == 400
        assert assert_envelope(await resp.json())["param"] == "file"


async def test_a_405_names_the_methods_the_route_has(relay: Relay) -> None:
    """RFC 9110: a 405 carries Allow. The error envelope used to drop it."""
    for path, key in (("/healthz", None), ("/v1/batches", relay.key)):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with relay.client.request("PUT", path, headers=headers) as resp:
            assert resp.status == 405
            assert_envelope(await resp.json())
            assert "GET" in resp.headers["Allow"]


async def test_a_cron_with_a_one_value_range_runs_when_it_says(relay: Relay) -> None:
    """croniter reads `1-1` as `*`: this template would have run every day."""
    job = await relay.submit(batch("weekly", cron="0 9 * * 1-1"))
    assert job["next_run_at"] == "2026-10-05T09:00:00Z"  # the harness clock: Sun 4 Oct
    status, answer = await relay.call("POST", "/v1/batches",
                                      json=batch("never", cron="0 0 31 4-4 *"))
    assert status == 400 and assert_envelope(answer, code="invalid_cron")


@pytest.mark.parametrize(("path", "param"), [("/v1/batches?status=", "status"),
                                             ("/v1/batches?dialect=all&status=", "status"),
                                             ("/v1/dead_letter?state=", "state")])
async def test_an_empty_enum_filter_is_refused_naming_it(relay: Relay, path: str,
                                                         param: str) -> None:
    """`status=` listed everything as if absent; the document's enum has no "" (and
    `dialect=`, `order=` were already refused)."""
    status, answer = await relay.call("GET", path)
    assert status == 400
    assert assert_envelope(answer)["param"] == param


@pytest.mark.parametrize("action", ["retry", "discard"])
async def test_custom_ids_null_means_every_dead_lettered_row(relay: Relay, action: str) -> None:
    """The document has `custom_ids` nullable: null is the same as leaving it out."""
    made = await relay.submit(openai_batch("x OUTAGE", "y OUTAGE", "fine"))
    await relay.wait_status(made["id"], "completed")
    answer = await relay.ok("POST", f"/v1/batches/{made['id']}/dead_letter/{action}",
                            json={"custom_ids": None})
    if action == "retry":
        assert answer["request_counts"]["total"] == 2
    else:
        assert (answer["discarded"], answer["dead_letter_open"]) == (2, 0)


async def test_an_empty_upload_is_refused_naming_the_file(relay: Relay) -> None:
    form = aiohttp.FormData()
    form.add_field("purpose", "batch")
    form.add_field("file", b"", filename="empty.jsonl")
    status, answer = await relay.call("POST", "/v1/files", data=form)
    assert status == 400
    error = assert_envelope(answer, code="empty_file")
    assert error["param"] == "file"
    file_schema = document()["components"]["schemas"]["FileUpload"]["properties"]["file"]
    assert file_schema["minLength"] == 1  # the document says so too


async def test_every_event_of_the_stream_matches_the_document(relay: Relay) -> None:
    """Each kind the stream sends, live ones and the closing one included, against the
    schema the document's x-events names for it; and a snapshot of every job that has
    not ended, past the first page of 100."""
    templates = [await relay.submit(batch("later", cron="0 9 * * 1"))
                 for _ in range(SNAPSHOT_PAGE + 3)]
    seen: list[tuple[str, dict[str, Any]]] = []
    async with relay.client.get("/v1/events", headers=relay.headers()) as resp:
        reading = asyncio.create_task(read_events(resp, seen))
        await wait_for(lambda: sum(k == "job.snapshot" for k, _ in seen) == len(templates),
                       what="a snapshot of every template")
        job = await relay.submit(batch("live"))
        await wait_for(lambda: ("job.ended", job["id"]) in
                       {(k, d.get("id")) for k, d in seen}, what="the job's end")
        relay.services.hub.close_all()  # as when relayd stops
        await asyncio.wait_for(reading, 5)
    kinds = [kind for kind, _ in seen]
    assert kinds[0] == "stream.hello" and kinds[-1] == "stream.closed"
    assert {"job.snapshot", "job.created", "job.ended"} <= set(kinds)
    assert {d["id"] for k, d in seen if k == "job.snapshot"} == {t["id"] for t in templates}
    for kind, data in seen:
        assert problems(data, pointer("components", "schemas", EVENTS[kind])) == [], kind


async def read_events(resp: aiohttp.ClientResponse,
                      seen: list[tuple[str, dict[str, Any]]]) -> None:
    kind = None
    while line := (await resp.content.readline()).decode():
        name, _, value = line.rstrip("\n").partition(": ")
        if name == "event":
            kind = value
        elif name == "data" and kind is not None:
            seen.append((kind, json.loads(value)))
            if kind == "stream.closed":
                return
