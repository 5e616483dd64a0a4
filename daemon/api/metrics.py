"""`GET /metrics`: the Prometheus exposition of the series in daemon/metering.py.

An operator's view, not a workspace's: no API key. Open when `[metrics] token` is
unset (bind relayd to a private interface), `Authorization: Bearer <token>` when set.
The store is read in a worker thread, one scrape at a time (each feeds the attempt
log's counters from where the last one stopped).
"""

from __future__ import annotations

import asyncio
import hmac
from dataclasses import replace

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from daemon.api.context import SERVICES, Services
from daemon.api.middleware import envelope
from daemon.metering import TAIL_MOST
from daemon.store.interface import Store


async def metrics(request: web.Request) -> web.StreamResponse:
    services = request.app[SERVICES]
    token = services.config.metrics.token
    if token is not None and not _bearer_is(request.headers.get("Authorization", ""), token):
        return envelope(401, "Send 'Authorization: Bearer <[metrics] token>'.",
                        code="invalid_metrics_token")
    text = await asyncio.to_thread(scrape, services)
    return web.Response(body=text, headers={"Content-Type": CONTENT_TYPE_LATEST})


def scrape(services: Services) -> bytes:
    meters, repo = services.meters, services.repo
    with meters.lock:
        mark = meters.mark
        if mark is None:  # counting starts at the first scrape
            meters.start_at(mark := repo.last_attempt_id())
        meters.feed(repo.attempts_after(mark, limit=TAIL_MOST), now=services.clock())
        meters.store_writable.set(1 if services.health.ok else 0)
        return meters.exposition(replace(repo.daemon_counts(),
                                         budgets=budgets(services.repo, services.clock())))


def budgets(repo: Store, now: float) -> list[tuple[str, str, int, int]]:
    """(workspace, period, budget, spent), nano-USD, of each workspace with a budget."""
    states = repo.budget_states(now=now)
    names = {ws.id: ws.name for ws in repo.workspaces()} if states else {}
    return [(names.get(s.workspace_id, str(s.workspace_id)), s.budget.period,
             s.budget.nano_usd, s.spent_nano_usd) for s in states]


def _bearer_is(header: str, token: str) -> bool:
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(),
                                                              token.encode())
