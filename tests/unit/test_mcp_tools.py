"""The MCP caller's sessions: one per (url, authorization) per job, reused, at most
`mcp_sessions_per_job` kept open, all closed when the job ends; every operation bounded
by the record's timeout_ms, eviction waiting on no session, the host limit per call;
and the conversion of MCP tools and results. A stand-in client replaces the SDK's (the
SDK itself is run end to end in tests/e2e/test_tools.py and test_tool_executors.py,
against the simulator's MCP server and a hostile one)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from daemon.domain.tool_config import ToolConfig
from daemon.executors.mcp_tools import McpToolCaller, function_tool
from daemon.executors.tool_hosts import HostLimits
from daemon.executors.tool_loop import ToolCallFailed, ToolRequest
from daemon.testing import wait_until_async


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


# --- bounds: every operation within the record's timeout_ms, nothing waits on a session


async def never() -> Any:
    await asyncio.Event().wait()  # a server that streams keep-alives and never answers


async def test_a_session_that_never_opens_fails_the_call_within_its_timeout(
        caller: McpToolCaller, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FakeClient, "__aenter__", lambda self: never())
    config = ToolConfig(url="http://stuck/mcp", type="mcp", timeout_ms=50)
    with pytest.raises(ToolCallFailed) as failed:
        await asyncio.wait_for(caller.call(config, request()), 10)
    assert failed.value.transient
    assert failed.value.message == ("could not open an MCP session: no answer within 50 ms "
                                    "(timeout_ms)")
    assert caller.jobs[1] == {}  # dropped: the next attempt opens a fresh one
    await asyncio.wait_for(asyncio.gather(*caller.closing), 10)  # and its task has ended


async def test_evicting_a_session_stuck_opening_does_not_wait_for_it(
        caller: McpToolCaller, monkeypatch: pytest.MonkeyPatch) -> None:
    original = FakeClient.__aenter__

    async def stuck_on_a(self: FakeClient) -> FakeClient:
        if self.url == "http://a/mcp":
            await never()
        return await original(self)

    monkeypatch.setattr(FakeClient, "__aenter__", stuck_on_a)
    stuck = asyncio.create_task(caller.call(ToolConfig(url="http://a/mcp", timeout_ms=60_000),
                                            request()))
    await wait_until_async(lambda: ("http://a/mcp", None) in caller.jobs.get(1, {}),
                           timeout=10, message="a's session, opening")
    for url in ("http://b/mcp", "http://c/mcp"):  # the cap is 2: b's session is kept, then c's
        (result,) = await asyncio.wait_for(caller.call(ToolConfig(url=url), request()), 10)
        assert result.content.startswith("lookup:")
    assert not stuck.done()  # a's record still waits for a's open (within its own timeout)
    stuck.cancel()
    await asyncio.gather(stuck, return_exceptions=True)


async def test_a_tools_call_and_a_tools_list_that_never_answer_end_within_the_timeout(
        caller: McpToolCaller, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FakeClient, "call_tool", lambda self, *a, **k: never())
    monkeypatch.setattr(FakeClient, "list_tools", lambda self: never())
    config = ToolConfig(url="http://a/mcp", type="mcp", timeout_ms=50)
    with pytest.raises(ToolCallFailed) as called:
        await asyncio.wait_for(caller.call(config, request()), 10)
    with pytest.raises(ToolCallFailed) as listed:
        await asyncio.wait_for(caller.tools(config, job_seq=1), 10)
    assert called.value.message == "tools/call lookup: no answer within 50 ms (timeout_ms)"
    assert listed.value.message == "tools/list: no answer within 50 ms (timeout_ms)"
    assert called.value.transient and listed.value.transient
    await asyncio.wait_for(asyncio.gather(*caller.closing), 10)
    assert FakeClient.closed == ["http://a/mcp", "http://a/mcp"]  # each session dropped


async def test_a_close_that_hangs_is_bounded(caller: McpToolCaller,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    async def hanging_goodbye(self: FakeClient, *exc: object) -> None:
        await never()

    monkeypatch.setattr(FakeClient, "__aexit__", hanging_goodbye)
    await caller.call(ToolConfig(url="http://a/mcp", timeout_ms=50), request())
    await asyncio.wait_for(caller.release(1), 10)
    assert caller.jobs == {}


async def test_a_retired_session_closes_after_its_last_call_not_under_it(
        caller: McpToolCaller, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = asyncio.Event()
    original = FakeClient.call_tool

    async def held(self: FakeClient, name: str, arguments: dict[str, Any], **kw: Any) -> Result:
        if self.url == "http://a/mcp":
            await answer.wait()
        return await original(self, name, arguments, **kw)

    monkeypatch.setattr(FakeClient, "call_tool", held)
    on_a = asyncio.create_task(caller.call(ToolConfig(url="http://a/mcp"), request()))
    await wait_until_async(lambda: "http://a/mcp" in FakeClient.opened, timeout=10,
                           message="a's call, out")
    for url in ("http://b/mcp", "http://c/mcp"):  # a is evicted while its call is out
        await caller.call(ToolConfig(url=url), request())
    assert "http://a/mcp" not in FakeClient.closed
    answer.set()
    (result,) = await asyncio.wait_for(on_a, 10)
    assert result.content.startswith("lookup:")
    await asyncio.wait_for(asyncio.gather(*caller.closing), 10)
    assert FakeClient.closed == ["http://a/mcp"]


async def test_the_host_limit_holds_for_each_call_of_a_round(
        caller: McpToolCaller, monkeypatch: pytest.MonkeyPatch) -> None:
    in_flight = peak = 0
    original = FakeClient.call_tool

    async def counted(self: FakeClient, *args: Any, **kw: Any) -> Result:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        for _ in range(3):
            await asyncio.sleep(0)
        in_flight -= 1
        return await original(self, *args, **kw)

    monkeypatch.setattr(FakeClient, "call_tool", counted)
    calls = tuple({"id": f"c{i}", "type": "function",
                   "function": {"name": "lookup", "arguments": "{}"}} for i in range(50))
    wide = ToolRequest(job_seq=1, batch_id="b", custom_id="r", round=1, call_id="k",
                       tool_calls=calls)
    results = await caller.call(ToolConfig(url="http://a/mcp"), wide)  # HostLimits(4)
    assert [r.tool_call_id for r in results] == [c["id"] for c in calls]
    assert peak == 4


async def test_a_closed_connection_is_transient_a_tool_s_protocol_error_is_not(
        caller: McpToolCaller, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.shared.exceptions import MCPError

    errors = [MCPError(-32602, "Invalid params"), MCPError(-32000, "Connection closed")]

    async def refusing(self: FakeClient, *args: Any, **kw: Any) -> Result:
        raise errors.pop()

    monkeypatch.setattr(FakeClient, "call_tool", refusing)
    config = ToolConfig(url="http://a/mcp")
    outcomes = []
    for _ in range(2):
        with pytest.raises(ToolCallFailed) as failed:
            await caller.call(config, request())
        outcomes.append((failed.value.transient, failed.value.message))
    assert outcomes == [(True, "tools/call lookup: Connection closed"),
                        (False, "tools/call lookup: Invalid params")]
