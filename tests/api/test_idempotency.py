"""Idempotent submits (`Idempotency-Key`) on the three creates: a retry with the same
key and body answers the first answer verbatim and creates nothing; another body is 409
`idempotency_key_reused` in the dialect's envelope; concurrent retries create one job;
a key is a workspace's, and is swept after 24 hours."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from tests.actors.harness import PRIMARY
from tests.api.conftest import Relay, assert_envelope, batch, openai_batch

KEY = "Idempotency-Key"
VERSION = {"anthropic-version": "2023-06-01"}


async def post(relay: Relay, path: str, body: bytes, key: str | None, *,
               headers: dict[str, str] | None = None,
               api_key: str | None = None) -> tuple[int, bytes, dict[str, str]]:
    sent = {**relay.headers(api_key), "Content-Type": "application/json", **(headers or {})}
    if key is not None:
        sent[KEY] = key
    async with relay.client.post(path, data=body, headers=sent) as resp:
        return resp.status, await resp.read(), dict(resp.headers)


async def job_count(relay: Relay) -> int:
    return len((await relay.listing("?limit=100"))["data"])


async def test_a_retry_answers_the_first_answer_verbatim_and_creates_nothing(
        relay: Relay) -> None:
    body = json.dumps(batch("one", "two")).encode()
    status, first, _ = await post(relay, "/v1/batches", body, "k-1")
    relay.clock.advance(23 * 3600)  # within the 24 hours
    again, second, headers = await post(relay, "/v1/batches", body, "k-1")
    assert (status, again) == (200, 200)
    assert second == first
    assert headers.get("Idempotent-Replayed") == "true"
    assert await job_count(relay) == 1
    # Without a key, the same body is a new batch.
    assert (await post(relay, "/v1/batches", body, None))[0] == 200
    assert await job_count(relay) == 2


async def test_another_body_with_the_key_is_refused_in_each_dialects_envelope(
        relay: Relay) -> None:
    relay_body = json.dumps(batch("one")).encode()
    assert (await post(relay, "/v1/batches", relay_body, "k-2"))[0] == 200
    status, raw, _ = await post(relay, "/v1/batches", json.dumps(batch("other")).encode(), "k-2")
    assert status == 409
    error = assert_envelope(json.loads(raw), code="idempotency_key_reused")
    assert error["param"] == KEY
    # The OpenAI dialect shares the path; a key used on another route is another body.
    openai = json.dumps(openai_batch("x")).encode()
    assert (await post(relay, "/v1/batches", openai, "k-o"))[0] == 200
    assert (await post(relay, "/v1/batches", openai, "k-o"))[0] == 200
    assert (await post(relay, "/v1/messages/batches", relay_body, "k-o",
                       headers=VERSION))[0] == 400
    assert await job_count(relay) == 2


async def test_the_anthropic_create_is_idempotent_and_maps_the_status(relay: Relay) -> None:
    body = json.dumps({"requests": [{"custom_id": "a", "params": {
        "model": PRIMARY, "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}]}}]}).encode()
    status, first, _ = await post(relay, "/v1/messages/batches", body, "k-a", headers=VERSION)
    assert status == 200, first
    assert (await post(relay, "/v1/messages/batches", body, "k-a", headers=VERSION))[1] == first
    other = body.replace(b'"hi"', b'"ho"')
    status, raw, _ = await post(relay, "/v1/messages/batches", other, "k-a", headers=VERSION)
    error = json.loads(raw)
    assert status == 400  # Anthropic's API has no 409 (its error_status)
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    assert "Idempotency-Key" in error["error"]["message"]
    assert await job_count(relay) == 1


async def test_concurrent_retries_with_one_key_create_exactly_one_job(relay: Relay) -> None:
    body = json.dumps(batch(*[f"p{i}" for i in range(50)])).encode()
    answers = await asyncio.gather(*[post(relay, "/v1/batches", body, "k-c")
                                     for _ in range(8)])
    assert {status for status, _, _ in answers} == {200}
    assert len({raw for _, raw, _ in answers}) == 1
    assert await job_count(relay) == 1


async def test_a_failed_request_releases_its_key(relay: Relay) -> None:
    bad = json.dumps({"model": "no-such-model", "requests": []}).encode()
    assert (await post(relay, "/v1/batches", bad, "k-f"))[0] == 400
    good = json.dumps(batch("one")).encode()
    assert (await post(relay, "/v1/batches", good, "k-f"))[0] == 200
    assert await job_count(relay) == 1


async def test_keys_are_per_workspace(relay: Relay) -> None:
    other = await relay.new_key("ws-b")
    body = json.dumps(batch("one")).encode()
    mine = await post(relay, "/v1/batches", body, "shared")
    theirs = await post(relay, "/v1/batches", body, "shared", api_key=other)
    assert (mine[0], theirs[0]) == (200, 200)
    assert json.loads(mine[1])["id"] != json.loads(theirs[1])["id"]


async def test_a_malformed_key_is_refused_naming_the_header(relay: Relay) -> None:
    body = json.dumps(batch("one")).encode()
    status, raw, _ = await post(relay, "/v1/batches", body, "x" * 256)
    assert status == 400
    assert assert_envelope(json.loads(raw), code="invalid_idempotency_key")["param"] == KEY
    assert await job_count(relay) == 0


async def test_keys_are_swept_after_24_hours(relay: Relay) -> None:
    body = json.dumps(batch("one")).encode()
    first = json.loads((await post(relay, "/v1/batches", body, "k-s"))[1])
    relay.clock.advance(24 * 3600 + 1)
    await asyncio.to_thread(lambda: relay.daemon.sweeper.tick(relay.clock()).get(timeout=5))
    assert await asyncio.to_thread(relay.services.repo.sweep_keys, now=relay.clock()) == 0
    second = json.loads((await post(relay, "/v1/batches", body, "k-s"))[1])
    assert second["id"] != first["id"]


def form(data: bytes) -> aiohttp.FormData:
    made = aiohttp.FormData()
    made.add_field("purpose", "batch")
    made.add_field("file", data, filename="in.jsonl")
    return made


async def upload(relay: Relay, data: bytes, key: str) -> tuple[int, Any]:
    headers = {**relay.headers(), KEY: key}
    async with relay.client.post("/v1/files", data=form(data), headers=headers) as resp:
        return resp.status, await resp.json()


async def test_a_file_upload_is_idempotent_by_its_parts_not_its_boundary(
        relay: Relay) -> None:
    first = await upload(relay, b'{"x": 1}\n', "f-1")
    again = await upload(relay, b'{"x": 1}\n', "f-1")  # a new form: a new boundary
    assert first[0] == again[0] == 200
    assert again[1] == first[1]
    status, body = await upload(relay, b'{"x": 2}\n', "f-1")
    assert status == 409
    assert assert_envelope(body, code="idempotency_key_reused")["param"] == KEY
    assert len((await relay.ok("GET", "/v1/files"))["data"]) == 1
    assert len(list(relay.services.files.root.iterdir())) == 1  # no stray bytes
