"""The memory budget for request bodies read at once (`[server] max_parsing_mb`).

A JSON body is read whole and then decoded, so each large submit in flight costs a
few times its size; without a bound, a handful of concurrent 60 MB submits take the
daemon's memory with them. Before its handler runs, a request with a body reserves
its Content-Length (`max_body_mb` when the length is unknown, e.g. chunked) and
gives it back when the handler ends, however it ends; a request that does not fit
is answered 429 with Retry-After and reads nothing.

A compressed body (any Content-Encoding) is held decoded, and its decoded length is
unknown until it has been read, so it reserves `max_body_mb` like a chunked one: a
1 MB gzip bomb once reserved 1 MB and then held 64 MB decoded (and a copy), eight of
them a gigabyte. `read_body` reads the decoded stream as aiohttp inflates it, chunk by
chunk, and stops with a 413 the moment it passes `max_body_mb`.

File uploads (`POST /v1/files`) reserve nothing: they stream to disk in small chunks
(api/files.py) and have their own bound, `max_concurrent_uploads`.
"""

from __future__ import annotations

from aiohttp import web

from daemon.api.middleware import Handler, body_cap, compressed
from daemon.domain.errors import TooMany

MB = 1024 * 1024
RETRY_AFTER_S = 1
STREAMED = frozenset({("POST", "/v1/files")})  # (method, path) whose bodies go to disk


class BodyBudget:
    """Bytes of request bodies being read, against a limit. Used on the event loop
    only, so it needs no lock."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.reserved = 0

    def reserve(self, size: int) -> bool:
        if self.reserved + size > self.limit:
            return False
        self.reserved += size
        return True

    def release(self, size: int) -> None:
        self.reserved -= size


BODY_BUDGET = web.AppKey("body_budget", BodyBudget)


def body_size(request: web.Request) -> int:
    """What reading `request`'s body may take: nothing past the body cap, which
    `read_body` enforces with a 413; the cap when the decoded length is unknown."""
    if not request.body_exists or (request.method, request.path) in STREAMED:
        return 0
    cap = body_cap(request)
    length = request.content_length
    return cap if length is None or compressed(request) else min(length, cap)


async def read_body(request: web.Request) -> bytearray:
    """The decoded body, read as it arrives and never held past the body cap: a 413
    (`HTTPRequestEntityTooLarge`) as soon as the decoded bytes pass it. A bytearray, so
    the whole body is never copied once more at the end (`request.read()` does)."""
    cap = body_cap(request)
    body = bytearray()
    async for piece in request.content.iter_any():
        body += piece
        if len(body) > cap:
            raise web.HTTPRequestEntityTooLarge(max_size=cap, actual_size=len(body))
    return body


def server_busy(limit: int) -> TooMany:
    return TooMany(
        f"The daemon is reading as many request bodies as it may at once "
        f"(server.max_parsing_mb = {limit // MB} MB); retry shortly.",
        code="server_busy", retry_after_s=RETRY_AFTER_S)


@web.middleware
async def body_budget(request: web.Request, handler: Handler) -> web.StreamResponse:
    size = body_size(request)
    if size == 0:
        return await handler(request)
    budget = request.app[BODY_BUDGET]
    if not budget.reserve(size):
        raise server_busy(budget.limit)
    try:
        return await handler(request)
    finally:
        budget.release(size)
