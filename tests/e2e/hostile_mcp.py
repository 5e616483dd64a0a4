"""A hostile MCP server for the end-to-end tests: a small real HTTP server (aiohttp, on
its own thread and event loop) that speaks just enough Streamable HTTP to hold a client
forever. `server/discover` gets a JSON-RPC error, as from a server of the handshake era,
so the client falls back to `initialize`; `initialize` is answered with
`text/event-stream` and then only `: keepalive` comments every 0.5 s, never a message.
It notes what it received and when a stream's reader went away."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

KEEPALIVE_S = 0.5
API_KEY = "hostile-s3cret-key"  # in the URL's query string, as many tool servers take it


@dataclass
class HostileMcp:
    methods: list[tuple[str, float]] = field(default_factory=list)  # (method, when)
    streams_open: int = 0  # keep-alive streams a client still reads
    streams_dropped: int = 0  # those whose client went away
    port: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp?api_key={API_KEY}"

    def received(self, method: str) -> int:
        return sum(1 for m, _ in self.methods if m == method)

    def start(self) -> HostileMcp:
        started = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(started,), daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("the hostile MCP server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def _serve(self, started: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_post("/mcp", self._post)
        app.router.add_route("*", "/mcp", self._other)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = int(self._runner.addresses[0][1])
        started.set()
        self._loop.run_forever()
        self._loop.close()

    async def _post(self, request: web.Request) -> web.StreamResponse:
        message: dict[str, Any] = await request.json()
        method = str(message.get("method"))
        self.methods.append((method, time.time()))
        if method == "server/discover":
            return web.json_response({"jsonrpc": "2.0", "id": message.get("id"), "error": {
                "code": -32601, "message": "Method not found"}})
        if method != "initialize":
            return web.Response(status=202)
        return await self._keepalive(request)

    async def _other(self, request: web.Request) -> web.Response:
        return web.Response(status=405)  # no GET stream, no DELETE: no session id given

    async def _keepalive(self, request: web.Request) -> web.StreamResponse:
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        self.streams_open += 1
        try:
            while True:
                await stream.write(b": keepalive\n\n")
                await asyncio.sleep(KEEPALIVE_S)
        except ConnectionError:  # the client stopped reading: what a bounded client does
            self.streams_dropped += 1
            return stream
        finally:
            self.streams_open -= 1
