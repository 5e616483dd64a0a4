"""Checking what `relaytui.testing.FakeRelay` serves against relayd's OpenAPI document
(`daemon.api.openapi`, as `tests/api/openapi_contract.py` reads it): each JSON answer
against its operation's documented response for that status, each event's data against
the schema `x-events` names for it. A canned shape relayd cannot produce is a problem
here, so the TUI's tests never pass against a server that does not exist."""

from __future__ import annotations

from typing import Any

from tests.api.openapi_contract import DOC, operation_for, pointer, problems, response_for

_STREAM = DOC["paths"]["/v1/events"]["get"]["responses"]["200"]["content"][
    "text/event-stream"]["x-events"]


def answer_problems(method: str, path: str, status: int, body: Any,
                    event: str | None) -> list[str]:
    """What is wrong with one canned answer (an event's data when `event` is set)."""
    if event is not None:
        if event not in _STREAM:
            return [f"relayd sends no event {event!r}"]
        return problems(body, _STREAM[event]["$ref"].removeprefix("#"))
    try:
        op = operation_for(method, path)
        _, at = response_for(op, status)
    except AssertionError as exc:
        return [str(exc)]
    return problems(body, at + pointer("content", "application/json", "schema"))


class ContractCheck:
    """Every answer one test was served, and what was wrong with each."""

    def __init__(self) -> None:
        self.served: list[tuple[str, str, int, str | None]] = []
        self.found: list[str] = []

    def __call__(self, method: str, path: str, status: int, body: Any,
                 event: str | None) -> None:
        self.served.append((method, path, status, event))
        where = f"{method} {path} {status}" + (f" ({event})" if event else "")
        self.found += [f"{where}: {p}" for p in answer_problems(method, path, status, body,
                                                               event)]
