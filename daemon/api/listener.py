"""The HTTP listener `relayd serve` runs: aiohttp's server with every connection
reporting to a `ConnectionGuard` (connections.py, which decides what to close), the
descriptor limit raised so the connection cap fits, and the loop's accept errors
logged at most once per few seconds.

aiohttp has neither a deadline for a request head nor a hook per connection, so each
connection's protocol is a subclass of its `RequestHandler`, made by a subclass of its
`Server`. Both lean on private names (`Server._kwargs` and `_loop`,
`RequestHandler._handle_request`): the hook whose loss would go unnoticed (a request's
start) is checked at import, and tests/api/test_connections.py fails without any of
them, so an aiohttp that renames one cannot leave the server quietly unguarded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from daemon.api.connections import (
    ConnectionGuard,
    Deadlines,
    LogThrottle,
    connection_cap,
    fd_limit_wanted,
    sweep_interval,
)
from daemon.api.middleware import envelope
from daemon.config import ServerConfig
from daemon.domain.errors import clipped

log = logging.getLogger("relay.api")

SHUTDOWN_TIMEOUT_S = 1.0
ACCEPT_LOG_INTERVAL_S = 5.0
ACCEPT_ERROR = "socket.accept() out of system resource"  # asyncio's words (selector loop)
MAX_LINE = 8190  # aiohttp's limits on a request line and a header line, in bytes
MAX_HEADERS = 128
SHOWN = 200  # characters of the parser's own words kept in a refusal

if not hasattr(RequestHandler, "_handle_request"):  # pragma: no cover
    raise ImportError("aiohttp.web_protocol.RequestHandler._handle_request is gone: "
                      "daemon/api/listener.py needs another hook for a request's start")

ExceptionHandler = Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object]


class GuardedHandler(RequestHandler):
    """aiohttp's protocol for one connection, reporting its phases to the guard."""

    def __init__(self, manager: web.Server, *, guard: ConnectionGuard[GuardedHandler],
                 **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self.guard = guard
        self.request: BaseRequest | None = None
        self.held = False  # reading paused by flow control: the body waits on us
        self.discarding = False  # a refused body's rest: dropped unread

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        for victim in self.guard.opened(self):
            victim.force_close()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.guard.closed(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.discarding:
            return
        if data:  # b"" is aiohttp re-parsing its own buffer
            self.guard.received(self)
        super().data_received(data)

    def discard_rest(self) -> None:
        """The request's body was refused part-read (413): drop the rest as it arrives,
        neither parsed nor inflated. The refusal closes the connection; aiohttp's
        lingering waits for the client to take it and close (at most 10 s)."""
        self.discarding = True

    def pause_reading(self) -> None:
        self.held = True
        super().pause_reading()

    def resume_reading(self, *args: Any, **kwargs: Any) -> None:
        self.held = False
        self.guard.received(self)  # the body's stall clock restarts when we read again
        super().resume_reading(*args, **kwargs)

    async def _handle_request(
        self, request: BaseRequest, start_time: float | None,
        request_handler: Callable[[BaseRequest], Awaitable[web.StreamResponse]],
    ) -> tuple[web.StreamResponse, bool]:
        # Spans the handler and the writing of its response: a request's whole life.
        self.guard.request_started(self)
        self.request = request
        try:
            return await super()._handle_request(request, start_time, request_handler)
        finally:
            self.request = None
            self.guard.request_ended(self)

    def log_exception(self, *args: Any, **kw: Any) -> None:
        # A body read that failed because the connection is gone (cut off here for
        # stalling, or dropped by the client) is no fault of the daemon, and a
        # traceback for each would flood the log under a slow-body attack.
        if isinstance(kw.get("exc_info"), ConnectionResetError) and self.transport is None:
            self.logger.debug(*args, **kw)
            return
        super().log_exception(*args, **kw)

    def handle_error(self, request: BaseRequest, status: int = 500,
                     exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        # aiohttp answers a request its parser refuses in plain text, before any
        # middleware runs; say it in the error envelope like every other refusal.
        if not isinstance(exc, HttpProcessingError) or request.writer.output_size > 0:
            return super().handle_error(request, status, exc, message)
        self.logger.debug("refused a malformed request from %s: %s", request.remote, exc)
        words, code = malformed(exc)
        answer = envelope(status, words, code=code)
        answer.force_close()  # the parser cannot find where the next request starts
        return answer

    def body_pending(self) -> bool:
        """The request's body is still arriving, and the server is ready to read it."""
        return self.request is not None and not self.held and not self.request.content.is_eof()


def malformed(exc: HttpProcessingError) -> tuple[str, str]:
    """The message and code for a request the HTTP parser refused. A long URL and a long
    header are told apart by neither parser, so one message names both limits."""
    if isinstance(exc, LineTooLong) or "Too many headers" in exc.message:
        return (f"The request head is too large: the request line (method and URL) and "
                f"each header must be at most {MAX_LINE} bytes, and there may be at most "
                f"{MAX_HEADERS} headers.", "request_head_too_large")
    return (f"The request is not valid HTTP/1.1: {clipped(exc.message, most=SHOWN)}",
            "malformed_request")


class GuardedServer(web.Server):
    """aiohttp's server, making `GuardedHandler`s: a copy of the server it replaces."""

    def __init__(self, plain: web.Server, guard: ConnectionGuard[GuardedHandler]) -> None:
        super().__init__(plain.request_handler, request_factory=plain.request_factory,
                         handler_cancellation=plain.handler_cancellation, loop=plain._loop,
                         **plain._kwargs)
        self.guard = guard

    def __call__(self) -> RequestHandler:
        return GuardedHandler(self, guard=self.guard, loop=self._loop, **self._kwargs)


class GuardedRunner(web.AppRunner):
    def __init__(self, app: web.Application, guard: ConnectionGuard[GuardedHandler],
                 **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.guard = guard

    async def _make_server(self) -> web.Server:
        return GuardedServer(await super()._make_server(), self.guard)


class AcceptErrorLog:
    """A loop exception handler: "socket.accept() out of system resource" at most once
    per `interval_s` with a count of the ones held back (asyncio reports it once per
    connection waiting, thousands a second under a flood); anything else goes on to
    the handler it replaces."""

    def __init__(self, previous: ExceptionHandler | None, *, clock: Callable[[], float],
                 interval_s: float = ACCEPT_LOG_INTERVAL_S) -> None:
        self.previous = previous
        self.clock = clock
        self.throttle = LogThrottle(interval_s)

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != ACCEPT_ERROR:
            if self.previous is not None:
                self.previous(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        held = self.throttle.admit(self.clock())
        if held is None:
            return
        more = f" ({held} more since the last report)" if held else ""
        log.error("%s: %s%s; new connections wait", ACCEPT_ERROR, context.get("exception"),
                  more)


def raise_fd_limit(connections: int) -> int:
    """Raise the soft RLIMIT_NOFILE toward the hard one so `connections` fit beside the
    reserve; return the soft limit now in force."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not a POSIX system: nothing to raise
        return connections * 2
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = fd_limit_wanted(soft, hard, connections=connections,
                             infinity=resource.RLIM_INFINITY)
    if wanted > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            return wanted
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the open-file limit from %d to %d: %s", soft, wanted, exc)
    return soft


class Listener:
    """The listening HTTP server: `await Listener.open(app, server)`, `await close()`."""

    def __init__(self, runner: GuardedRunner, guard: ConnectionGuard[GuardedHandler]) -> None:
        self.runner = runner
        self.guard = guard
        self.loop = asyncio.get_running_loop()
        self.interval = sweep_interval(guard.deadlines)
        self.accept_log = AcceptErrorLog(self.loop.get_exception_handler(), clock=self.loop.time)
        self._timer: asyncio.TimerHandle | None = None

    @classmethod
    async def open(cls, app: web.Application, server: ServerConfig) -> Listener:
        cap = connection_cap(server.max_connections, raise_fd_limit(server.max_connections))
        if cap < server.max_connections:
            log.warning("server.max_connections lowered from %d to %d to fit the open-file "
                        "limit", server.max_connections, cap)
        guard: ConnectionGuard[GuardedHandler] = ConnectionGuard(
            Deadlines(head_s=server.header_timeout_s, body_s=server.body_timeout_s), cap,
            clock=asyncio.get_running_loop().time)
        runner = GuardedRunner(app, guard, access_log=None, handle_signals=False,
                               shutdown_timeout=SHUTDOWN_TIMEOUT_S, max_line_size=MAX_LINE,
                               max_field_size=MAX_LINE, max_headers=MAX_HEADERS)
        await runner.setup()
        await web.TCPSite(runner, server.host, server.port).start()
        listener = cls(runner, guard)
        listener.loop.set_exception_handler(listener.accept_log)
        listener._sweep()
        return listener

    @property
    def port(self) -> int | None:
        return int(self.runner.addresses[0][1]) if self.runner.addresses else None

    def _sweep(self) -> None:
        for handler, why in self.guard.sweep(GuardedHandler.body_pending):
            log.debug("closing a connection: its %s is late", why)
            handler.force_close()
        self._timer = self.loop.call_later(self.interval, self._sweep)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.loop.set_exception_handler(self.accept_log.previous)
        await self.runner.cleanup()
