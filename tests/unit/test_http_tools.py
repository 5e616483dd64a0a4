"""The `http` executor protocol against a real local server: the request (body and
headers), the results, and how each kind of answer is judged."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from daemon.domain.tool_config import ToolConfig
from daemon.executors.http_tools import HttpToolCaller
from daemon.executors.tool_hosts import HostLimits
from daemon.executors.tool_loop import ToolCallFailed, ToolRequest, ToolResult
from daemon.outbound.http import OutboundClient

CALLS = ({"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}},
         {"id": "c2", "type": "function", "function": {"name": "add", "arguments": "{}"}})
REQUEST = ToolRequest(job_seq=1, batch_id="batch_abc", custom_id="r-1", round=2,
                      call_id="call_123", tool_calls=CALLS)

Answer = Callable[[web.Request], Any]  # a response, or a coroutine of one


@pytest.fixture
async def executor() -> AsyncIterator[Callable[[Answer], Any]]:
    servers: list[TestServer] = []
    client = OutboundClient(allow_private=True)

    async def start(answer: Answer) -> tuple[HttpToolCaller, ToolConfig, list[Any]]:
        seen: list[Any] = []

        async def handle(request: web.Request) -> web.Response:
            seen.append((dict(request.headers), await request.json()))
            reply = answer(request)
            return await reply if inspect.isawaitable(reply) else reply

        app = web.Application()
        app.router.add_post("/tools", handle)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        servers.append(server)
        config = ToolConfig(url=str(server.make_url("/tools")), authorization="Bearer s3cret",
                            context={"tenant": 7}, timeout_ms=2000)
        return HttpToolCaller(client, HostLimits(4)), config, seen

    yield start
    await client.aclose()
    for server in servers:
        await server.close()


def results(*items: tuple[str, Any]) -> Answer:
    body = {"results": [{"tool_call_id": i, "content": c} for i, c in items]}
    return lambda _: web.json_response(body)


async def test_the_request_and_its_results(executor: Any) -> None:
    caller, config, seen = await executor(results(("c1", "found"), ("c2", {"sum": 3})))

    answer = await caller.call(config, REQUEST)

    assert answer == [ToolResult("c1", "found"), ToolResult("c2", '{"sum": 3}')]
    ((headers, body),) = seen
    assert body == {"custom_id": "r-1", "context": {"tenant": 7},
                    "tool_calls": [dict(c) for c in CALLS]}
    assert headers["Authorization"] == "Bearer s3cret"
    assert (headers["Relay-Batch-Id"], headers["Relay-Round"], headers["Relay-Call-Id"]) == (
        "batch_abc", "2", "call_123")


async def test_no_authorization_sends_no_header(executor: Any) -> None:
    caller, config, seen = await executor(results(("c1", "a"), ("c2", "b")))
    await caller.call(ToolConfig(url=config.url), REQUEST)
    assert "Authorization" not in seen[0][0]


@pytest.mark.parametrize(("status", "transient"), [
    (503, True), (500, True), (429, True), (408, True), (400, False), (404, False),
    (401, False), (409, False)])
async def test_statuses(executor: Any, status: int, transient: bool) -> None:
    caller, config, _ = await executor(
        lambda _: web.json_response({"error": "no"}, status=status,
                                    headers={"Retry-After": "2"}))
    with pytest.raises(ToolCallFailed) as failed:
        await caller.call(config, REQUEST)
    assert failed.value.transient is transient
    assert f"answered {status}" in failed.value.message
    assert failed.value.retry_after == "2"


@pytest.mark.parametrize("body", [b"not json", b'{"results": "many"}', b"[1, 2]",
                                  b'{"results": [{"content": "no id"}]}'])
async def test_answers_that_are_not_results(executor: Any, body: bytes) -> None:
    caller, config, _ = await executor(lambda _: web.Response(body=body))
    with pytest.raises(ToolCallFailed) as failed:
        await caller.call(config, REQUEST)
    assert failed.value.transient is False


async def test_an_executor_that_does_not_answer_in_time_is_transient(executor: Any) -> None:
    async def late(_: web.Request) -> web.Response:
        await asyncio.sleep(2)
        return web.json_response({"results": []})

    caller, config, _ = await executor(late)
    with pytest.raises(ToolCallFailed) as failed:
        await caller.call(ToolConfig(url=config.url, timeout_ms=100), REQUEST)
    assert failed.value.transient is True and failed.value.message.startswith("timeout")


async def test_a_closed_port_is_transient(executor: Any) -> None:
    caller, _, _ = await executor(results())
    closed = ToolConfig(url="http://127.0.0.1:9/tools", timeout_ms=500)
    with pytest.raises(ToolCallFailed) as failed:
        await caller.call(closed, REQUEST)
    assert failed.value.transient is True and failed.value.message.startswith("connection")


async def test_a_private_target_is_refused_under_the_strict_policy() -> None:
    client = OutboundClient(allow_private=False)
    try:
        with pytest.raises(ToolCallFailed) as failed:
            await HttpToolCaller(client, HostLimits(1)).call(
                ToolConfig(url="https://127.0.0.1:9/tools"), REQUEST)
    finally:
        await client.aclose()
    assert failed.value.transient is False and failed.value.message.startswith("refused")



async def test_calls_to_one_host_share_its_limit(executor: Any) -> None:
    in_flight, most = 0, 0

    async def slow(_: web.Request) -> web.Response:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return web.json_response({"results": [{"tool_call_id": c["id"], "content": "x"}
                                              for c in CALLS]})

    caller, config, seen = await executor(slow)
    limited = HttpToolCaller(caller.client, HostLimits(2))
    await asyncio.gather(*(limited.call(config, REQUEST) for _ in range(6)))
    assert (len(seen), most) == (6, 2)


async def test_an_answer_over_the_response_cap_fails_the_call_for_good(executor: Any) -> None:
    padded = {"results": [{"tool_call_id": c["id"], "content": "x"} for c in CALLS],
              "padding": "p" * 5000}
    _, config, _ = await executor(lambda _: web.json_response(padded))
    client = OutboundClient(allow_private=True, max_bytes=4096)
    try:
        with pytest.raises(ToolCallFailed) as failed:
            await HttpToolCaller(client, HostLimits(1)).call(config, REQUEST)
    finally:
        await client.aclose()
    assert failed.value.transient is False
    assert failed.value.message.startswith("too_large: the answer from http://127.0.0.1:")
    assert failed.value.message.endswith(
        "is over the 4096 bytes limit ([gateway] max_response_mb)")
