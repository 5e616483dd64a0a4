"""The MCP caller's sessions: one per (url, authorization) per job, reused, at most
`mcp_sessions_per_job` kept open, all closed when the job ends; and the conversion of
MCP tools and results. A stand-in client replaces the SDK's (the SDK itself is run
end to end in tests/e2e/test_tools.py against the simulator's MCP server)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from daemon.domain.tool_config import ToolConfig
from daemon.executors.mcp_tools import McpToolCaller, function_tool
from daemon.executors.tool_hosts import HostLimits
from daemon.executors.tool_loop import ToolCallFailed, ToolRequest


@dataclass
class Part:
    text: str
    type: str = "text"


@dataclass
class Result:
    content: list[Part]
    is_error: bool = False


@dataclass
class Tool:
    name: str
    description: str | None
    input_schema: dict[str, Any]


@dataclass
class Listing:
    tools: list[Tool]


class FakeClient:
    opened: ClassVar[list[str]] = []
    closed: ClassVar[list[str]] = []

    def __init__(self, url: str) -> None:
        self.url = url

    async def __aenter__(self) -> FakeClient:
        FakeClient.opened.append(self.url)
        return self

    async def __aexit__(self, *exc: object) -> None:
        FakeClient.closed.append(self.url)

    async def call_tool(self, name: str, arguments: dict[str, Any], **_: Any) -> Result:
        return Result([Part(f"{name}:{arguments}"), Part("more", type="image")])

    async def list_tools(self) -> Listing:
        return Listing([Tool("lookup", "Find it.", {"type": "object"})])


@pytest.fixture
def caller(monkeypatch: pytest.MonkeyPatch) -> McpToolCaller:
    FakeClient.opened, FakeClient.closed = [], []
    made = McpToolCaller(HostLimits(4), allow_private=True, sessions_per_job=2)
    monkeypatch.setattr(made, "_client", lambda config, address: FakeClient(config.url))
    return made


def request(job: int = 1) -> ToolRequest:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup",
                                                         "arguments": '{"q": "x"}'}}
    return ToolRequest(job_seq=job, batch_id="b", custom_id="r", round=1, call_id="k",
                       tool_calls=(call,))


async def test_a_session_per_url_and_authorization_is_reused(caller: McpToolCaller) -> None:
    config = ToolConfig(url="http://a/mcp", authorization="Bearer 1")
    for _ in range(3):
        (result,) = await caller.call(config, request())
    assert result.content == "lookup:{'q': 'x'}" and not result.is_error
    await caller.call(ToolConfig(url="http://a/mcp", authorization="Bearer 2"), request())
    assert FakeClient.opened == ["http://a/mcp", "http://a/mcp"]
    await caller.release(1)
    assert len(FakeClient.closed) == 2


async def test_at_most_the_cap_stay_open_the_least_used_closing(caller: McpToolCaller) -> None:
    for url in ("http://a/mcp", "http://b/mcp", "http://c/mcp"):
        await caller.tools(ToolConfig(url=url), job_seq=1)
    assert FakeClient.closed == ["http://a/mcp"]
    await caller.tools(ToolConfig(url="http://a/mcp"), job_seq=2)  # another job: its own
    assert FakeClient.opened[-1] == "http://a/mcp" and len(caller.jobs[1]) == 2


async def test_tools_are_listed_once_per_session(caller: McpToolCaller,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    listed: list[str] = []
    original = FakeClient.list_tools

    async def counting(self: FakeClient) -> Listing:
        listed.append(self.url)
        return await original(self)

    monkeypatch.setattr(FakeClient, "list_tools", counting)
    config = ToolConfig(url="http://a/mcp")
    tools = [await caller.tools(config, job_seq=1) for _ in range(3)]
    assert listed == ["http://a/mcp"]
    assert tools[0] == [{"type": "function", "function": {
        "name": "lookup", "description": "Find it.", "parameters": {"type": "object"}}}]


def test_conversions() -> None:
    assert function_tool(Tool("f", None, {})) == {"type": "function", "function": {
        "name": "f", "parameters": {}}}


async def test_records_starting_together_share_one_session(caller: McpToolCaller) -> None:
    config = ToolConfig(url="http://a/mcp")
    await asyncio.gather(*(caller.call(config, request()) for _ in range(10)))
    assert FakeClient.opened == ["http://a/mcp"]


async def test_a_session_that_failed_to_open_is_opened_again(
        caller: McpToolCaller, monkeypatch: pytest.MonkeyPatch) -> None:
    failures = [ConnectionRefusedError("nobody home")]
    original = FakeClient.__aenter__

    async def flaky(self: FakeClient) -> FakeClient:
        if failures:
            raise failures.pop()
        return await original(self)

    monkeypatch.setattr(FakeClient, "__aenter__", flaky)
    config = ToolConfig(url="http://a/mcp", authorization="Bearer s3cret")
    with pytest.raises(ToolCallFailed) as failed:
        await caller.call(config, request())
    assert failed.value.transient and "s3cret" not in failed.value.message
    (result,) = await caller.call(config, request())  # a retry: a new session
    assert result.content.startswith("lookup:")
