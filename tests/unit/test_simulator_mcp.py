"""The simulator's MCP tool server, driven by the official SDK's Streamable HTTP client.

mcp 2.x's HTTP client is `httpx2` (not `httpx`): `streamable_http_client(url,
http_client=httpx2.AsyncClient(...))`, wrapped in `mcp.Client` (or a `ClientSession`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import httpx
import httpx2
import pytest
from aiohttp.test_utils import TestClient
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import RequestParamsMeta, TextContent

from daemon.simulator import SimOptions, build_app
from daemon.simulator.app import STATE
from daemon.simulator.cli import build_parser, mcp_port_of
from daemon.simulator.mcp_server import McpRunner
from daemon.testing import Simulator
from relaytui import demo

TOKEN = "Bearer mcp-secret"
MODES = ["legacy", "auto"]  # the initialize handshake; server/discover (2026-07-28)


@pytest.fixture
async def sim(aiohttp_client: Any) -> AsyncIterator[tuple[TestClient, McpRunner]]:
    """The simulator app (for /_sim/*) and its MCP server on a free 127.0.0.1 port."""
    app = build_app(SimOptions())
    client = await aiohttp_client(app)
    runner = McpRunner(app[STATE], "127.0.0.1", 0)
    await runner.start()
    yield client, runner
    await runner.stop()


@asynccontextmanager
async def connect(url: str, mode: str = "auto",
                  authorization: str = TOKEN) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": authorization}) as http, \
            Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield client


def text_of(result: Any) -> str:
    [block] = result.content
    assert isinstance(block, TextContent)
    return block.text


def meta(fields: dict[str, str]) -> RequestParamsMeta:
    """A `_meta` of any keys (RequestParamsMeta takes extra items, which mypy cannot read)."""
    return cast(RequestParamsMeta, fields)


async def mcp_calls(client: TestClient) -> list[dict[str, Any]]:
    return (await (await client.get("/_sim/mcp_calls")).json())["data"]


@pytest.mark.parametrize("mode", MODES)
async def test_tools_list(sim: Any, mode: str) -> None:
    _, runner = sim
    assert runner.url.startswith("http://127.0.0.1:") and runner.url.endswith("/mcp")
    async with connect(runner.url, mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert list(tools) == ["lookup", "add", "fail"]
    assert tools["lookup"].input_schema["properties"] == {
        "query": {"title": "Query", "type": "string"}}
    assert {k: v["type"] for k, v in tools["add"].input_schema["properties"].items()} == {
        "a": "integer", "b": "integer"}
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert all(t.description for t in tools.values())


@pytest.mark.parametrize("mode", MODES)
async def test_each_tool_answers(sim: Any, mode: str) -> None:
    _, runner = sim
    async with connect(runner.url, mode) as client:
        lookup = await client.call_tool("lookup", {"query": "capital of France"})
        add = await client.call_tool("add", {"a": 2, "b": 3})
        fail = await client.call_tool("fail", {"reason": "boom"})
    assert (text_of(lookup), lookup.is_error) == ("lookup:capital of France", False)
    assert lookup.structured_content == {"result": "lookup:capital of France"}
    assert (text_of(add), add.structured_content, add.is_error) == ("5", {"result": 5}, False)
    assert fail.is_error and "SIMULATED tool failure: boom" in text_of(fail)


@pytest.mark.parametrize("mode", MODES)
async def test_calls_are_recorded_with_meta_and_authorization(sim: Any, mode: str) -> None:
    http, runner = sim
    async with connect(runner.url, mode) as client:
        await client.list_tools()
        await client.call_tool("lookup", {"query": "q"}, meta=meta({"relay/call_id": "rc-1"}))
        await client.call_tool("fail", {"reason": "r"})
        await client.call_tool("no_such_tool", {})
        await client.call_tool("add", {"a": "not a number", "b": 1})
    calls = await mcp_calls(http)
    assert [(c["tool"], c["arguments"], c["is_error"]) for c in calls] == [
        ("lookup", {"query": "q"}, False), ("fail", {"reason": "r"}, True),
        ("no_such_tool", {}, True), ("add", {"a": "not a number", "b": 1}, True)]
    assert calls[0]["meta"]["relay/call_id"] == "rc-1"
    assert all("relay/call_id" not in (c["meta"] or {}) for c in calls[1:])
    assert all(c["headers"]["Authorization"] == TOKEN for c in calls)
    assert all(c["error"] is None and isinstance(c["at"], float) for c in calls)
    assert calls[0]["protocol_version"] == ("2025-11-25" if mode == "legacy" else "2026-07-28")

    await http.post("/_sim/reset")
    assert await mcp_calls(http) == []


async def test_a_plain_client_session_over_the_handshake(sim: Any) -> None:
    """The lower layer: `streamable_http_client` yields (read, write) streams."""
    http, runner = sim
    headers = {"Authorization": "Bearer other", "Relay-Batch-Id": "batch_9"}
    async with httpx2.AsyncClient(headers=headers) as client, \
            streamable_http_client(runner.url, http_client=client) as (read, write), \
            ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "relay-simulator"
        result = await session.call_tool("lookup", {"query": "x"}, meta=meta({"id": "m-1"}))
    assert text_of(result) == "lookup:x"
    [call] = await mcp_calls(http)
    assert call["meta"] == {"id": "m-1"}
    assert call["headers"] == {"Authorization": "Bearer other", "Relay-Batch-Id": "batch_9",
                               "Relay-Round": None, "Relay-Call-Id": None}


async def test_tool_directives_in_the_arguments(sim: Any) -> None:
    _, runner = sim
    async with connect(runner.url) as client:
        query = "x [sim:tool_fail=503 times=1]"
        first = await client.call_tool("lookup", {"query": query})
        again = await client.call_tool("lookup", {"query": query})
        started = time.perf_counter()
        slow = await client.call_tool("lookup", {"query": "y [sim:tool_sleep=30]"})
        elapsed = time.perf_counter() - started
    assert first.is_error and "SIMULATED tool failure (code 503)" in text_of(first)
    assert (again.is_error, text_of(again)) == (False, f"lookup:{query}")
    assert not slow.is_error and elapsed >= 0.03


async def test_stop_is_prompt_after_clients_leave(sim: Any) -> None:
    _, runner = sim
    async with connect(runner.url) as client:
        await client.call_tool("add", {"a": 1, "b": 1})
    started = time.perf_counter()
    await runner.stop()
    assert time.perf_counter() - started < 2.5


# --- `relayd simulate --mcp-port`, through daemon.testing.Simulator ------------------


async def test_the_simulator_process_serves_mcp_and_its_readers() -> None:
    sim = Simulator.start(mcp_port=0)
    try:
        assert sim.mcp_url is not None and sim.mcp_url.startswith("http://127.0.0.1:")
        async with connect(sim.mcp_url) as client:
            result = await client.call_tool("lookup", {"query": "q"}, meta=meta({"relay/id": "1"}))
        assert text_of(result) == "lookup:q"
        [call] = sim.mcp_calls()
        assert (call["tool"], call["meta"]["relay/id"]) == ("lookup", "1")
        assert call["headers"]["Authorization"] == TOKEN

        body = {"custom_id": "r", "context": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
        resp = httpx.post(sim.tools_url, json=body, headers={"Relay-Round": "1"})
        assert resp.json() == {"results": [{"tool_call_id": "c1", "content": "f({}) = ok#1 (c1)"}]}
        assert [c["body"] for c in sim.tool_calls()] == [body]
        sim.reset()
        assert sim.mcp_calls() == [] and sim.tool_calls() == []
    finally:
        started = time.perf_counter()
        sim.stop()
    assert sim.proc.returncode == 0 and time.perf_counter() - started < 5


def test_without_an_mcp_port_there_is_no_mcp_url() -> None:
    """The tests' simulator serves MCP only when asked (`--no-mcp` otherwise: the SDK
    costs a second of CPU to load)."""
    sim = Simulator.start()
    try:
        assert sim.mcp_url is None and sim.mcp_calls() == []
        assert "--no-mcp" in cast(list[str], sim.proc.args)
    finally:
        sim.stop()


def mcp_port(*argv: str) -> int | None:
    """Where `relayd simulate ARGV` serves MCP (the parser's and `main`'s rule)."""
    args = build_parser().parse_args(list(argv))
    return mcp_port_of(args.port, args.mcp_port, no_mcp=args.no_mcp)


def test_the_mcp_server_is_on_the_port_after_the_simulators_unless_told() -> None:
    assert mcp_port("--port", "9900") == 9901
    assert mcp_port("--port", "9900", "--mcp-port", "9905") == 9905
    assert mcp_port("--port", "9900", "--mcp-port", "0") == 0
    assert mcp_port("--port", "9900", "--no-mcp") is None
    assert mcp_port("--port", "0") == 0  # a free one, beside a free one
    with pytest.raises(ValueError, match="--mcp-port"):
        mcp_port("--port", "65535")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--port", "1", "--no-mcp", "--mcp-port", "2"])


def test_the_sample_mcp_records_are_on_the_default_mcp_port() -> None:
    """`relayd simulate --port 9900` (the README's) serves what tools.jsonl calls."""
    urls = {r["body"]["openrelay"]["tool_config"]["url"] for r in demo.tool_rows(
        demo.SAMPLES / "tools.jsonl", demo.Ports(9900, 9901))}
    assert urls == {"http://127.0.0.1:9900/_sim/tools",
                    f"http://127.0.0.1:{mcp_port('--port', '9900')}/mcp"}


def test_the_demo_starts_one_mcp_server_on_the_port_it_chose() -> None:
    """The demo (and `just cluster`) name the MCP port they chose, so the simulator
    serves that one and no default one besides."""
    argv = demo.simulator_argv(9902, mcp_port=9903)
    assert argv.count("--mcp-port") == 1 and mcp_port(*argv[2:]) == 9903
