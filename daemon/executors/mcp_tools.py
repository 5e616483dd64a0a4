"""The `mcp` tool-executor protocol: a Model Context Protocol server speaking Streamable
HTTP, called with the official `mcp` SDK's client on the I/O loop.

Each tool call of a round becomes one `tools/call` (the function name and its parsed
arguments, the round's call id in `_meta`); the text parts of the result become the
tool message, and an `isError` result is passed to the model as is (and counted in the
record's `openrelay.tool_errors`). Sessions are opened per (url, authorization) and
kept for the rest of the job, at most `[tools] mcp_sessions_per_job` of them. When a
record names no `tools`, the server's `tools/list` is asked once per session and its
tools are given to the model as function tools.

Every operation is bounded by the record's `timeout_ms`, whatever the server streams
(an event stream of keep-alive comments resets no clock here): opening a session (the
policy check, `server/discover` and `initialize`), `tools/list`, each `tools/call`, and
closing. Each `tools/list` and `tools/call` takes one of the host's slots
(`[tools] max_concurrency_per_host`) while it is on the wire. A session that is evicted
(over the cap) or failed is retired: it closes once the operations under way on it end,
and nothing waits for that; a close that overruns its bound cancels the session's task.

The URL policy is checked when a session opens, and the session's requests are pinned
to the address that was checked (`outbound.pinned`), which also holds each answer to
`max_bytes` (`[gateway] max_response_mb`; an event stream's events to the same size).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import sys
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from daemon.domain.errors import InvalidRequest
from daemon.domain.tool_config import ToolConfig
from daemon.executors.http_tools import PARAM
from daemon.executors.tool_arguments import arguments_of
from daemon.executors.tool_hosts import HostLimits
from daemon.executors.tool_loop import ToolCallFailed, ToolRequest, ToolResult
from daemon.outbound.body import MAX_BYTES
from daemon.outbound.policy import Resolver, check_url, system_resolver

if TYPE_CHECKING:
    from mcp import Client

# The `mcp` SDK (and httpx2, pydantic, starlette under it) loads on the first MCP record,
# not at relayd's start: it costs ~40 MB and 0.3–1.3 s that jobs without one never need.
# It loads off the I/O loop and before any operation's clock starts (`_load_sdk`).

log = logging.getLogger("relay.tools.mcp")

T = TypeVar("T")
SessionKey = tuple[str, str | None]  # (url, authorization)
CLOSE_GRACE_S = 1.0  # past its own bound, how long a closing session's task has to end
# The SDK's JSON-RPC errors that say the connection, not the tool, failed: worth a retry.
TRANSIENT_CODES = frozenset({-32000, -32001})  # CONNECTION_CLOSED, REQUEST_TIMEOUT
SDK_MODULES = ("httpx2", "mcp", "mcp.client.streamable_http", "mcp.shared.exceptions",
               "mcp_types", "daemon.outbound.pinned")


class McpSession:
    """One MCP client, owned by its own task: the SDK's sessions live in anyio task
    groups, which must be entered and left by the same task. Opening and closing are
    each bounded by `timeout_s`."""

    def __init__(self, open_client: Callable[[], Awaitable[Client]], *, secret: str | None,
                 timeout_s: float) -> None:
        self.client: Client | None = None
        self.failure: BaseException | None = None
        self.tools: list[dict[str, Any]] | None = None  # tools/list, asked once
        self.secret = secret  # never in a message: errors are scrubbed of it
        self.timeout_s = timeout_s
        self.users = 0  # operations under way on it (and waiting for it to open)
        self.retired = False  # close once `users` is 0
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._task = asyncio.create_task(self._own(open_client))

    @property
    def broken(self) -> bool:
        """It failed to open, or is closing: a new one must be opened."""
        return self._task.done() or self._closing.is_set()

    async def _own(self, open_client: Callable[[], Awaitable[Client]]) -> None:
        opened = contextlib.AsyncExitStack()
        try:
            async with asyncio.timeout(self.timeout_s):
                self.client = await opened.enter_async_context(await open_client())
            self._ready.set()
            await self._closing.wait()
        except TimeoutError:
            self.failure = ToolCallFailed(f"could not open an MCP session: "
                                          f"{_no_answer(self.timeout_s)}", transient=True)
        except Exception as exc:  # the policy refused it, the connection failed or broke
            self.failure = exc
        finally:
            self.client = None
            self._ready.set()
            await self._leave(opened)

    async def _leave(self, opened: contextlib.AsyncExitStack) -> None:
        """The SDK's goodbye (a DELETE) and the end of its tasks, bounded too."""
        try:
            async with asyncio.timeout(self.timeout_s):
                await opened.aclose()
        except Exception as exc:
            log.debug("closing an MCP session: %s", _describe(exc))

    async def ready(self, timeout_s: float) -> Client:
        """The open client, waited for at most `timeout_s`."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._ready.wait()
        except TimeoutError:
            raise ToolCallFailed(f"could not open an MCP session: {_no_answer(timeout_s)}",
                                 transient=True) from None
        if self.client is None:
            if isinstance(self.failure, ToolCallFailed):
                raise self.failure
            raise ToolCallFailed(scrubbed(f"could not open an MCP session: "
                                          f"{_describe(self.failure)}", self.secret),
                                 transient=True)
        return self.client

    def close(self) -> None:
        """Start closing; at once if it is still opening (nobody will use it)."""
        self._closing.set()
        if not self._ready.is_set():
            self._task.cancel()

    async def ended(self) -> None:
        """Wait for its task to end: its own bound, then a cancel and a short grace."""
        done, _ = await asyncio.wait({self._task}, timeout=self.timeout_s + CLOSE_GRACE_S)
        if not done:
            log.warning("an MCP session did not close in time: cancelled")
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=CLOSE_GRACE_S)


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
        self.closing: set[asyncio.Task[None]] = set()  # retired sessions, until they end

    async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
        await _load_sdk()
        session = self._session(request.job_seq, config)
        try:
            async with self._using(session, config) as client:
                calls = [asyncio.ensure_future(self._call_one(client, config, request, call))
                         for call in request.tool_calls]
                try:
                    return list(await asyncio.gather(*calls))
                finally:  # one failed: the round fails, the others need not go on
                    for pending in calls:
                        pending.cancel()
        except ToolCallFailed as exc:
            if exc.transient:  # the next attempt opens a fresh session
                self._drop(request.job_seq, config, session)
            raise

    async def tools(self, config: ToolConfig, *, job_seq: int) -> list[dict[str, Any]] | None:
        await _load_sdk()
        session = self._session(job_seq, config)
        if session.tools is None:
            try:
                async with self._using(session, config) as client:
                    session.tools = await self._listed(client, config)
            except ToolCallFailed as exc:
                if exc.transient:
                    self._drop(job_seq, config, session)
                raise
        return session.tools

    async def release(self, job_seq: int) -> None:
        sessions = list(self.jobs.pop(job_seq, {}).values())
        for session in sessions:
            session.close()
        await asyncio.gather(*(session.ended() for session in sessions))

    async def _listed(self, client: Client, config: ToolConfig) -> list[dict[str, Any]]:
        async with self.limits.slot(config.url):
            listed = await _asked("tools/list", client.list_tools(), config)
        return [function_tool(t) for t in listed.tools]

    async def _call_one(self, client: Client, config: ToolConfig, request: ToolRequest,
                        call: dict[str, Any]) -> ToolResult:
        from mcp_types import RequestParamsMeta

        function = call.get("function") or {}
        name = str(function.get("name"))
        meta = RequestParamsMeta(relay_call_id=request.call_id,  # type: ignore[typeddict-unknown-key]
                                 tool_call_id=call["id"])  # open map: extra keys round-trip
        async with self.limits.slot(config.url):  # per call: a round may have thousands
            request.guard()  # last before it goes out: a cancel, or a lease lost meanwhile
            result = await _asked(f"tools/call {name}", client.call_tool(
                name, arguments_of(call), meta=meta), config)  # the loop checked them
        text = "\n".join(part.text for part in result.content if part.type == "text")
        return ToolResult(call["id"], text, is_error=result.is_error)

    def _session(self, job_seq: int, config: ToolConfig) -> McpSession:
        sessions = self.jobs.setdefault(job_seq, OrderedDict())
        key = (config.url, config.authorization)
        session = sessions.get(key)
        if session is not None and not session.broken:
            sessions.move_to_end(key)
            return session
        # Stored before anything is awaited: records starting together share it.
        session = sessions[key] = McpSession(lambda: self._open(config),
                                             secret=config.authorization,
                                             timeout_s=config.timeout_ms / 1000)
        while len(sessions) > self.sessions_per_job:
            _, oldest = sessions.popitem(last=False)
            self._retire(oldest)  # never waited for: it may be stuck opening
        return session

    @contextlib.asynccontextmanager
    async def _using(self, session: McpSession, config: ToolConfig) -> AsyncIterator[Client]:
        """The session's client for one operation; a retired session closes after its
        last one."""
        session.users += 1
        try:
            yield await session.ready(config.timeout_ms / 1000)
        finally:
            session.users -= 1
            if session.retired and not session.users:
                self._close(session)

    def _drop(self, job_seq: int, config: ToolConfig, session: McpSession) -> None:
        """Forget `session` (if it is still the one kept) so the next call opens another."""
        sessions = self.jobs.get(job_seq, OrderedDict())
        key = (config.url, config.authorization)
        if sessions.get(key) is session:
            del sessions[key]
        self._retire(session)

    def _retire(self, session: McpSession) -> None:
        """Close `session` once the operations under way on it end (each is bounded)."""
        session.retired = True
        if not session.users:
            self._close(session)

    def _close(self, session: McpSession) -> None:
        session.close()
        ending = asyncio.create_task(session.ended())
        self.closing.add(ending)  # a strong reference until it ends
        ending.add_done_callback(self.closing.discard)

    async def _open(self, config: ToolConfig) -> Client:
        """The policy first (off the loop: DNS is blocking), then a client pinned to the
        address it checked."""
        return self._client(config, await self._checked_address(config.url))

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


async def _load_sdk() -> None:
    """Import the SDK in a thread, the first time: the import would block the I/O loop
    and eat into the first record's timeout."""
    if SDK_MODULES[-1] not in sys.modules:
        await asyncio.to_thread(lambda: [importlib.import_module(m) for m in SDK_MODULES])


async def _asked(what: str, answer: Awaitable[T], config: ToolConfig) -> T:
    """`answer` awaited at most the record's `timeout_ms`; every failure as a
    `ToolCallFailed` (transient unless the server answered with an error)."""
    from mcp.shared.exceptions import MCPError

    try:
        async with asyncio.timeout(config.timeout_ms / 1000):
            return await answer
    except TimeoutError:
        raise ToolCallFailed(f"{what}: {_no_answer(config.timeout_ms / 1000)}",
                             transient=True) from None
    except MCPError as exc:
        raise ToolCallFailed(scrubbed(f"{what}: {exc}", config.authorization),
                             transient=exc.code in TRANSIENT_CODES) from exc
    except Exception as exc:
        raise ToolCallFailed(scrubbed(f"{what}: {_describe(exc)}", config.authorization),
                             transient=True) from exc


def function_tool(tool: Any) -> dict[str, Any]:
    """An MCP tool as an OpenAI function tool: name, description, inputSchema."""
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.input_schema}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def scrubbed(text: str, secret: str | None) -> str:
    """`text` without the executor's secret, should an error message quote a header."""
    return text.replace(secret, "***") if secret else text


def _no_answer(timeout_s: float) -> str:
    return f"no answer within {timeout_s * 1000:g} ms (timeout_ms)"


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
