"""The aiohttp application: middleware, the route table, and the small routes of its
own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiohttp import web

from daemon.api import batches, files, openapi
from daemon.api.body_budget import BODY_BUDGET, BodyBudget, body_budget
from daemon.api.context import SERVICES, Services
from daemon.api.middleware import OWNERS, auth, errors
from daemon.api.service import DOCUMENT
from daemon.api.table import table
from daemon.domain.routes import Action

MB = 1024 * 1024


def create_app(services: Services) -> web.Application:
    server = services.config.server
    app = web.Application(middlewares=[errors, auth, body_budget],
                          client_max_size=server.max_body_mb * MB)  # a dialect may differ:
    # each request's own limit is `middleware.body_cap`
    app[SERVICES] = services
    app[BODY_BUDGET] = BodyBudget(server.max_parsing_mb * MB)
    document: Callable[[], bytes] = openapi.encoded  # cached: built at the first request
    app[DOCUMENT] = document
    app[OWNERS] = {}
    for entry in table():
        route, handler = entry.route, entry.route.handler
        if isinstance(handler, Action):
            handler = batches.action(handler, entry.dialects)
        mounted_route = (app.router.add_get(route.path, handler) if route.method == "GET"
                         else app.router.add_route(route.method, route.path, handler))
        for method_route in mounted_route.resource or ():  # a GET's HEAD too
            app[OWNERS][method_route] = entry.owner
    files.setup(app)
    app.on_startup.append(_bind_hub)
    app.on_shutdown.append(_close_streams)
    return app


async def _bind_hub(app: web.Application) -> None:
    app[SERVICES].hub.bind(asyncio.get_running_loop())


async def _close_streams(app: web.Application) -> None:
    app[SERVICES].hub.close_all()
