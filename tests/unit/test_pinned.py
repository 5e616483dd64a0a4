"""The httpx2 transport of MCP sessions (`outbound.pinned`): its answer cap, against a
real aiohttp server on 127.0.0.1, then through `McpToolCaller` and the real mcp SDK. A
refusal is an `httpx2.StreamError` raised while the body is read, which the SDK turns
into the request's JSON-RPC error."""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from daemon.domain.tool_config import ToolConfig
from daemon.executors.mcp_tools import McpToolCaller
from daemon.executors.tool_hosts import HostLimits
from daemon.executors.tool_loop import ToolCallFailed, ToolRequest
from daemon.outbound.pinned import AnswerTooLarge, PinnedTransport
from daemon.simulator import SimOptions
from daemon.simulator.app import SimState
from daemon.simulator.mcp_server import McpRunner

LIMIT = 64 * 1024


class Answers:
    """`/json/N` (Content-Length), `/chunked/N`, `/gzip/N` (N bytes decoded) and
    `/events/N` (an event stream), recording each request's Accept-Encoding."""

    def __init__(self) -> None:
        self.accepted: list[str | None] = []
        self.app = web.Application()
        for kind in ("json", "chunked", "gzip", "events"):
            self.app.router.add_post(f"/{kind}/{{size}}", self.answer)

    async def answer(self, request: web.Request) -> web.StreamResponse:
        self.accepted.append(request.headers.get("Accept-Encoding"))
        kind, size = request.path.split("/")[1], int(request.match_info["size"])
        if kind == "json":
            return web.Response(body=b"j" * size, content_type="application/json")
        if kind == "gzip":
            return web.Response(body=gzip.compress(b"g" * size), content_type="application/json",
                                headers={"Content-Encoding": "gzip"})
        response = web.StreamResponse(headers={
            "Content-Type": "text/event-stream" if kind == "events" else "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, size, 1000):
            await response.write(b"c" * min(1000, size - start))
        await response.write_eof()
        return response


@pytest.fixture
async def served() -> AsyncIterator[tuple[Answers, str]]:
    answers = Answers()
    server = TestServer(answers.app, host="127.0.0.1")
    await server.start_server()
    yield answers, str(server.make_url("")).rstrip("/")
    await server.close()


async def post(base: str, path: str, max_bytes: int | None = LIMIT) -> httpx2.Response:
    transport = PinnedTransport(None, max_bytes=max_bytes)
    async with httpx2.AsyncClient(transport=transport) as client:
        return await client.post(base + path)


@pytest.mark.parametrize("kind", ["json", "chunked"])
async def test_an_answer_over_the_cap_is_refused_while_read(served: Any, kind: str) -> None:
    _, base = served
    with pytest.raises(AnswerTooLarge) as refused:
        await post(base, f"/{kind}/{LIMIT + 1}")
    assert isinstance(refused.value, httpx2.StreamError)  # what the SDK turns into an error
    assert str(refused.value) == ("the MCP server's answer is over the 65536 bytes limit "
                                  "([gateway] max_response_mb)")


@pytest.mark.parametrize("kind", ["json", "chunked"])
async def test_an_answer_exactly_at_the_cap_is_read_whole(served: Any, kind: str) -> None:
    _, base = served
    assert len((await post(base, f"/{kind}/{LIMIT}")).content) == LIMIT


async def test_answers_are_asked_for_uncompressed_and_a_compressed_one_refused(
        served: Any) -> None:
    answers, base = served
    with pytest.raises(AnswerTooLarge, match=r"compressed \(gzip\)"):
        await post(base, "/gzip/10")  # small, but its decoded size could be anything
    assert answers.accepted == ["identity"]


async def test_an_event_stream_is_left_to_the_sdks_cap_on_one_event(served: Any) -> None:
    _, base = served
    assert len((await post(base, f"/events/{LIMIT * 2}")).content) == LIMIT * 2


async def test_without_a_cap_nothing_is_refused(served: Any) -> None:
    answers, base = served
    assert len((await post(base, f"/gzip/{LIMIT * 2}", max_bytes=None)).content) == LIMIT * 2
    assert answers.accepted != ["identity"]


# Through the caller and the real mcp SDK, against the simulator's MCP server


@pytest.fixture
async def mcp_url() -> AsyncIterator[str]:
    runner = McpRunner(SimState(SimOptions()), "127.0.0.1", 0)
    await runner.start()
    yield runner.url
    await runner.stop()


def lookup(query: str) -> ToolRequest:
    call = {"id": "c1", "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"query": query})}}
    return ToolRequest(job_seq=1, batch_id="b", custom_id="r", round=1, call_id="k",
                       tool_calls=(call,))


async def test_an_mcp_result_over_the_cap_fails_the_call_and_the_session_lives_on(
        mcp_url: str) -> None:
    caller = McpToolCaller(HostLimits(2), allow_private=True, max_bytes=LIMIT)
    config = ToolConfig(url=mcp_url, type="mcp", timeout_ms=10_000)
    try:
        with pytest.raises(ToolCallFailed) as failed:
            await caller.call(config, lookup("q [sim:tool_huge=1]"))
        [after] = await caller.call(config, lookup("small"))
    finally:
        await caller.release(1)
    assert failed.value.transient is False
    assert "over the 65536 bytes limit ([gateway] max_response_mb)" in failed.value.message
    assert after.content == "lookup:small"
