"""Middleware: every error becomes the JSON envelope; every `/v1` route needs a key."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from daemon.api.context import SERVICES
from daemon.dialects import error_envelope
from daemon.domain.errors import (
    Conflict,
    InsufficientStorage,
    InvalidRequest,
    NotFound,
    RelayError,
    RequestTimeout,
    TooLarge,
    TooMany,
    Unavailable,
)
from daemon.store.faults import StorageFull, StoreError

log = logging.getLogger("relay.api")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
WORKSPACE = "workspace"
API_KEY = "api_key"

# The one place an error's class becomes its HTTP status: the first class of its MRO
# named here (domain/errors.py draws the tree).
STATUSES: dict[type[RelayError], int] = {
    InvalidRequest: 400, RequestTimeout: 408, TooLarge: 413, NotFound: 404, Conflict: 409,
    TooMany: 429, Unavailable: 503, InsufficientStorage: 507, RelayError: 500}
# The envelope's `type` of the answers outside the tree (aiohttp's, and authentication)
_HTTP_TYPES = {401: "authentication_error", 404: "not_found_error"}


def status_of(error: RelayError) -> int:
    return next(STATUSES[cls] for cls in type(error).__mro__ if cls in STATUSES)


def envelope(status: int, message: str, *, param: str | None = None,
             code: str | None = None, type: str | None = None) -> web.Response:
    """An answer outside the tree (a 401, one of aiohttp's refusals, a 500), in the
    same envelope."""
    error = RelayError(message, param=param, code=code)
    error.type = type or _HTTP_TYPES.get(status, "invalid_request_error")
    return web.json_response(error_envelope(error), status=status)


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except StoreError as exc:
        return _store_fault(request, exc)
    except RelayError as exc:
        headers = ({"Retry-After": str(exc.retry_after_s)} if isinstance(exc, TooMany)
                   else None)
        answer = web.json_response(error_envelope(exc), status=status_of(exc), headers=headers)
        return _unread_rest(request, answer) if isinstance(exc, TooLarge) else answer
    except web.HTTPRequestEntityTooLarge:
        limit = request.app[SERVICES].config.server.max_body_mb
        return _unread_rest(request, envelope(413, f"The request body exceeds the {limit} MB "
                                              "limit.", code="request_too_large"))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        answer = envelope(exc.status, exc.reason or "error", code=exc.reason.lower()
                          .replace(" ", "_") if exc.reason else None)
        if "Allow" in exc.headers:  # a 405 names the route's methods (RFC 9110)
            answer.headers["Allow"] = exc.headers["Allow"]
        return answer
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return envelope(500, "Internal error; the daemon's log has the details.",
                        code="internal_error", type="server_error")


def _unread_rest(request: web.Request, answer: web.Response) -> web.Response:
    """A body refused part-read: the rest of it is dropped as it arrives, unparsed (the
    rest of a gzip bomb would otherwise be inflated for aiohttp's whole lingering time,
    10 s of CPU each), and the answer closes the connection. The listener's protocol
    (api/listener.py) can drop it; another (the test server's) reads it as aiohttp does."""
    discard = getattr(request.protocol, "discard_rest", None)
    if discard is not None:
        discard()
    answer.force_close()
    return answer


def _store_fault(request: web.Request, fault: StoreError) -> web.Response:
    """The store could not write: said with its own status and code, naming where, and
    reported to health at once. The write was one transaction, so nothing of the
    request was kept."""
    services = request.app[SERVICES]
    services.health.record(fault, now=services.clock())
    log.warning("%s %s refused: the store cannot write (%s)", request.method, request.path,
                fault.detail)
    full = isinstance(fault, StorageFull)
    where = (f"the data directory {services.config.server.data_dir}"
             if full or not services.config.database_url else "the database")
    what = "is out of space" if full else "cannot be written"
    return envelope(status_of(fault), f"Relay's store {what} ({where}: {fault.detail}); "
                    "nothing of this request was kept. Retry once the storage recovers.",
                    code=fault.code, type=fault.type)


@web.middleware
async def auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not request.path.startswith("/v1/"):
        return await handler(request)
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return envelope(401, "Missing API key: send 'Authorization: Bearer <key>'.",
                        code="missing_api_key")
    repo = request.app[SERVICES].repo
    workspace = await asyncio.to_thread(repo.authenticate, key.strip())
    if workspace is None:
        return envelope(401, "Invalid API key.", code="invalid_api_key")
    request[WORKSPACE] = workspace
    request[API_KEY] = key.strip()  # a long-lived route (the event stream) checks it again
    return await handler(request)
