"""A store that cannot write: requests that would write get 507 or 503 with the error
envelope and keep nothing, `/healthz` says degraded until a probe write succeeds, and
it all heals with no restart. The fault is injected at the store seam: every write
transaction (`Store.write`) fails while `fault.on` is set."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import aiohttp
import peewee
import pytest
from prometheus_client.parser import text_string_to_metric_families

from daemon.store.backend import SqlStore
from daemon.store.files import PartialFile
from tests.api.conftest import Relay, assert_envelope, batch

DISK_FULL = "database or disk is full"


class StoreFault:
    def __init__(self, relay: Relay, monkeypatch: pytest.MonkeyPatch) -> None:
        self.on = False
        self.message = DISK_FULL
        repo = relay.services.repo
        assert isinstance(repo, SqlStore)
        real = repo.write

        def write() -> AbstractContextManager[Any]:
            if self.on:
                raise peewee.OperationalError(self.message)
            return real()

        monkeypatch.setattr(repo, "write", write)


@pytest.fixture
def fault(relay: Relay, monkeypatch: pytest.MonkeyPatch) -> Iterator[StoreFault]:
    yield StoreFault(relay, monkeypatch)


async def health(relay: Relay) -> tuple[int, dict[str, Any]]:
    async with relay.client.get("/healthz") as resp:
        return resp.status, await resp.json()


async def probe(relay: Relay, now: float) -> None:
    await asyncio.to_thread(lambda: relay.daemon.prober.tick(now).get(timeout=5))


async def test_a_submit_to_a_full_store_is_507_and_keeps_nothing(relay: Relay,
                                                                 fault: StoreFault) -> None:
    fault.on = True
    status, body = await relay.call("POST", "/v1/batches", json=batch("a", "b"))

    assert status == 507
    error = assert_envelope(body, code="insufficient_storage")
    assert error["type"] == "server_error"
    assert str(relay.services.config.server.data_dir) in error["message"]
    fault.on = False
    assert (await relay.listing())["data"] == []


async def test_any_other_write_fault_is_503_store_unavailable(relay: Relay,
                                                              fault: StoreFault) -> None:
    job = await relay.submit(batch("BLOCK me"))
    fault.on, fault.message = True, "disk I/O error"
    status, body = await relay.call("POST", f"/v1/batches/{job['id']}/cancel")

    assert status == 503
    assert_envelope(body, code="store_unavailable")
    relay.upstream.gate.set()


async def test_health_is_degraded_from_the_first_refusal_until_a_probe_write_succeeds(
        relay: Relay, fault: StoreFault) -> None:
    await probe(relay, relay.clock())  # the start's probe is over (its "ok" recorded)
    assert await health(relay) == (200, {"status": "ok"})
    fault.on = True
    await relay.call("POST", "/v1/batches", json=batch("a"))

    status, body = await health(relay)
    assert status == 503
    assert body["status"] == "degraded" and body["reason"] == "insufficient_storage"
    assert DISK_FULL in body["detail"]

    await probe(relay, relay.clock() + 60)  # still failing: still degraded
    assert (await health(relay))[0] == 503
    fault.on = False
    await probe(relay, relay.clock() + 120)
    assert await health(relay) == (200, {"status": "ok"})
    assert (await relay.submit(batch("after")))["status"] in ("queued", "running",
                                                              "in_progress", "validating")


async def test_the_probe_finds_a_fault_with_no_request_at_all(relay: Relay,
                                                              fault: StoreFault) -> None:
    fault.on, fault.message = True, "attempt to write a readonly database"
    await probe(relay, relay.clock() + 60)

    status, body = await health(relay)
    assert status == 503
    assert (body["reason"], body["detail"]) == ("store_unavailable", fault.message)


async def test_an_upload_that_meets_a_full_disk_is_507_and_leaves_no_partial_file(
        relay: Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(self: PartialFile, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(PartialFile, "append", full)
    form = aiohttp.FormData()
    form.add_field("purpose", "batch")
    form.add_field("file", b'{"x": 1}\n' * 1000, filename="in.jsonl")
    status, body = await relay.call("POST", "/v1/files", data=form)

    assert status == 507
    assert_envelope(body, code="insufficient_storage")
    root = relay.services.files.root
    assert not root.exists() or list(root.iterdir()) == []
    monkeypatch.undo()
    assert (await relay.ok("GET", "/v1/files"))["data"] == []


async def test_metrics_carry_whether_the_store_takes_writes(relay: Relay,
                                                            fault: StoreFault) -> None:
    async def writable() -> float:
        async with relay.client.get("/metrics") as resp:
            text = await resp.text()
        (sample,) = [s for f in text_string_to_metric_families(text) for s in f.samples
                     if s.name == "relay_store_writable"]
        return sample.value

    assert await writable() == 1
    fault.on = True
    await probe(relay, relay.clock() + 60)
    assert await writable() == 0
    fault.on = False
    await probe(relay, relay.clock() + 120)
    assert await writable() == 1
