"""Both upstream clients (`clients.TRANSPORTS`) on one suite, against loopback aiohttp
servers: answers, timeouts, refused and reset connections, truncated and large bodies,
the response cap and keep-alive; and the IOLoop thread they run on."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gzip
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from daemon.config import ModelConfig, RetryConfig
from daemon.upstream.clients import TRANSPORTS, make_transport
from daemon.upstream.ioloop import IOLoop
from daemon.upstream.reqwest import ReqwestTransport
from daemon.upstream.transport import (
    AiohttpTransport,
    Transport,
    TransportError,
    endpoint_url,
)

ENDPOINT = "/v1/chat/completions"
PAYLOAD = b'{"model": "m", "messages": []}'


class Upstream:
    """A loopback server that echoes what it received and the client's port; /slow waits,
    /reset drops the socket, /stall sends half a body and waits, /truncated closes after
    half its Content-Length, /big/N answers N bytes."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.app = web.Application(client_max_size=8 * 1024 * 1024)
        self.app.router.add_post("/{tail:.*}", self.answer)

    async def answer(self, request: web.Request) -> web.StreamResponse:
        if request.path.endswith("/slow"):
            await self.release.wait()
        if request.path.endswith("/reset"):
            assert request.transport is not None
            request.transport.abort()  # drop the socket mid-request: no answer at all
            return web.Response()
        if request.path.endswith(("/stall", "/truncated")):
            return await self.half_a_body(request)
        if "/big/" in request.path:
            return web.Response(body=b"b" * int(request.path.rsplit("/", 1)[1]))
        assert request.transport is not None
        echo = {
            "port": request.transport.get_extra_info("peername")[1],
            "path": request.path,
            "auth": request.headers.get("Authorization"),
            "type": request.headers.get("Content-Type"),
            "body": (await request.read()).decode(),
        }
        return web.json_response(echo, status=201, headers={"X-Upstream": "yes"})

    async def half_a_body(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Length": "100"})
        await response.prepare(request)
        await response.write(b"x" * 50)
        if request.path.endswith("/stall"):
            await self.release.wait()
        assert request.transport is not None
        request.transport.close()
        return response


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[Upstream, str]]:
    fake = Upstream()
    server = TestServer(fake.app, host="127.0.0.1")
    await server.start_server()
    yield fake, str(server.make_url("")).rstrip("/")
    fake.release.set()
    await server.close()


@pytest.fixture(params=sorted(TRANSPORTS))
def client(request: pytest.FixtureRequest) -> str:
    """Each test that takes it runs once per upstream client."""
    return str(request.param)


@pytest.fixture
async def transport(client: str) -> AsyncIterator[Transport]:
    """Patient enough for a loaded machine (the suite runs on two workers)."""
    transport = make_transport(client, RetryConfig(request_timeout_s=10), connection_limit=4)
    yield transport
    await close(transport)


@pytest.fixture
async def impatient(client: str) -> AsyncIterator[Transport]:
    """Gives up after 0.2 s: for the tests of a timeout."""
    transport = make_transport(client, RetryConfig(request_timeout_s=0.2), connection_limit=4)
    yield transport
    await close(transport)


async def close(transport: Transport) -> None:
    assert isinstance(transport, AiohttpTransport | ReqwestTransport)
    await transport.close()


def make_model(base_url: str, **overrides: Any) -> ModelConfig:
    return ModelConfig(**({"alias": "m", "base_url": base_url, "model": "m"} | overrides))


@pytest.mark.parametrize(
    ("base", "endpoint", "url"),
    [
        (
            "https://api.openai.com/v1",
            "/v1/chat/completions",
            "https://api.openai.com/v1/chat/completions",
        ),
        ("http://127.0.0.1:9000/v1/", "/v1/embeddings", "http://127.0.0.1:9000/v1/embeddings"),
        (
            "http://127.0.0.1:9000",
            "/v1/chat/completions",
            "http://127.0.0.1:9000/v1/chat/completions",
        ),
        ("http://host/openai", "/v1/completions", "http://host/openai/v1/completions"),
        ("http://host/v1", "/v1beta/models", "http://host/v1/v1beta/models"),
    ],
)
def test_endpoint_url(base: str, endpoint: str, url: str) -> None:
    assert endpoint_url(base, endpoint) == url


@pytest.mark.parametrize("suffix", ["/v1", ""])
async def test_posts_json_to_the_joined_url(
    upstream: tuple[Upstream, str], transport: Transport, suffix: str
) -> None:
    _, base = upstream
    reply = await transport.send(make_model(base + suffix), ENDPOINT, PAYLOAD)
    echo = json.loads(reply.body)
    assert reply.status == 201 and reply.headers["x-upstream"] == "yes"
    assert echo["path"] == "/v1/chat/completions"
    assert echo["type"] == "application/json" and echo["body"] == PAYLOAD.decode()


async def test_bearer_token_only_with_a_key(
    upstream: tuple[Upstream, str], transport: Transport
) -> None:
    _, base = upstream
    with_key = await transport.send(make_model(base + "/v1", api_key="sk-test"), ENDPOINT, PAYLOAD)
    without = await transport.send(make_model(base + "/v1"), ENDPOINT, PAYLOAD)
    assert b'"auth": "Bearer sk-test"' in with_key.body
    assert b'"auth": null' in without.body


async def test_reset_connection_is_a_connection_error(
    upstream: tuple[Upstream, str], transport: Transport
) -> None:
    _, base = upstream
    with pytest.raises(TransportError) as caught:
        await transport.send(make_model(base + "/v1"), "/v1/reset", PAYLOAD)
    assert caught.value.kind == "connection" and "/v1/reset" in str(caught.value)


async def test_refused_connection_is_a_connection_error(transport: Transport) -> None:
    with pytest.raises(TransportError) as caught:
        await transport.send(make_model("http://127.0.0.1:1/v1"), ENDPOINT, PAYLOAD)
    assert caught.value.kind == "connection"


async def test_slow_answer_is_a_timeout(
    upstream: tuple[Upstream, str], impatient: Transport
) -> None:
    _, base = upstream
    with pytest.raises(TransportError) as caught:
        await impatient.send(make_model(base + "/v1"), "/v1/slow", PAYLOAD)
    assert caught.value.kind == "timeout"


async def test_a_stalled_body_is_a_timeout(
    upstream: tuple[Upstream, str], impatient: Transport
) -> None:
    _, base = upstream
    with pytest.raises(TransportError) as caught:
        await impatient.send(make_model(base + "/v1"), "/v1/stall", PAYLOAD)
    assert caught.value.kind == "timeout"


async def test_a_truncated_body_is_a_connection_error(
    upstream: tuple[Upstream, str], transport: Transport
) -> None:
    _, base = upstream
    with pytest.raises(TransportError) as caught:
        await transport.send(make_model(base + "/v1"), "/v1/truncated", PAYLOAD)
    assert caught.value.kind == "connection"


async def test_large_bodies_both_ways(upstream: tuple[Upstream, str], client: str) -> None:
    _, base = upstream
    transport = make_transport(client, RetryConfig(request_timeout_s=20), connection_limit=4)
    payload = json.dumps({"blob": "p" * (4 * 1024 * 1024)}).encode()
    try:
        echoed = await transport.send(make_model(base + "/v1"), ENDPOINT, payload)
        answer = await transport.send(make_model(base + "/v1"), f"/v1/big/{7 * 1024 * 1024}",
                                      PAYLOAD)
    finally:
        await close(transport)
    assert json.loads(echoed.body)["body"] == payload.decode()
    assert answer.status == 200 and answer.body == b"b" * (7 * 1024 * 1024)


async def test_connections_are_kept_alive_and_reopened_after_close(
    upstream: tuple[Upstream, str], transport: Transport
) -> None:
    _, base = upstream
    ports = [json.loads((await transport.send(make_model(base), ENDPOINT, PAYLOAD)).body)["port"]
             for _ in range(3)]
    assert len(set(ports)) == 1  # one connection, kept alive between requests
    await close(transport)
    assert (await transport.send(make_model(base), ENDPOINT, PAYLOAD)).status == 201


# IOLoop


@pytest.fixture
def io_loop() -> Any:
    loop = IOLoop()
    loop.start()
    yield loop
    loop.stop()


def test_io_loop_runs_coroutines_on_its_named_daemon_thread(io_loop: IOLoop) -> None:
    async def where() -> tuple[str, bool]:
        thread = threading.current_thread()
        return thread.name, thread.daemon

    assert io_loop.submit(where()).result(5) == ("relay-io", True)
    future = io_loop.submit(asyncio.sleep(0, result=42))
    assert isinstance(future, concurrent.futures.Future) and future.result(5) == 42


def test_io_loop_stop_cancels_pending_work_and_runs_cleanups() -> None:
    loop = IOLoop()
    loop.start()
    cleaned: list[str] = []

    async def cleanup() -> None:
        cleaned.append(threading.current_thread().name)

    loop.add_cleanup(cleanup)
    pending = loop.submit(asyncio.Event().wait())
    loop.stop(timeout=5)
    assert pending.cancelled()
    assert cleaned == ["relay-io"]
    with pytest.raises(RuntimeError):
        loop.submit(asyncio.sleep(0))
    loop.stop()  # a second stop is harmless


def test_io_loop_closes_a_transport_on_stop() -> None:
    loop = IOLoop()
    loop.start()
    transport = AiohttpTransport(RetryConfig())
    loop.add_cleanup(transport.close)
    loop.submit(_open_session(transport)).result(5)
    session = transport._session
    loop.stop()
    assert session is not None and session.closed


async def _open_session(transport: AiohttpTransport) -> None:
    transport._open()


async def test_each_client_answers_on_the_io_loop_and_closes_on_stop(
    upstream: tuple[Upstream, str], client: str
) -> None:
    _, base = upstream
    loop = IOLoop()  # uvloop, as in relayd
    loop.start()
    transport = make_transport(client, RetryConfig(), connection_limit=4)
    loop.add_cleanup(lambda: close(transport))
    try:
        sent = loop.submit(transport.send(make_model(base), ENDPOINT, PAYLOAD))
        assert (await asyncio.wrap_future(sent)).status == 201
    finally:
        await asyncio.to_thread(loop.stop)
    assert getattr(transport, "_session", getattr(transport, "_client", None)) is None


# The response cap ([gateway] max_response_mb)

LIMIT = 64 * 1024


class Oversized:
    """Answers `/sized/N` (Content-Length), `/chunked/N` (no Content-Length), `/gzip/N`
    (N bytes once decoded, a few hundred on the wire) and `/endless` (chunks until the
    client hangs up, counting what it wrote)."""

    def __init__(self) -> None:
        self.written = 0
        self.hung_up = asyncio.Event()
        self.app = web.Application()
        self.app.router.add_post("/v1/sized/{size}", self.sized)
        self.app.router.add_post("/v1/chunked/{size}", self.chunked)
        self.app.router.add_post("/v1/gzip/{size}", self.gzipped)
        self.app.router.add_post("/v1/endless", self.endless)

    async def sized(self, request: web.Request) -> web.Response:
        return web.Response(body=b"s" * int(request.match_info["size"]))

    async def chunked(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        left = int(request.match_info["size"])
        while left > 0:
            await response.write(b"c" * min(left, 1000))
            left -= 1000
        await response.write_eof()
        return response

    async def gzipped(self, request: web.Request) -> web.Response:
        body = gzip.compress(b"z" * int(request.match_info["size"]))
        return web.Response(body=body, headers={"Content-Encoding": "gzip"})

    async def endless(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        try:
            while self.written < 1024 * 1024 * 1024:  # 1 GiB: far past any socket buffer
                await response.write(b"e" * 65536)
                self.written += 65536
        except ConnectionError:
            pass
        finally:  # a hang-up cancels the handler, or fails its write
            self.hung_up.set()
        return response


@pytest.fixture
async def oversized(client: str) -> AsyncIterator[tuple[Oversized, Transport, ModelConfig]]:
    fake = Oversized()
    server = TestServer(fake.app, host="127.0.0.1")
    await server.start_server()
    transport = make_transport(client, RetryConfig(request_timeout_s=10), connection_limit=4,
                               max_response_bytes=LIMIT)
    yield fake, transport, make_model(str(server.make_url("/v1")))
    await close(transport)
    await server.close()


@pytest.mark.parametrize("kind", ["sized", "chunked", "gzip"])
async def test_a_body_over_the_cap_is_too_large(oversized: Any, kind: str) -> None:
    _, transport, model = oversized
    with pytest.raises(TransportError) as caught:
        await transport.send(model, f"/v1/{kind}/{LIMIT + 1}", PAYLOAD)
    assert (caught.value.kind, caught.value.status) == ("too_large", 200)
    assert caught.value.message == ("answered 200 with a body over the 65536 bytes limit "
                                    "([gateway] max_response_mb)")


@pytest.mark.parametrize("kind", ["sized", "chunked", "gzip"])
async def test_a_body_exactly_at_the_cap_is_read_whole(oversized: Any, kind: str) -> None:
    _, transport, model = oversized
    reply = await transport.send(model, f"/v1/{kind}/{LIMIT}", PAYLOAD)
    assert reply.status == 200 and len(reply.body) == LIMIT


async def test_an_endless_body_is_read_no_further_than_the_cap(oversized: Any) -> None:
    fake, transport, model = oversized
    with pytest.raises(TransportError) as caught:
        await transport.send(model, "/v1/endless", PAYLOAD)
    assert caught.value.kind == "too_large"
    await asyncio.wait_for(fake.hung_up.wait(), 10)  # the connection was dropped
    assert fake.written < 64 * 1024 * 1024  # socket buffers, never the whole gigabyte


async def test_the_cap_is_named_in_megabytes(oversized: Any, client: str) -> None:
    _, _, model = oversized
    transport = make_transport(client, RetryConfig(), connection_limit=4,
                               max_response_bytes=1024 * 1024)
    try:
        with pytest.raises(TransportError) as caught:
            await transport.send(model, f"/v1/sized/{1024 * 1024 + 1}", PAYLOAD)
    finally:
        await close(transport)
    assert "over the 1 MB limit ([gateway] max_response_mb)" in caught.value.message


async def test_the_session_serves_the_next_request_after_a_refusal(oversized: Any) -> None:
    _, transport, model = oversized
    with pytest.raises(TransportError):
        await transport.send(model, f"/v1/chunked/{LIMIT * 4}", PAYLOAD)
    assert (await transport.send(model, "/v1/sized/10", PAYLOAD)).body == b"s" * 10


@pytest.mark.parametrize(("name", "kind"), [("aiohttp", AiohttpTransport),
                                            ("pyreqwest", ReqwestTransport)])
def test_make_transport_passes_the_cap(
        name: str, kind: type[AiohttpTransport | ReqwestTransport]) -> None:
    transport = make_transport(name, RetryConfig(), connection_limit=4, max_response_bytes=123)
    assert isinstance(transport, kind) and transport._max_bytes == 123
