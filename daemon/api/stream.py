"""`GET /v1/events`: server-sent events for the key's workspace.

A client first gets `stream.hello` (`{"workspace": name}`), then `job.snapshot` for
every job that is not finished (so a late joiner sees current state), then live
`job.created`, `job.progress`, `job.ended`.
Comments keep idle connections alive; `stream.dropped` says events were lost
because the client did not keep up (refetch state when you see it).
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from daemon.api.batches import context
from daemon.api.events import Event, Subscription
from daemon.dialects import event_view
from daemon.domain.jobs import CANCELLING, FINALIZING, QUEUED, RUNNING, SCHEDULED, VALIDATING

log = logging.getLogger("relay.api")

KEEPALIVE_S = 15.0
ACTIVE = (SCHEDULED, VALIDATING, QUEUED, RUNNING, FINALIZING, CANCELLING)


async def events(request: web.Request) -> web.StreamResponse:
    services, workspace = context(request)
    sub = services.hub.subscribe(workspace.id)  # before the snapshot: nothing falls between
    try:
        response = web.StreamResponse(headers={
            "Content-Type": "text/event-stream", "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no"})
        await response.prepare(request)
        await response.write(b"retry: 2000\n\n")
        await response.write(sub.encode(Event("stream.hello", {"workspace": workspace.name})))
        jobs, _ = await asyncio.to_thread(services.repo.list_jobs, workspace.id, limit=100,
                                          statuses=ACTIVE)
        for job in jobs:
            await response.write(sub.encode(Event("job.snapshot", event_view(job))))
        while True:
            await response.write(await _next(sub))
    except ConnectionError as exc:  # the client left: the normal end of a stream
        log.debug("event stream closed by the client: %s", type(exc).__name__)
    finally:
        services.hub.unsubscribe(sub)
    return response


async def _next(sub: Subscription) -> bytes:
    """The next bytes to send: events (told first of any lost), or a keepalive."""
    try:
        event = await asyncio.wait_for(sub.queue.get(), KEEPALIVE_S)
    except TimeoutError:
        return b": keepalive\n\n"
    dropped = sub.take_dropped()
    lost = sub.encode(Event("stream.dropped", {"count": dropped})) if dropped else b""
    return lost + sub.encode(event)
