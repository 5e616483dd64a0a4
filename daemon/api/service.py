"""Relay's small service routes: health, the configured models, and the OpenAPI
document (which app.py puts on the app: it is generated from the route table that
lists this route)."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from daemon.actors.vitals import EX_SOFTWARE
from daemon.api import respond
from daemon.api.context import SERVICES
from daemon.domain.errors import Unavailable

# The OpenAPI document, built at its first request (80 ms of every start, when built
# there) and kept (api/openapi.py: `encoded`).
DOCUMENT: web.AppKey[Callable[[], bytes]] = web.AppKey("openapi")


async def healthz(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    if (death := services.health.death) is not None:  # before "shutting down": it says why
        return respond.json({
            "status": "degraded", "reason": "actor_dead", "actors": list(death.parts),
            "detail": f"{', '.join(death.parts)} died; relayd exits with status "
                      f"{EX_SOFTWARE} for its manager to restart it",
            "since": death.at}, status=503)
    if not services.accepting:
        raise Unavailable("relayd is shutting down.")
    fault, since = services.health.state
    if fault is not None:
        return respond.json({"status": "degraded", "reason": fault.code,
                                  "detail": fault.detail, "since": since}, status=503)
    return respond.json({"status": "ok"})


async def models(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    states = services.model_states()
    data = [
        {"id": m.alias, "object": "model", "created": 0, "owned_by": "relay", "api": m.api,
         "endpoints": list(m.endpoints),
         "fallbacks": list(m.fallbacks), "max_concurrency": m.max_concurrency,
         "adaptive": m.adaptive, "rpm": m.rpm, "tpm": m.tpm, "state": states.get(m.alias)}
        for m in services.config.models
    ]
    return respond.json({"object": "list", "data": data})


async def document(request: web.Request) -> web.Response:
    """`GET /openapi.json`."""
    return web.Response(body=request.app[DOCUMENT](), content_type="application/json")
