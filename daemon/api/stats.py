"""`GET /v1/stats`: the caller's workspace at a glance (throughput, upstream errors and
latency per model, models failing now, tokens and cost, queue depth, the budget
against its spend), from the
store's aggregates (store/stats.py) rendered by `domain.stats.render`."""

from __future__ import annotations

import asyncio

from aiohttp import web

from daemon.api import respond
from daemon.api.context import SERVICES
from daemon.api.middleware import WORKSPACE
from daemon.domain.budget import budget_view
from daemon.domain.errors import InvalidRequest, no_batch_access
from daemon.domain.stats import FAILING_WINDOW_S, render
from daemon.store.interface import WorkspaceRecord

DEFAULT_MINUTES = 60
MOST_MINUTES = 24 * 60
BUCKETS = 60  # throughput points in the window


def minutes(raw: str | None) -> int:
    """`?minutes=`: the window, 1 to a day; absent means the last hour."""
    if raw is None:
        return DEFAULT_MINUTES
    if not raw.isdigit() or not 1 <= int(raw) <= MOST_MINUTES:
        raise InvalidRequest(f"'minutes' must be an integer from 1 to {MOST_MINUTES}; "
                             f"got {raw!r}.", param="minutes")
    return int(raw)


async def stats(request: web.Request) -> web.Response:
    workspace: WorkspaceRecord = request[WORKSPACE]
    if not workspace.batch_access:
        raise no_batch_access()
    window_s = minutes(request.query.get("minutes")) * 60
    services = request.app[SERVICES]
    now = services.clock()
    found = await asyncio.to_thread(
        services.repo.workspace_stats, workspace.id, now=now, since=now - window_s,
        bucket_s=max(1, window_s // BUCKETS), recent_since=now - FAILING_WINDOW_S)
    budget = await asyncio.to_thread(services.repo.budget_state, workspace.id, now=now)
    states = services.model_states()
    gates = {m.alias: {"max_concurrency": m.max_concurrency, **states[m.alias]}
             for m in services.config.models if m.alias in states}
    return respond.json(render(found, workspace.name, gates) | {"budget": budget_view(budget)})
