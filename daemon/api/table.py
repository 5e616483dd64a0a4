"""The route table: every route the app serves, each with its operation. The app
mounts it (api/app.py) and the OpenAPI document is generated from it (api/openapi.py)."""

from __future__ import annotations

from typing import Annotated, Union

from msgspec import Meta

from daemon.api import batches, files, metrics, nodes, service, stats, stream
from daemon.api.shapes import EVENTS, ActorDead, Degraded, Health, ModelList, NodeList, Stats
from daemon.dialects import NATIVE, Mounted, mounted
from daemon.dialects.openai.shapes import Error
from daemon.domain.routes import Media, Operation, Param, Route


def table() -> list[Mounted]:
    """Every route the app serves: Relay's own (native: Bearer keys, OpenAI's error
    envelope) and each dialect's. The OpenAPI document is generated from it."""
    native = [Mounted(r, (NATIVE,)) for r in (*service_routes(), *files.routes(),
                                              *batches.routes())]
    return native + mounted()


def service_routes() -> list[Route]:
    shutting = ("Shutting down (the error envelope), or degraded: the store cannot write "
                "(probed every 5 s; ok again with the first good write), or a core actor "
                "died (the process is about to exit with status 70).")
    return [
        Route("GET", "/healthz", service.healthz, Operation(
            "health", "Liveness and whether the store takes writes", "Service",
            answer=Health, errors=(503,), public=True,
            other_answers={503: (Union[Error, Degraded, ActorDead], shutting)})),  # noqa: UP007
        Route("GET", "/openapi.json", service.document, Operation(
            "openapi", "This document", "Service", answer=dict, public=True)),
        Route("GET", "/v1/models", service.models, Operation(
            "listModels", "The configured model aliases", "Service", answer=ModelList)),
        Route("GET", "/v1/events", stream.events, Operation(
            "streamEvents", "The workspace's live job events", "Service", errors=(404,),
            answer=Media("text/event-stream", description="Server-sent events; each "
                         "`data:` is JSON (see x-events).", events=EVENTS),
            params=(Param("rows", "query", bool, "true: also a row event for each row that "
                          "finishes (no payload), and lagged when the stream falls behind.",
                          default=False),),
            description="stream.hello, then job.snapshot for each job that has not ended, "
                        "then job.created, job.progress, job.paused, job.resumed and "
                        "job.ended as they happen.")),
        Route("GET", "/v1/stats", stats.stats, Operation(
            "getStats", "The workspace at a glance", "Service", answer=Stats, errors=(400, 404),
            params=(Param("minutes", "query", Annotated[int, Meta(
                ge=1, le=stats.MOST_MINUTES)], "The window.", default=stats.DEFAULT_MINUTES),))),
        Route("GET", "/v1/nodes", nodes.nodes, Operation(
            "listNodes", "The relayd nodes sharing the database", "Service", answer=NodeList,
            errors=(404,), description="One node on SQLite; on PostgreSQL every node that has "
            "not been forgotten, with its health and the caller's jobs it runs.")),
        Route("GET", "/metrics", metrics.metrics, Operation(
            "metrics", "Prometheus metrics", "Service", errors=(401,), public=True,
            answer=Media("text/plain", description="The Prometheus text exposition format."),
            description="An operator's view of the whole daemon, with no API key: open when "
                        "[metrics] token is unset, `Authorization: Bearer <token>` when set.")),
    ]


