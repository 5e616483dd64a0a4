"""The aiohttp application: middleware, routes, and the small routes of its own."""

from __future__ import annotations

import asyncio

from aiohttp import web

from daemon.actors.vitals import EX_SOFTWARE
from daemon.api import batches, files, metrics, nodes, openapi, stats, stream
from daemon.api.body_budget import BODY_BUDGET, BodyBudget, body_budget
from daemon.api.context import SERVICES, Services
from daemon.api.middleware import auth, errors
from daemon.domain.errors import Unavailable

MB = 1024 * 1024


def create_app(services: Services) -> web.Application:
    server = services.config.server
    app = web.Application(middlewares=[errors, auth, body_budget],
                          client_max_size=server.max_body_mb * MB)
    app[SERVICES] = services
    app[BODY_BUDGET] = BodyBudget(server.max_parsing_mb * MB)
    app.add_routes([
        web.get("/healthz", healthz),
        web.get("/openapi.json", openapi.serve),
        web.get("/v1/models", models),
        web.get("/v1/events", stream.events),
        web.get("/v1/stats", stats.stats),
        web.get("/v1/nodes", nodes.nodes),
        web.get("/metrics", metrics.metrics),
        *batches.routes(),
    ])
    files.setup(app)
    app.on_startup.append(_bind_hub)
    app.on_shutdown.append(_close_streams)
    return app


async def _bind_hub(app: web.Application) -> None:
    app[SERVICES].hub.bind(asyncio.get_running_loop())


async def _close_streams(app: web.Application) -> None:
    app[SERVICES].hub.close_all()


async def healthz(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    if (death := services.health.death) is not None:  # before "shutting down": it says why
        return web.json_response({
            "status": "degraded", "reason": "actor_dead", "actors": list(death.parts),
            "detail": f"{', '.join(death.parts)} died; relayd exits with status "
                      f"{EX_SOFTWARE} for its manager to restart it",
            "since": death.at}, status=503)
    if not services.accepting:
        raise Unavailable("relayd is shutting down.")
    fault, since = services.health.state
    if fault is not None:
        return web.json_response({"status": "degraded", "reason": fault.code,
                                  "detail": fault.detail, "since": since}, status=503)
    return web.json_response({"status": "ok"})


async def models(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    states = services.model_states()
    data = [
        {"id": m.alias, "object": "model", "created": 0, "owned_by": "relay",
         "fallbacks": list(m.fallbacks), "max_concurrency": m.max_concurrency,
         "adaptive": m.adaptive, "rpm": m.rpm, "tpm": m.tpm, "state": states.get(m.alias)}
        for m in services.config.models
    ]
    return web.json_response({"object": "list", "data": data})
