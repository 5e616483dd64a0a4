"""The listener `relayd serve` runs (daemon/api/listener.py), on a real Daemon and a
real socket: clients that trickle a request head or stall a body are closed, and
past `max_connections` the slow ones make room, so new clients and /healthz get in."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from daemon.api.app import create_app
from daemon.api.body_budget import BODY_BUDGET
from daemon.api.context import Services
from daemon.api.listener import Listener
from daemon.config import ServerConfig
from tests.actors.harness import (
    FakeClock,
    Upstream,
    make_config,
    make_daemon,
    stop_daemon,
    wait_for,
)
from tests.api.conftest import batch
from tests.api.raw_http import Raw, chunk, head, post_head

MB = 1024 * 1024
SLOW_HEAD = head("GET", "/healthz", end=False)  # the blank line that ends it never comes


@dataclass
class Served:
    listener: Listener
    services: Services
    key: str

    @property
    def port(self) -> int:
        assert self.listener.port is not None
        return self.listener.port

    async def slow_head(self) -> Raw:
        raw = await Raw.open(self.port)
        await raw.send(SLOW_HEAD)
        return raw

    async def healthz(self) -> int:
        raw = await Raw.open(self.port)
        try:
            await raw.send(head("GET", "/healthz", headers={"Connection": "close"}))
            return (await raw.answer()).status
        finally:
            raw.close()


Serve = Callable[..., Awaitable[Served]]


@pytest.fixture
async def serve(tmp_path: Path) -> AsyncIterator[Serve]:
    """`await serve(max_connections=8, ...)`: a started Daemon behind the listener,
    on a free loopback port, with `[server]` keys overridden."""
    started: list[tuple[Listener, Any, Upstream]] = []

    async def start(**server: Any) -> Served:
        upstream, clock = Upstream(), FakeClock()
        config = make_config(tmp_path, server={"host": "127.0.0.1", "port": 0, **server})
        daemon = make_daemon(config, upstream, clock)
        services = await asyncio.to_thread(daemon.start)
        listener = await Listener.open(create_app(services), config.server)
        started.append((listener, daemon, upstream))
        key = await asyncio.to_thread(services.repo.create_key, "ws-a", now=clock())
        return Served(listener, services, key)

    yield start
    for listener, daemon, upstream in started:
        await listener.close()
        await asyncio.to_thread(stop_daemon, daemon, upstream)


async def test_past_the_cap_new_clients_get_in_and_the_oldest_slow_heads_make_room(
        serve: Serve) -> None:
    served = await serve(max_connections=8, header_timeout_s=60)
    slow = [await served.slow_head() for _ in range(20)]
    try:
        for _ in range(5):
            assert await served.healthz() == 200
        assert len(served.listener.guard.conns) <= 8
        for raw in slow[:12]:  # evicted as the later ones came in
            assert await raw.closed_by_server()
        newest = slow[-1]  # kept: it can still finish its request
        await newest.send(b"\r\n")
        assert (await newest.answer()).status == 200
    finally:
        for raw in slow:
            raw.close()


async def test_a_head_slower_than_header_timeout_is_closed_even_while_it_trickles(
        serve: Serve) -> None:
    served = await serve(header_timeout_s=0.3)
    started = time.monotonic()
    silent = [await served.slow_head() for _ in range(4)]
    trickling = await served.slow_head()

    async def trickle() -> None:
        for n in range(200):  # a header line every 50 ms: well past the deadline
            try:
                await trickling.send(f"X-Pad-{n}: 1\r\n".encode())
            except ConnectionError:
                return
            await asyncio.sleep(0.05)

    pacing = asyncio.create_task(trickle())
    try:
        for raw in [*silent, trickling]:
            assert await raw.closed_by_server()
        assert time.monotonic() - started >= 0.3
        assert await served.healthz() == 200  # a head that arrives in time is served
    finally:
        pacing.cancel()
        for raw in [*silent, trickling]:
            raw.close()


async def test_a_request_that_outlasts_header_timeout_with_a_steady_body_is_served(
        serve: Serve) -> None:
    """The head deadline ends with the head: a body sent slowly but steadily (here 1 s
    against a 0.3 s header timeout) is read to the end."""
    served = await serve(header_timeout_s=0.3, body_timeout_s=5)
    body = json.dumps(batch("slow but steady")).encode()
    raw = await Raw.open(served.port)
    try:
        await raw.send(post_head("/v1/batches", served.key, length=len(body)))
        step = len(body) // 10 + 1
        for offset in range(0, len(body), step):
            await asyncio.sleep(0.1)
            await raw.send(body[offset:offset + step])
        answer = await raw.answer()
        assert answer.status == 200, answer.body
        assert answer.json()["status"] in ("queued", "in_progress", "completed")
    finally:
        raw.close()


@pytest.mark.parametrize("sized", [True, False], ids=["content-length", "chunked"])
async def test_a_stalled_body_is_cut_off_and_its_budget_returned(
        serve: Serve, sized: bool, caplog: pytest.LogCaptureFixture) -> None:
    served = await serve(header_timeout_s=60, body_timeout_s=0.3)
    budget = served.listener.runner.app[BODY_BUDGET]
    raw = await Raw.open(served.port)
    try:
        await raw.send(post_head("/v1/batches", served.key, length=10_000 if sized else None))
        first = b'{"model": "gpt-4o-mini", "requests": ['
        started = time.monotonic()
        await raw.send(first if sized else chunk(first))
        await wait_for(lambda: budget.reserved > 0, what="the body's reservation")
        assert await raw.closed_by_server()
        assert time.monotonic() - started >= 0.3
        await wait_for(lambda: budget.reserved == 0, what="the reservation's release")
        assert await served.healthz() == 200
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no traceback
    finally:
        raw.close()


async def test_a_body_the_server_is_slow_to_read_is_not_taken_for_a_stalled_one() -> None:
    """While a handler is busy before it reads (here 1 s, against a 0.3 s body
    timeout), flow control stops reading a large body: the client is not stalling."""
    async def slow_reader(request: web.Request) -> web.Response:
        await asyncio.sleep(1.0)
        return web.json_response({"read": len(await request.read())})

    app = web.Application(client_max_size=8 * MB)
    app.router.add_post("/slow", slow_reader)
    server = ServerConfig(host="127.0.0.1", port=0, header_timeout_s=0.3, body_timeout_s=0.3)
    listener = await Listener.open(app, server)
    body = b"x" * (4 * MB)  # far past what aiohttp buffers before it pauses reading
    assert listener.port is not None
    raw = await Raw.open(listener.port)
    try:
        sending = asyncio.create_task(raw.send(head(
            "POST", "/slow", headers={"Content-Length": str(len(body))}) + body))
        answer = await raw.answer()
        await sending
        assert (answer.status, answer.json()) == (200, {"read": len(body)})
    finally:
        raw.close()
        await listener.close()


LONG = "a" * 9000  # past the 8190 bytes aiohttp's parser takes in one line


OVERSIZED = {
    "a long URL": head("GET", f"/v1/batches?after={LONG}"),
    "a long header": head("GET", "/v1/batches", headers={"X-Trace": LONG}),
    "a long header name": head("GET", "/v1/batches", headers={f"X-{LONG}": "1"}),
    "too many headers": head("GET", "/v1/batches", headers={f"X-H{i}": "v" for i in range(200)}),
}


@pytest.mark.parametrize(("what", "request_head"), OVERSIZED.items(), ids=list(OVERSIZED))
async def test_an_oversized_request_head_is_answered_in_the_error_envelope(
        serve: Serve, what: str, request_head: bytes) -> None:
    served = await serve()
    raw = await Raw.open(served.port)
    try:
        await raw.send(request_head)
        answer = await raw.answer()
        assert answer.status == 400, what
        assert answer.headers["Content-Type"].startswith("application/json"), what
        error = answer.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert (error["type"], error["code"]) == ("invalid_request_error",
                                                  "request_head_too_large"), what
        assert "at most 8190 bytes" in error["message"]
        assert await raw.closed_by_server()
    finally:
        raw.close()
    assert await served.healthz() == 200  # and the listener serves the next client


async def test_a_request_that_is_not_http_is_answered_in_the_error_envelope(
        serve: Serve) -> None:
    served = await serve()
    raw = await Raw.open(served.port)
    try:
        await raw.send(b"GET / HTTP/1.1\r\nHost: relay.test\r\nBad Header\r\n\r\n")
        answer = await raw.answer()
        assert answer.status == 400
        assert answer.json()["error"]["code"] == "malformed_request"
    finally:
        raw.close()


async def test_a_body_refused_part_read_is_dropped_unread_and_the_connection_closed(
        serve: Serve) -> None:
    served = await serve(max_body_mb=1)
    raw = await Raw.open(served.port)
    try:
        await raw.send(post_head("/v1/batches", served.key, length=3 * MB) + b"[" + b" " * MB)
        answer = await raw.answer()
        assert answer.status == 413
        assert answer.json()["error"]["code"] == "request_too_large"
        assert answer.headers["Connection"] == "close"
        handler = next(iter(served.listener.guard.conns))
        assert handler.discarding  # the rest is not parsed
        await raw.send(b" " * (2 * MB - 2) + b"]")  # the client finishes its body
        raw.writer.write_eof()
        assert await raw.closed_by_server()
    finally:
        raw.close()
    assert await served.healthz() == 200
