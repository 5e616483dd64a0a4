"""The dialects of `/v1/batches`, in one registry keyed by a job's `dialect` field.

Adding a dialect is one module implementing `base.Dialect` and one line in
`DIALECTS`. The order is meaningful: `detect` asks each dialect in turn whether it
recognises a submit body, and a list's `status` filter takes the first dialect
that knows the name, so the native Relay dialect comes first for filters and,
being the catch-all for bodies, is asked last by `detect`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from daemon.dialects.base import Dialect, Intake, Redrive, error_envelope
from daemon.dialects.openai import OpenAIDialect
from daemon.dialects.relay import RelayDialect
from daemon.domain.jobs import Job
from daemon.domain.render import event_fields

__all__ = ["DIALECTS", "Dialect", "Intake", "Redrive", "detect", "dialect_of",
           "error_envelope", "event_view", "listed", "statuses_for"]

DIALECTS: dict[str, Dialect] = {d.name: d for d in (RelayDialect(), OpenAIDialect())}

# The Relay Batches API defines no list route, so `GET /v1/batches` is OpenAI's list:
# an OpenAI client must only ever read OpenAI batches from it unless it asks otherwise.
LISTED_BY_DEFAULT = OpenAIDialect.name
EVERY_DIALECT = "all"


def dialect_of(job: Job) -> Dialect:
    return DIALECTS[job.dialect]


def detect(body: Any) -> Dialect:
    """The dialect a submit body is written in (the Relay dialect when none claims it,
    so its parser names what is wrong)."""
    native = DIALECTS["relay"]
    others = (d for d in DIALECTS.values() if d is not native)
    return next((d for d in others if d.recognises(body)), native)


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
    return {**event_fields(job), "relay_status": DIALECTS["relay"].status_name(job.status)}
