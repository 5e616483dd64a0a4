"""What a route is: its method, path, what handles it, and its operation as the OpenAPI
document shows it. The app mounts the route table and the document is generated from
the same table, so a route cannot be served undocumented or documented unserved.

Routes of a dialect's own batch API name a generic action (`SUBMIT`, `GET`, …) that
`daemon/api/batches.py` performs through the dialect's hooks; Relay's own routes
name their handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from aiohttp import web

Handler = Callable[["web.Request"], Awaitable["web.StreamResponse"]]


class Action(StrEnum):
    """What a dialect's batch route does; the API performs it through the dialect."""

    SUBMIT = "submit"
    LIST = "list"
    GET = "get"
    CANCEL = "cancel"
    RESULTS = "results"
    DELETE = "delete"


@dataclass(frozen=True)
class Param:
    name: str
    where: Literal["path", "query", "header"]
    type: Any  # a type the shape generator reads (Annotated with msgspec.Meta)
    description: str | None = None
    default: Any = None
    required: bool | None = None  # path parameters always are


DRY_RUN = Param("dry_run", "query", bool, "true: answer the batch's estimate (rows by "
                "model, tokens, cost, drain time, budget, the problems a submit would "
                "refuse) and store nothing (a Relay extension).", default=False)


@dataclass(frozen=True)
class Media:
    """A body that is not one JSON value: JSONL, server-sent events, a form, text."""

    type: str
    shape: Any = str  # each line's, each event's or the form's shape
    description: str = "OK"
    events: Mapping[str, Any] | None = None  # text/event-stream: each event's data


@dataclass(frozen=True)
class Operation:
    id: str
    summary: str
    tag: str
    answer: Any  # the 200 answer: a shape (or a union of shapes), or a `Media`
    errors: tuple[int, ...] = ()
    params: tuple[Param, ...] = ()
    body: Any = None  # a shape, or a `Media`
    body_required: bool = True
    public: bool = False  # no API key
    description: str | None = None
    answer_description: str = "OK"
    # a status answered with other shapes than the error envelope: (shapes, description)
    other_answers: Mapping[int, tuple[Any, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: Handler | Action
    op: Operation
