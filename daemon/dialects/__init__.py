"""The dialects, in one registry keyed by a job's `dialect` field.

Adding a dialect is one package implementing `base.Dialect` and one line in
`DIALECTS`. The order is meaningful: `detect` asks each dialect of a shared submit
route in turn whether it recognises the body, and a list's `status` filter takes the
first dialect that knows the name, so the native Relay dialect comes first for
filters and, being the catch-all for bodies, is asked last by `detect`.

`mounted()` is every dialect's routes as the app mounts them: a route that several
dialects declare (the Relay and OpenAI dialects share `/v1/batches`) is mounted once,
for all of them, and documented as taking and answering any of their shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import reduce
from typing import Any, Union

from daemon.dialects.anthropic import AnthropicDialect
from daemon.dialects.base import (
    Capability,
    Deletes,
    Dialect,
    Intake,
    ListsJobs,
    Redrive,
    ResultLines,
)
from daemon.dialects.openai import OpenAIDialect
from daemon.dialects.relay import RelayDialect
from daemon.dialects.relay.render import event_fields, job_status
from daemon.domain.jobs import Job
from daemon.domain.routes import Action, Operation, Route

__all__ = ["DIALECTS", "NATIVE", "Capability", "Deletes", "Dialect", "Intake", "ListsJobs",
           "Mounted", "Redrive", "ResultLines",
           "detect", "dialect_of", "event_view", "listed", "mounted", "statuses_for"]

DIALECTS: dict[str, Dialect] = {d.name: d for d in (RelayDialect(), OpenAIDialect(),
                                                   AnthropicDialect())}

# The Relay Batches API defines no list route, so `GET /v1/batches` is OpenAI's list:
# an OpenAI client must only ever read OpenAI batches from it unless it asks otherwise.
LISTED_BY_DEFAULT = OpenAIDialect.name
EVERY_DIALECT = "all"


def dialect_of(job: Job) -> Dialect:
    return DIALECTS[job.dialect]


NATIVE = DIALECTS["relay"]  # Relay's own routes speak its dialect (and OpenAI's envelope)


def detect(body: Any, among: Sequence[Dialect]) -> Dialect:
    """The dialect of `among` a submit body is written in: the first other than the
    Relay dialect to recognise it, else the Relay dialect (the catch-all, whose parser
    names what is wrong) or, without it, the first."""
    others = [d for d in among if d is not NATIVE]
    fallback = NATIVE if NATIVE in among else among[0]
    return next((d for d in others if d.recognises(body)), fallback)


@dataclass(frozen=True)
class Mounted:
    """A route as the app serves it, and the dialects it serves."""

    route: Route
    dialects: tuple[Dialect, ...]

    @property
    def owner(self) -> Dialect:
        """Whose auth and error envelope the route uses (the dialects sharing a route
        share both)."""
        return self.dialects[0]


def mounted() -> list[Mounted]:
    """Every dialect's routes, each (method, path) once."""
    found: dict[tuple[str, str], Mounted] = {}
    for dialect in DIALECTS.values():
        for route in dialect.routes():
            key = (route.method, route.path)
            known = found.get(key)
            if known is None:
                found[key] = Mounted(route, (dialect,))
                continue
            if known.route.handler != route.handler or type(known.owner.auth) is not type(
                    dialect.auth) or known.owner.error_shape is not dialect.error_shape:
                raise TypeError(f"{dialect.name} and {known.owner.name} both serve "
                                f"{route.method} {route.path}, differently")
            found[key] = Mounted(replace(known.route, op=_merged(known.route.op, route.op)),
                                 (*known.dialects, dialect))
    return [_any_job(entry) for entry in found.values()]


def _any_job(entry: Mounted) -> Mounted:
    """Relay's own read and cancel of a job (`/v1/batches/{id}`, which the Relay
    dialect serves) take any dialect's job, each read in its own shape, as Relay's
    dead-letter routes do; a dialect's own routes take only its jobs."""
    if NATIVE not in entry.dialects or entry.route.handler not in (Action.GET, Action.CANCEL):
        return entry
    return Mounted(replace(entry.route, op=replace(entry.route.op, answer=job_shapes())),
                   tuple(DIALECTS.values()))


def _merged(first: Operation, other: Operation) -> Operation:
    """One operation of two dialects: either's body and answer, every error of both."""
    def either(a: Any, b: Any) -> Any:
        return a if b is None or a == b else b if a is None else Union[a, b]  # noqa: UP007
    return replace(first, answer=either(first.answer, other.answer),
                   body=either(first.body, other.body),
                   errors=tuple(sorted({*first.errors, *other.errors})))


def job_shapes() -> Any:
    """Any dialect's job, as `GET /v1/batches?dialect=all` lists them."""
    return reduce(lambda a, b: Union[a, b], (d.job_shape for d in DIALECTS.values()))  # noqa: UP007


def listed(name: str | None) -> tuple[str, ...] | None:
    """The dialects `GET /v1/batches?dialect=` lists: OpenAI's when not given, one by
    name, or every one for `all`; None for a name no dialect has."""
    if name == EVERY_DIALECT:
        return tuple(DIALECTS)
    name = LISTED_BY_DEFAULT if name is None else name
    return (name,) if name in DIALECTS else None


def statuses_for(name: str, *, first: Sequence[str] = ()) -> tuple[str, ...] | None:
    """A list's `status` filter: a status name of any dialect (those named in `first`,
    then the Relay names, as the native API's), or None when no dialect knows it."""
    asked = [*first, *(n for n in DIALECTS if n not in first)]
    for dialect in (DIALECTS[n] for n in asked):
        matched = dialect.statuses_for(name)
        if matched is not None:
            return matched
    return None


def event_view(job: Job) -> dict[str, Any]:
    """The dialect-neutral summary carried by `/v1/events`, with the status as the
    Relay dialect names it (the TUI's words)."""
    return {**event_fields(job), "relay_status": job_status(job)}
