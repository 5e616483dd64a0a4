"""Middleware: every error becomes the error envelope of the dialect that owns the route;
every `/v1` route needs a key, sent as that dialect's scheme has it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.web_urldispatcher import AbstractRoute

from daemon.api import respond
from daemon.api.context import SERVICES
from daemon.api.reads import point_read
from daemon.dialects import DIALECTS, NATIVE, Dialect
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
MB = 1024 * 1024
OWNERS = web.AppKey("owners", dict[AbstractRoute, Dialect])  # each mounted route's dialect

# The one place an error's class becomes its HTTP status: the first class of its MRO
# named here (domain/errors.py draws the tree).
STATUSES: dict[type[RelayError], int] = {
    InvalidRequest: 400, RequestTimeout: 408, TooLarge: 413, NotFound: 404, Conflict: 409,
    TooMany: 429, Unavailable: 503, InsufficientStorage: 507, RelayError: 500}
# The envelope's `type` of the answers outside the tree (aiohttp's, and authentication)
_HTTP_TYPES = {401: "authentication_error", 404: "not_found_error"}


def status_of(error: RelayError) -> int:
    return next(STATUSES[cls] for cls in type(error).__mro__ if cls in STATUSES)


def owner(request: web.Request) -> Dialect:
    """The dialect whose envelope and key scheme a request's route uses: the route's
    owner, or for a path no route matched, the dialect serving its longest prefix."""
    found = request.app.get(OWNERS, {}).get(request.match_info.route)
    if found is not None:
        return found
    prefixes = [(len(p), d) for d in DIALECTS.values() for p in d.prefixes
                if request.path.startswith(p)]
    return max(prefixes, key=lambda pair: pair[0])[1] if prefixes else NATIVE


def body_cap(request: web.Request) -> int:
    """The most a request's body may be, in bytes: its dialect's own limit (within the
    parsing budget, which must hold one body) for a body that says its length and is
    not compressed, else `[server] max_body_mb` (the app's `client_max_size`): a body of
    unknown length reserves the cap, and one past `max_body_mb` would take the whole
    budget from every other request while it trickles in."""
    own = owner(request).max_body_mb
    if not own:
        return request.client_max_size
    if request.content_length is None or compressed(request):  # reserved at the cap:
        return request.client_max_size  # past `max_body_mb`, a body must say its length
    return min(own, request.app[SERVICES].config.server.max_parsing_mb) * MB


def compressed(request: web.Request) -> bool:
    return request.headers.get("Content-Encoding", "identity").strip().lower() not in (
        "", "identity")


def answer(request: web.Request, error: RelayError, status: int, *,
           headers: dict[str, str] | None = None) -> web.Response:
    dialect = owner(request)
    status = dialect.error_status(status)
    return respond.json(dialect.error_body(error, status), status=status, headers=headers)


def envelope(status: int, message: str, *, param: str | None = None,
             code: str | None = None, type: str | None = None,
             request: web.Request | None = None) -> web.Response:
    """An answer outside the tree (a 401, one of aiohttp's refusals, a 500), in the
    envelope of the request's dialect (the native one without a request)."""
    error = RelayError(message, param=param, code=code)
    error.type = type or _HTTP_TYPES.get(status, "invalid_request_error")
    if request is not None:
        return answer(request, error, status)
    return respond.json(NATIVE.error_body(error, status), status=status)


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except StoreError as exc:
        return _store_fault(request, exc)
    except RelayError as exc:
        headers = ({"Retry-After": str(exc.retry_after_s)}
                   if isinstance(exc, TooMany) and exc.retry_after_s is not None else None)
        refused = answer(request, exc, status_of(exc), headers=headers)
        return _unread_rest(request, refused) if isinstance(exc, TooLarge) else refused
    except web.HTTPRequestEntityTooLarge:
        limit = body_cap(request) // MB
        return _unread_rest(request, envelope(413, f"The request body exceeds the {limit} MB "
                                              "limit.", code="request_too_large",
                                              request=request))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        refused = envelope(exc.status, exc.reason or "error", code=exc.reason.lower()
                           .replace(" ", "_") if exc.reason else None, request=request)
        if "Allow" in exc.headers:  # a 405 names the route's methods (RFC 9110)
            refused.headers["Allow"] = exc.headers["Allow"]
        return refused
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return envelope(500, "Internal error; the daemon's log has the details.",
                        code="internal_error", type="server_error", request=request)


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
                    code=fault.code, type=fault.type, request=request)


@web.middleware
async def auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not request.path.startswith("/v1/"):
        return await handler(request)
    scheme = owner(request).auth
    key = scheme.key(request.headers)
    if key is None:
        return envelope(401, scheme.missing, code="missing_api_key", request=request)
    if request.match_info.http_exception is None:  # a route of its: its other demands
        scheme.check(request.headers)  # (raises: answered in the envelope)
    repo = request.app[SERVICES].repo
    workspace = await point_read(repo, repo.authenticate, key)
    if workspace is None:
        return envelope(401, "Invalid API key.", code="invalid_api_key", request=request)
    request[WORKSPACE] = workspace
    request[API_KEY] = key  # a long-lived route (the event stream) checks it again
    return await handler(request)
