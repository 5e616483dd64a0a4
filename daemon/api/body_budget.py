"""The memory budget for request bodies read at once (`[server] max_parsing_mb`).

A JSON body is read whole and then decoded, so each large submit in flight costs a
few times its size; without a bound, a handful of concurrent 60 MB submits take the
daemon's memory with them. Before its handler runs, a request with a body reserves
its Content-Length (`max_body_mb` when the length is unknown, e.g. chunked) and
gives it back when the handler ends, however it ends; a request that does not fit
is answered 429 with Retry-After and reads nothing.

File uploads (`POST /v1/files`) reserve nothing: they stream to disk in small chunks
(api/files.py) and have their own bound, `max_concurrent_uploads`.
"""

from __future__ import annotations

from aiohttp import web

from daemon.api.middleware import Handler
from daemon.domain.errors import InvalidRequest

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
    `request.read()` enforces with a 413."""
    if not request.body_exists or (request.method, request.path) in STREAMED:
        return 0
    cap = request.client_max_size
    length = request.content_length
    return cap if length is None else min(length, cap)


def server_busy(limit: int) -> InvalidRequest:
    return InvalidRequest(
        f"The daemon is reading as many request bodies as it may at once "
        f"(server.max_parsing_mb = {limit // MB} MB); retry shortly.",
        status=429, code="server_busy", type="rate_limit_error",
        headers={"Retry-After": str(RETRY_AFTER_S)})


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
