"""The `mcp` tool-executor protocol: a Model Context Protocol server speaking Streamable
HTTP, called with the official `mcp` SDK's client on the I/O loop.

Each tool call of a round becomes one `tools/call` (the function name and its parsed
arguments, the round's call id in `_meta`); the text parts of the result become the
tool message, and an `isError` result is passed to the model as is (and counted in the
record's `openrelay.tool_errors`). Sessions are opened per (url, authorization) and
kept for the rest of the job, at most `[tools] mcp_sessions_per_job` of them. When a
record names no `tools`, the server's `tools/list` is asked once per session and its
tools are given to the model as function tools.

The URL policy is checked when a session opens, and the session's requests are pinned
to the address that was checked (`outbound.pinned`), which also holds each answer to
`max_bytes` (`[gateway] max_response_mb`; an event stream's events to the same size).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from daemon.domain.errors import InvalidRequest
from daemon.domain.tool_config import ToolConfig
from daemon.executors.http_tools import PARAM
from daemon.executors.tool_hosts import HostLimits
from daemon.executors.tool_loop import ToolCallFailed, ToolRequest, ToolResult
from daemon.outbound.body import MAX_BYTES
from daemon.outbound.policy import Resolver, check_url, system_resolver

if TYPE_CHECKING:
    from mcp import Client

# The `mcp` SDK (and httpx2, pydantic, starlette under it) loads on the first MCP record,
# not at relayd's start: it costs ~40 MB and ~0.3 s that jobs without one never need.

log = logging.getLogger("relay.tools.mcp")

SessionKey = tuple[str, str | None]  # (url, authorization)


class McpSession:
    """One open MCP client, owned by its own task: the SDK's sessions live in anyio task
    groups, which must be entered and left by the same task."""

    def __init__(self, open_client: Callable[[], Awaitable[Client]], *, secret: str | None,
                 ) -> None:
        self.client: Client | None = None
        self.failure: BaseException | None = None
        self.tools: list[dict[str, Any]] | None = None  # tools/list, asked once
        self.secret = secret  # never in a message: errors are scrubbed of it
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._task = asyncio.create_task(self._own(open_client))

    @property
    def broken(self) -> bool:
        """It failed to open, or closed: a new one must be opened."""
        return self._task.done()

    async def _own(self, open_client: Callable[[], Awaitable[Client]]) -> None:
        try:
            async with await open_client() as client:
                self.client = client
                self._ready.set()
                await self._closing.wait()
        except Exception as exc:  # the policy refused it, the connection failed or broke
            self.failure = exc
        finally:
            self.client = None
            self._ready.set()

    async def ready(self) -> Client:
        await self._ready.wait()
        if self.client is None:
            if isinstance(self.failure, ToolCallFailed):
                raise self.failure
            raise ToolCallFailed(scrubbed(f"could not open an MCP session: "
                                          f"{_describe(self.failure)}", self.secret),
                                 transient=True)
        return self.client

    async def close(self) -> None:
        self._closing.set()
        await asyncio.gather(self._task, return_exceptions=True)


class McpToolCaller:
    def __init__(self, limits: HostLimits, *, allow_private: bool,
                 resolve: Resolver = system_resolver, sessions_per_job: int = 8,
                 max_bytes: int = MAX_BYTES) -> None:
        self.limits = limits
        self.max_bytes = max_bytes
        self.allow_private = allow_private
        self.resolve = resolve
        self.sessions_per_job = sessions_per_job
        self.jobs: dict[int, OrderedDict[SessionKey, McpSession]] = {}

    async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
        session = await self._session(request.job_seq, config)
        try:
            client = await session.ready()
            async with self.limits.slot(config.url):
                return list(await asyncio.gather(*(
                    self._call_one(client, config, request, call)
                    for call in request.tool_calls)))
        except ToolCallFailed as exc:
            if exc.transient:  # the next attempt opens a fresh session
                await self._drop(request.job_seq, config, session)
            raise

    async def tools(self, config: ToolConfig, *, job_seq: int) -> list[dict[str, Any]] | None:
        session = await self._session(job_seq, config)
        if session.tools is None:
            try:
                session.tools = await self._listed(session, config)
            except ToolCallFailed as exc:
                if exc.transient:
                    await self._drop(job_seq, config, session)
                raise
        return session.tools

    async def _listed(self, session: McpSession, config: ToolConfig) -> list[dict[str, Any]]:
        from mcp.shared.exceptions import MCPError

        client = await session.ready()
        try:
            listed = await asyncio.wait_for(client.list_tools(), config.timeout_ms / 1000)
        except MCPError as exc:
            raise ToolCallFailed(scrubbed(f"tools/list: {exc}", config.authorization),
                                 transient=False) from exc
        except Exception as exc:
            raise ToolCallFailed(scrubbed(f"tools/list: {_describe(exc)}", config.authorization),
                                 transient=True) from exc
        return [function_tool(t) for t in listed.tools]

    async def release(self, job_seq: int) -> None:
        for session in self.jobs.pop(job_seq, {}).values():
            await session.close()

    async def _call_one(self, client: Client, config: ToolConfig, request: ToolRequest,
                        call: dict[str, Any]) -> ToolResult:
        from mcp.shared.exceptions import MCPError
        from mcp_types import RequestParamsMeta

        function = call.get("function") or {}
        name = str(function.get("name"))
        meta = RequestParamsMeta(relay_call_id=request.call_id,  # type: ignore[typeddict-unknown-key]
                                 tool_call_id=call["id"])  # open map: extra keys round-trip
        try:
            result = await asyncio.wait_for(
                client.call_tool(name, parse_arguments(function.get("arguments")), meta=meta),
                config.timeout_ms / 1000)
        except MCPError as exc:
            raise ToolCallFailed(scrubbed(f"tools/call {name}: {exc}", config.authorization),
                                 transient=False) from exc
        except Exception as exc:
            raise ToolCallFailed(scrubbed(f"tools/call {name}: {_describe(exc)}",
                                          config.authorization), transient=True) from exc
        text = "\n".join(part.text for part in result.content if part.type == "text")
        return ToolResult(call["id"], text, is_error=result.is_error)

    async def _session(self, job_seq: int, config: ToolConfig) -> McpSession:
        sessions = self.jobs.setdefault(job_seq, OrderedDict())
        key = (config.url, config.authorization)
        session = sessions.get(key)
        if session is not None and not session.broken:
            sessions.move_to_end(key)
            return session
        # Stored before anything is awaited: records starting together share it.
        session = sessions[key] = McpSession(lambda: self._open(config),
                                             secret=config.authorization)
        while len(sessions) > self.sessions_per_job:
            _, oldest = sessions.popitem(last=False)
            await oldest.close()
        return session

    async def _open(self, config: ToolConfig) -> Client:
        """The policy first (off the loop: DNS is blocking), then a client pinned to the
        address it checked."""
        return self._client(config, await self._checked_address(config.url))

    async def _drop(self, job_seq: int, config: ToolConfig, session: McpSession) -> None:
        """Forget `session` (if it is still the one kept) so the next call opens another."""
        sessions = self.jobs.get(job_seq, OrderedDict())
        key = (config.url, config.authorization)
        if sessions.get(key) is session:
            del sessions[key]
        await session.close()

    async def _checked_address(self, url: str) -> str | None:
        """The policy, checked off the loop (DNS is blocking); the address to pin to."""
        try:
            addresses = await asyncio.to_thread(check_url, url, param=PARAM,
                                                allow_private=self.allow_private,
                                                resolve=self.resolve)
        except InvalidRequest as exc:
            raise ToolCallFailed(exc.message, transient=exc.code == "invalid_url" and
                                 "resolved" in exc.message) from exc
        return addresses[0] if addresses else None

    def _client(self, config: ToolConfig, address: str | None) -> Client:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        from daemon.outbound.pinned import PinnedTransport

        headers = {"Authorization": config.authorization} if config.authorization else {}
        http = httpx2.AsyncClient(headers=headers, timeout=config.timeout_ms / 1000,
                                  transport=PinnedTransport(address, max_bytes=self.max_bytes))
        return Client(streamable_http_client(config.url, http_client=http,
                                             max_sse_event_size=self.max_bytes))


def function_tool(tool: Any) -> dict[str, Any]:
    """An MCP tool as an OpenAI function tool: name, description, inputSchema."""
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.input_schema}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def parse_arguments(arguments: Any) -> dict[str, Any]:
    """A tool call's `arguments` (a JSON string) as an object; {} when it is not one."""
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def scrubbed(text: str, secret: str | None) -> str:
    """`text` without the executor's secret, should an error message quote a header."""
    return text.replace(secret, "***") if secret else text


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
