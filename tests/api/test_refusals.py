"""Input that once crashed a handler or slipped through: every shape gets a 4xx that
names the problem, never a 500, and nothing is stored."""

from __future__ import annotations

import asyncio
import gzip
import logging

import aiohttp
import pytest

from tests.api.conftest import MakeRelay, Relay, assert_envelope, batch


async def post_raw(relay: Relay, path: str, data: str | bytes,
                   content_type: str = "application/json") -> tuple[int, dict]:
    headers = {**relay.headers(), "Content-Type": content_type}
    async with relay.client.post(path, data=data, headers=headers) as reply:
        return reply.status, await reply.json()


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
async def test_non_standard_json_numbers_are_refused(relay: Relay, constant: str) -> None:
    raw = f'{{"model": "gpt-4o-mini", "priority": {constant}, "requests": []}}'
    status, body = await post_raw(relay, "/v1/batches", raw)
    assert status == 400
    assert constant.lstrip("-") in assert_envelope(body)["message"]
    assert (await relay.listing())["data"] == []


async def test_deeply_nested_json_is_a_400_not_a_crash(relay: Relay) -> None:
    raw = "[" * 100_000 + "]" * 100_000
    status, body = await post_raw(relay, "/v1/batches", raw)
    assert status == 400
    assert "nested too deeply" in assert_envelope(body)["message"]


async def test_a_multipart_upload_without_a_boundary_is_a_400(relay: Relay) -> None:
    status, body = await post_raw(relay, "/v1/files", b"--x\r\n", "multipart/form-data")
    assert status == 400
    assert assert_envelope(body)["param"] == "file"


async def test_without_batch_access_the_files_routes_are_404_too(relay: Relay) -> None:
    await asyncio.to_thread(relay.services.repo.set_workspace, "ws-a", now=relay.clock(),
                            batch_access=False)
    for method, path in (("GET", "/v1/files"), ("GET", "/v1/files/file-" + "a" * 32),
                         ("POST", "/v1/files")):
        status, body = await relay.call(method, path)
        assert status == 404, (method, path)
        assert_envelope(body, code="not_found")


async def test_a_client_leaving_an_event_stream_is_not_an_error(
        relay: Relay, caplog: pytest.LogCaptureFixture) -> None:
    job = await relay.submit(batch("a"))
    with caplog.at_level(logging.DEBUG, logger="relay"):
        async with relay.client.get("/v1/events", headers=relay.headers()) as stream:
            assert (await stream.content.readline()).startswith(b"retry:")
        await relay.wait_status(job["id"], "completed")  # events go to the closed stream
        await asyncio.sleep(0.1)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


async def upload(relay: Relay, name: str) -> str:
    form = aiohttp.FormData()
    form.add_field("purpose", "batch")
    form.add_field("file", b'{"x": 1}\n', filename=name)
    async with relay.client.post("/v1/files", data=form, headers=relay.headers()) as reply:
        assert reply.status == 200
        return (await reply.json())["id"]


def bomb_field(boundary: str, name: str, payload: bytes, encoding: str | None) -> bytes:
    headers = f'Content-Disposition: form-data; name="{name}"\r\n'
    if encoding:
        headers += f"Content-Encoding: {encoding}\r\n"
    return f"--{boundary}\r\n{headers}\r\n".encode() + payload + b"\r\n"


@pytest.mark.parametrize(("kind", "encoding", "says"), [
    ("gzip-bomb", "gzip", "must not be compressed"),
    ("long", None, "longer than 4096 bytes"),
])
async def test_a_form_field_is_read_small_and_never_inflated(relay: Relay, kind: str,
                                                             encoding: str | None,
                                                             says: str) -> None:
    """A compressed `purpose` part used to be inflated whole into memory (an upload is
    exempt from the body budget)."""
    payload = (gzip.compress(b"batch" + b" " * 50_000_000, mtime=0) if kind == "gzip-bomb"
               else b"b" * 5_000)
    boundary = "relayboundary"
    body = (bomb_field(boundary, "purpose", payload, encoding)
            + bomb_field(boundary, "file", b'{"x": 1}\n', None) + f"--{boundary}--\r\n".encode())
    status, answer = await post_raw(relay, "/v1/files", body,
                                    f"multipart/form-data; boundary={boundary}")
    assert status == 400
    error = assert_envelope(answer)
    assert error["param"] == "purpose" and says in error["message"]
    assert (await relay.ok("GET", "/v1/files"))["data"] == []


async def test_files_list_in_either_order_and_nothing_else(relay: Relay) -> None:
    made = [await upload(relay, f"f{i}.jsonl") for i in range(3)]
    newest = await relay.ok("GET", "/v1/files")
    oldest = await relay.ok("GET", "/v1/files?order=asc&limit=2")
    assert [f["id"] for f in newest["data"]] == made[::-1]
    assert ([f["id"] for f in oldest["data"]], oldest["has_more"]) == (made[:2], True)
    rest = await relay.ok("GET", f"/v1/files?order=asc&after={made[1]}")
    assert [f["id"] for f in rest["data"]] == made[2:]
    status, body = await relay.call("GET", "/v1/files?order=sideways")
    assert status == 400 and assert_envelope(body)["param"] == "order"


async def test_concurrent_dead_letter_retries_make_one_job(make_relay: MakeRelay) -> None:
    relay = await make_relay()
    relay.upstream.outage = True
    job = await relay.submit(batch("x OUTAGE", "y OUTAGE", "fine"))
    await relay.wait_status(job["id"], "completed")
    assert (await relay.job(job["id"]))["dead_letter"] == 2
    path = f"/v1/batches/{job['id']}/dead_letter/retry"

    answers = await asyncio.gather(*(relay.call("POST", path) for _ in range(3)))

    made = [body for status, body in answers if status == 200]
    assert len(made) == 1 and made[0]["retry_of"] == job["id"]
    assert sorted(status for status, _ in answers) == [200, 400, 400]
    entries = (await relay.ok("GET", f"/v1/batches/{job['id']}/dead_letter"))["data"]
    assert {e["redriven_to"] for e in entries} == {made[0]["id"]}
    status, _ = await relay.call("POST", path, json={"force": True})
    assert status == 200
    status, body = await relay.call("POST", path, json={"force": "yes"})
    assert status == 400 and assert_envelope(body)["param"] == "force"
