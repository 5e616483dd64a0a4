"""`GET /v1/events`: server-sent events for the key's workspace.

A client first gets `stream.hello` (`{"workspace": name}`), then `job.snapshot` for
every job that is not finished (so a late joiner sees current state), then live
`job.created`, `job.progress`, `job.ended`. With `?rows=true`, a `row` event for each
row finished since, before its job's event (`row_events.py`; `lagged` when the stream
falls too far behind a job).
Comments keep idle connections alive; `stream.dropped` says events were lost
because the client did not keep up (refetch state when you see it). A revoked key's
stream gets `stream.closed` and ends within about a second; when relayd stops, every
stream gets `stream.closed` at once.
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from daemon.api.batches import context
from daemon.api.context import Services
from daemon.api.events import Event, Subscription
from daemon.api.middleware import API_KEY
from daemon.api.reads import point_read
from daemon.api.row_events import JOB_EVENTS, RowFeed
from daemon.dialects import event_view
from daemon.domain.errors import InvalidRequest
from daemon.domain.jobs import CANCELLING, FINALIZING, QUEUED, RUNNING, SCHEDULED, VALIDATING

log = logging.getLogger("relay.api")

KEEPALIVE_S = 15.0
SNAPSHOT_PAGE = 100
KEY_CHECK_S = 1.0  # how often a stream asks whether its key still stands
ACTIVE = (SCHEDULED, VALIDATING, QUEUED, RUNNING, FINALIZING, CANCELLING)


async def events(request: web.Request) -> web.StreamResponse:
    services, workspace = context(request)
    feed = RowFeed(services.repo, workspace.id) if _rows(request) else None
    sub = services.hub.subscribe(workspace.id)  # before the snapshot: nothing falls between
    try:
        response = web.StreamResponse(headers={
            "Content-Type": "text/event-stream", "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no"})
        await response.prepare(request)
        await response.write(b"retry: 2000\n\n")
        await response.write(sub.encode(Event("stream.hello", {"workspace": workspace.name})))
        after = None
        while True:  # every job that has not ended, a page at a time (not just the first)
            jobs, more = await asyncio.to_thread(services.repo.list_jobs, workspace.id,
                                                 limit=SNAPSHOT_PAGE, after=after,
                                                 statuses=ACTIVE)
            for job in jobs:
                if feed is not None:
                    feed.start(job)
                await response.write(sub.encode(Event("job.snapshot", event_view(job))))
            if not more or not jobs:
                break
            after = jobs[-1].id
        clock = asyncio.get_running_loop().time
        checked = written = clock()
        reason = "key revoked"
        while True:
            sent = await _next(sub, feed)
            if sub.closed:
                reason = "relayd is stopping"
                break
            if clock() - checked >= KEY_CHECK_S:
                if not await _key_is_live(services, request[API_KEY]):
                    break
                checked = clock()
            if sent is None and clock() - written >= KEEPALIVE_S:
                sent = b": keepalive\n\n"
            if sent is not None:
                await response.write(sent)
                written = clock()
        await response.write(sub.encode(Event("stream.closed", {"reason": reason})))
    except ConnectionError as exc:  # the client left: the normal end of a stream
        log.debug("event stream closed by the client: %s", type(exc).__name__)
    finally:
        services.hub.unsubscribe(sub)
    return response


async def _key_is_live(services: Services, key: str) -> bool:
    """The stream's key still authenticates (a revoke ends the stream within a second)."""
    return await point_read(services.repo, services.repo.authenticate, key) is not None


def _rows(request: web.Request) -> bool:
    raw = request.query.get("rows", "false")
    if raw not in ("true", "false"):
        raise InvalidRequest(f"'rows' must be true or false; got {raw!r}.", param="rows")
    return raw == "true"


async def _next(sub: Subscription, feed: RowFeed | None) -> bytes | None:
    """The next bytes to send (events, told first of any lost, a job's finished rows
    before its event), or None after a second without any."""
    try:
        event = await asyncio.wait_for(sub.queue.get(), KEY_CHECK_S)
    except TimeoutError:
        return None
    dropped = sub.take_dropped()
    lost = sub.encode(Event("stream.dropped", {"count": dropped})) if dropped else b""
    rows = await _rows_before(feed, event, dropped=dropped > 0) if feed is not None else []
    return lost + b"".join(sub.encode(e) for e in rows) + sub.encode(event)


async def _rows_before(feed: RowFeed, event: Event, *, dropped: bool) -> list[Event]:
    """The row events to send before `event`: its job's, or after a drop every
    followed job's (a dropped job event would have brought some)."""
    if dropped:
        return await asyncio.to_thread(feed.catch_up_all) + await asyncio.to_thread(
            feed.catch_up, event)
    if event.type in JOB_EVENTS:
        return await asyncio.to_thread(feed.catch_up, event)
    return []
