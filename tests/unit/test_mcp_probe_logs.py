"""What relayd logs of an MCP session against a server of the handshake era (issue 30):
the SDK's client first probes `server/discover`, which such a server (the `mcp` SDK 1.x,
most deployed servers) answers `400 Bad Request` ("Missing session ID"), and then falls
back to `initialize`. That probe is how the protocol is negotiated, not an error, so it
must leave no line in relayd's log; a real failure of a tool call must still reach the
row. The real SDK client (`McpToolCaller`), relayd's logging rules (`logs.configure`),
and a small legacy server on loopback."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from daemon import logs
from daemon.domain.tool_config import ToolConfig
from daemon.executors.mcp_tools import McpToolCaller
from daemon.executors.tool_hosts import HostLimits
from daemon.executors.tool_loop import ToolCallFailed, ToolRequest

SESSION = "legacy-session-1"


class LegacyServer:
    """Streamable HTTP as a handshake-era server speaks it: `initialize` gives a session
    id, and any other request without it is a 400 (what the 1.x SDK answers)."""

    def __init__(self) -> None:
        self.statuses: list[tuple[str, int]] = []  # (method, HTTP status) as answered

    async def post(self, request: web.Request) -> web.Response:
        message: dict[str, Any] = await request.json()
        method = str(message.get("method"))
        answer = self.answer(message, known=request.headers.get("mcp-session-id") == SESSION)
        self.statuses.append((method, answer.status))
        return answer

    def answer(self, message: dict[str, Any], *, known: bool) -> web.Response:
        method, ident = message.get("method"), message.get("id")
        if method == "initialize":
            return web.json_response({"jsonrpc": "2.0", "id": ident, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy", "version": "1.0"}}},
                headers={"mcp-session-id": SESSION})
        if not known:
            return web.json_response({"jsonrpc": "2.0", "id": "server-error", "error": {
                "code": -32600, "message": "Bad Request: Missing session ID"}}, status=400)
        if ident is None:  # a notification (notifications/initialized)
            return web.Response(status=202)
        if method == "tools/list":
            return web.json_response({"jsonrpc": "2.0", "id": ident, "result": {"tools": [
                {"name": name, "inputSchema": {"type": "object"}}
                for name in ("lookup", "broken")]}})
        if method == "tools/call" and message["params"]["name"] == "broken":
            return web.Response(status=500, text="the tool server broke")
        return web.json_response({"jsonrpc": "2.0", "id": ident, "result": {
            "content": [{"type": "text", "text": "legacy:ok"}], "isError": False}})


@pytest.fixture
async def legacy() -> AsyncIterator[tuple[LegacyServer, str]]:
    server = LegacyServer()
    app = web.Application()
    app.router.add_post("/mcp", server.post)
    app.router.add_route("*", "/mcp", no_stream)
    async with TestServer(app, host="127.0.0.1") as running:
        yield server, str(running.make_url("/mcp"))


async def no_stream(request: web.Request) -> web.Response:
    return web.Response(status=405)  # no GET stream, no DELETE


@pytest.fixture
def relayd_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """relayd's own logging rules at INFO, undone after the test."""
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # basicConfig configures a bare root only
    monkeypatch.setattr(root, "level", root.level)
    for name in logs.CHATTY:
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    logs.configure("INFO")


def request(tool: str) -> ToolRequest:
    call = {"id": "c1", "type": "function", "function": {"name": tool,
                                                         "arguments": '{"q": "x"}'}}
    return ToolRequest(job_seq=1, batch_id="b", custom_id="r", round=1, call_id="k",
                       tool_calls=(call,))


@pytest.mark.timeout(60)
async def test_the_discover_probes_400_is_not_logged_and_a_real_failure_is_told(
        legacy: tuple[LegacyServer, str], relayd_logging: None,
        caplog: pytest.LogCaptureFixture) -> None:
    server, url = legacy
    caller = McpToolCaller(HostLimits(4), allow_private=True)
    config = ToolConfig(url=url, type="mcp", timeout_ms=10_000)
    with caplog.at_level(logging.INFO):  # the handler takes INFO; each logger its level
        try:
            [result] = await caller.call(config, request("lookup"))
            with pytest.raises(ToolCallFailed) as broken:
                await caller.call(config, request("broken"))
        finally:
            await caller.release(1)
    assert result.content == "legacy:ok" and not result.is_error
    assert ("server/discover", 400) in server.statuses  # the probe was refused, as expected
    assert ("initialize", 200) in server.statuses  # and the session fell back to it
    assert [record.getMessage() for record in caplog.records  # but the server's own
            if record.levelno >= logging.INFO and record.name != "aiohttp.access"] == []
    assert ("tools/call", 500) in server.statuses
    assert str(broken.value)  # the real failure reaches the row, with its reason
