"""The simulator's MCP tool server (`relayd simulate --mcp-port P`): deterministic tools
over Streamable HTTP at `/mcp`, built with the official `mcp` SDK (2.x `MCPServer`) and
served by uvicorn on its own port, in the simulator's process and event loop.

Tools: `lookup(query: str) -> str` answers "lookup:QUERY", `add(a: int, b: int) -> int`,
`fail(reason: str)` always fails (a result with isError). `lookup` and `fail` honour
`[sim:tool_sleep=MS]` and `[sim:tool_fail=CODE times=K]` in their arguments (a failure
is an isError result; `times` counts per tool and arguments); `lookup` honours
`[sim:tool_huge=MB]` too (its answer padded to that many MB, built whole in memory:
keep it small).

Every tools/call is recorded in `SimState.mcp_calls` (read at `GET /_sim/mcp_calls` on
the simulator's main port): the tool, its arguments, the request's `_meta`, the HTTP
headers of interest (Authorization, Relay-*), and whether the result was an error. How
many are answered at once, and the most at once, are in `GET /_sim/stats`
(`mcp_in_flight`, `mcp_peak_in_flight`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Iterator, Mapping
from typing import Any

import uvicorn
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from daemon.simulator.app import MB, TOOL_HEADERS, SimState
from daemon.simulator.faults import Directive, parse_directive

MCP_PATH = "/mcp"
SERVER_NAME = "relay-simulator"


def build_mcp_server(state: SimState) -> MCPServer[Any]:
    """The MCP server: its tools, and a middleware that records every tools/call."""
    server: MCPServer[Any] = MCPServer(
        SERVER_NAME, instructions="SIMULATED tools of the Relay simulator: deterministic.",
        log_level="WARNING", middleware=[CallRecorder(state)])

    @server.tool(description="Look up QUERY in the SIMULATED knowledge base: "
                             "answers 'lookup:QUERY'.")
    async def lookup(query: str) -> str:
        directive = await _directed(state, "lookup", {"query": query})
        huge_mb = directive.tool_huge_mb if directive is not None else None
        return f"lookup:{query}" + ("x" * huge_mb * MB if huge_mb else "")

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Always fails with REASON (a SIMULATED tool error).")
    async def fail(reason: str) -> str:
        await _directed(state, "fail", {"reason": reason})
        raise ToolError(f"SIMULATED tool failure: {reason}")

    return server


async def _directed(state: SimState, tool: str, arguments: dict[str, Any]
                    ) -> Directive | None:
    """Apply `[sim:tool_sleep=MS]` and `[sim:tool_fail=CODE times=K]` from the arguments;
    the directive, for what the tool itself honours."""
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    try:
        directive = parse_directive(text)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    if directive is None:
        return None
    if directive.tool_sleep_ms:
        await asyncio.sleep(directive.tool_sleep_ms / 1000)
    if directive.tool_fail is not None:
        key = f"{tool}|{text}"
        seen = state.mcp_seen[key]
        state.mcp_seen[key] += 1
        if directive.tool_times is None or seen < directive.tool_times:
            raise ToolError(f"SIMULATED tool failure (code {directive.tool_fail})")
    return directive


class CallRecorder:
    """MCP middleware (`MCPServer(middleware=[...])`, called for every inbound message)
    that records tools/call requests into `state.mcp_calls`."""

    def __init__(self, state: SimState) -> None:
        self.state = state

    async def __call__(self, ctx: ServerRequestContext[Any, Any],
                       call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        params = ctx.params or {}
        entry: dict[str, Any] = {
            "tool": params.get("name"), "arguments": params.get("arguments"),
            "meta": dict(ctx.meta) if ctx.meta is not None else None,
            "headers": _headers(getattr(ctx.request, "headers", None)),
            "protocol_version": ctx.protocol_version, "is_error": None, "error": None,
            "at": time.time()}
        self.state.mcp_calls.append(entry)
        state = self.state
        state.mcp_in_flight += 1
        state.mcp_peak_in_flight = max(state.mcp_peak_in_flight, state.mcp_in_flight)
        try:
            result = await call_next(ctx)
        except Exception as exc:  # a protocol error (bad params...): the client gets it
            entry["error"] = str(exc) or type(exc).__name__
            raise
        finally:
            state.mcp_in_flight -= 1
        entry["is_error"] = _is_error(result)
        return result


def _headers(headers: Mapping[str, str] | None) -> dict[str, str | None]:
    if headers is None:
        return dict.fromkeys(TOOL_HEADERS)
    found: dict[str, str | None] = {name: headers.get(name) for name in TOOL_HEADERS}
    found.update((name.title(), value) for name, value in headers.items()
                 if name.lower().startswith("relay-") and name.title() not in found)
    return found


def _is_error(result: HandlerResult) -> bool | None:
    if isinstance(result, dict):
        return bool(result.get("isError", result.get("is_error", False)))
    value = getattr(result, "is_error", None)
    return None if value is None else bool(value)


class _Uvicorn(uvicorn.Server):
    """uvicorn without its signal handlers: `relayd simulate` owns SIGINT and SIGTERM
    (`serve()` would otherwise replace the event loop's handlers with its own)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class McpRunner:
    """The MCP server under uvicorn on the running event loop: `start()`, `url`,
    `stop()`. The Starlette app's lifespan (the SDK's session manager) runs."""

    def __init__(self, state: SimState, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        app = build_mcp_server(state).streamable_http_app(streamable_http_path=MCP_PATH,
                                                          host=host)
        config = uvicorn.Config(app, log_config=None, log_level="warning", access_log=False,
                                lifespan="on", timeout_graceful_shutdown=1,
                                headers=[("X-Relay-Simulated", "true")])
        self._server = _Uvicorn(config)
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}{MCP_PATH}"

    async def start(self) -> None:
        """Bind (OSError if the port is taken), serve, and return once it listens."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.create_server((self.host, self.port), family=family)
        self.port = int(sock.getsockname()[1])
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._task.done():
                await self._task  # raises what stopped it
                raise RuntimeError("the MCP server stopped while starting")
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        if self._task is not None:
            self._server.should_exit = True
            await self._task
            self._task = None
