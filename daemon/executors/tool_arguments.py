"""A tool call's `arguments`: the model's JSON text, read once for every executor.

Arguments that are not a JSON object never reach the executor (HTTP or MCP alike): the
call is answered with a tool error telling the model so, and the model may call again
in its next turn. Missing or blank arguments read as `{}`, as some servers send them
for a function without parameters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


class InvalidArguments(ValueError):
    """Arguments that are not a JSON object; the message says why."""


def arguments_of(call: Mapping[str, Any]) -> dict[str, Any]:
    """The call's arguments as an object; `InvalidArguments` if they are not one."""
    function = call.get("function")
    raw = function.get("arguments") if isinstance(function, Mapping) else None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, dict):  # a server that sent an object, not its JSON text
        return raw
    if not isinstance(raw, str):
        raise InvalidArguments(f"they are a JSON {type(raw).__name__}, not a string")
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InvalidArguments(f"they are not valid JSON ({_reason(exc)})") from None
    if not isinstance(value, dict):
        raise InvalidArguments("they are valid JSON but not an object")
    return value


def refusals(calls: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The tool error to answer for each call (by id) whose arguments are not an object."""
    refused: dict[str, str] = {}
    for call in calls:
        try:
            arguments_of(call)
        except InvalidArguments as exc:
            function = call.get("function")
            name = function.get("name") if isinstance(function, Mapping) else None
            refused[str(call.get("id"))] = (
                f"error: the arguments of this call to {name!r} were not sent to the tool: "
                f"{exc}. Call it again with a JSON object as its arguments.")
    return refused


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at character {exc.pos}"
    return type(exc).__name__
