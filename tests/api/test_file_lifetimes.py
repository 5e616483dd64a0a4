"""File lifetimes through the API: an upload's `expires_after` (multipart fields, as the
openai SDK sends them), a batch's `output_expires_after` on its result files, what an
expired file answers, and uploads that leave nothing behind (408 on an idle upload)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from daemon.api import files as files_api
from tests.actors.harness import PRIMARY, wait_for
from tests.api.conftest import Relay, assert_envelope

CHAT = "/v1/chat/completions"
HOUR = 3600


def form(*, data: bytes = b'{"x": 1}\n', **fields: str) -> aiohttp.FormData:
    made = aiohttp.FormData()
    made.add_field("purpose", "batch")
    for name, value in fields.items():
        made.add_field(name, value)
    made.add_field("file", data, filename="in.jsonl")
    return made


def lifetime(seconds: int | str, anchor: str = "created_at") -> dict[str, str]:
    return {"expires_after[anchor]": anchor, "expires_after[seconds]": str(seconds)}


async def upload(relay: Relay, **fields: Any) -> tuple[int, dict[str, Any]]:
    return await relay.call("POST", "/v1/files", data=form(**fields))


def on_disk(relay: Relay) -> set[str]:
    root: Path = relay.services.files.root
    return {p.name for p in root.iterdir()} if root.exists() else set()


def record(custom_id: str, text: str) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": CHAT,
            "body": {"model": PRIMARY, "messages": [{"role": "user", "content": text}]}}


def openai_batch(**extra: Any) -> dict[str, Any]:
    return {"endpoint": CHAT, "completion_window": "24h",
            "requests": [record("ok", "fine"), record("no", "REFUSE me")], **extra}


# -- uploads ----------------------------------------------------------------------------


async def test_an_upload_with_expires_after_has_expires_at(relay: Relay) -> None:
    status, made = await upload(relay, **lifetime(7200))
    assert status == 200, made
    assert made["expires_at"] == made["created_at"] + 7200
    assert await relay.ok("GET", f"/v1/files/{made['id']}") == made
    assert (await relay.ok("GET", "/v1/files"))["data"] == [made]


async def test_an_upload_without_expires_after_never_expires(relay: Relay) -> None:
    status, made = await upload(relay)
    assert status == 200 and made["expires_at"] is None
    relay.clock.advance(10 * 365 * 86_400)
    assert (await relay.ok("GET", f"/v1/files/{made['id']}"))["id"] == made["id"]


@pytest.mark.parametrize(("fields", "param"), [
    (lifetime(HOUR - 1), "expires_after[seconds]"),
    (lifetime(2_592_001), "expires_after[seconds]"),
    (lifetime("an hour"), "expires_after[seconds]"),
    (lifetime(HOUR, anchor="last_active_at"), "expires_after[anchor]"),
    ({"expires_after[seconds]": "3600"}, "expires_after[anchor]"),
    ({"expires_after[anchor]": "created_at"}, "expires_after[seconds]"),
])
async def test_a_bad_expires_after_is_400_and_leaves_nothing(relay: Relay,
                                                             fields: dict[str, str],
                                                             param: str) -> None:
    status, body = await upload(relay, **fields)
    assert status == 400
    assert assert_envelope(body)["param"] == param
    assert (await relay.ok("GET", "/v1/files"))["data"] == []
    assert on_disk(relay) == set()


async def test_an_expired_file_is_gone(relay: Relay) -> None:
    _, made = await upload(relay, **lifetime(HOUR))
    _, kept = await upload(relay)
    file_id = made["id"]
    assert await relay.ok("GET", f"/v1/files/{file_id}/content") is not None
    relay.clock.advance(HOUR)
    for method, path in (("GET", f"/v1/files/{file_id}"),
                         ("GET", f"/v1/files/{file_id}/content"),
                         ("DELETE", f"/v1/files/{file_id}")):
        status, body = await relay.call(method, path)
        assert status == 404, (method, path, body)
        assert assert_envelope(body)["type"] == "not_found_error"
    assert [f["id"] for f in (await relay.ok("GET", "/v1/files"))["data"]] == [kept["id"]]
    status, body = await relay.call("POST", "/v1/batches", json={
        "input_file_id": file_id, "endpoint": CHAT, "completion_window": "24h"})
    assert status == 400 and assert_envelope(body, code="file_not_found")
    # The timer (ticked by the daemon's clock) then deletes the bytes; the others stay.
    await wait_for(lambda: file_id not in on_disk(relay), timeout=5, what="the bytes to go")
    assert on_disk(relay) == {kept["id"]}


async def test_an_idle_upload_is_408_and_leaves_nothing(relay: Relay,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files_api, "UPLOAD_IDLE_S", 0.05)
    boundary = "idle-boundary"
    never = asyncio.Event()

    async def stalled() -> AsyncIterator[bytes]:
        yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n"
               f"batch\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
               'filename="a.jsonl"\r\n\r\n{"x": 1}\n').encode()
        await never.wait()  # the client goes quiet mid-file

    headers = {**relay.headers(), "Content-Type": f"multipart/form-data; boundary={boundary}"}
    async with relay.client.post("/v1/files", data=stalled(), headers=headers) as reply:
        assert reply.status == 408
        assert assert_envelope(await reply.json(), code="upload_timeout")["param"] == "file"
    assert on_disk(relay) == set()
    assert (await relay.ok("GET", "/v1/files"))["data"] == []


# -- result files -------------------------------------------------------------------------


async def test_result_files_expire_after_output_expires_after(relay: Relay) -> None:
    job = await relay.submit(openai_batch(
        output_expires_after={"anchor": "created_at", "seconds": 7200}))
    done = await relay.wait_status(job["id"], "completed")
    made = [await relay.ok("GET", f"/v1/files/{done[name]}")
            for name in ("output_file_id", "error_file_id")]
    for result in made:
        assert result["purpose"] == "batch_output"
        assert result["expires_at"] == result["created_at"] + 7200
    relay.clock.advance(7200)
    for result in made:
        status, _ = await relay.call("GET", f"/v1/files/{result['id']}/content")
        assert status == 404
    input_file = await relay.ok("GET", f"/v1/files/{done['input_file_id']}")
    assert input_file["expires_at"] is None  # only the result files were asked for


async def test_without_output_expires_after_result_files_stay(relay: Relay) -> None:
    job = await relay.submit(openai_batch())
    done = await relay.wait_status(job["id"], "completed")
    output = await relay.ok("GET", f"/v1/files/{done['output_file_id']}")
    assert output["expires_at"] is None


@pytest.mark.parametrize(("value", "param"), [
    ({"anchor": "created_at", "seconds": 60}, "output_expires_after.seconds"),
    ({"anchor": "created_at", "seconds": "7200"}, "output_expires_after.seconds"),
    ({"anchor": "completed_at", "seconds": 7200}, "output_expires_after.anchor"),
    ({"seconds": 7200}, "output_expires_after.anchor"),
    ({"anchor": "created_at", "seconds": 7200, "extra": 1}, "output_expires_after.extra"),
    (7200, "output_expires_after"),
])
async def test_a_bad_output_expires_after_is_400_naming_it(relay: Relay, value: Any,
                                                           param: str) -> None:
    status, body = await relay.call("POST", "/v1/batches",
                                    json=openai_batch(output_expires_after=value))
    assert status == 400
    assert assert_envelope(body)["param"] == param
    assert (await relay.listing())["data"] == []
