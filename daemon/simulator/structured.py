"""JSON answers: what the simulator answers when a request asks for JSON
(`response_format` on chat, `text.format` on Responses), and the `[sim:json_*]`
directives that make it answer wrongly, so Relay's checked outputs and their repairs
can be shown. Pure.

The directives are read from the conversation's first user message (a repair's
follow-up is the last one): `json_bad` answers text that is not JSON, `json_wrong`
JSON that violates the schema (an array where an object is asked for, else an object),
`json_valid_on=K` the bad answer (`json_bad`'s if given, else `json_wrong`'s) on every
call before the K-th of the conversation (its assistant turns so far, plus one), then a
valid one; `json_sleep=MS` makes every call after the first wait (a slow repair, for
kill tests). A valid answer is an instance of the schema (`tools.arguments_for`; a
property whose `enum` holds the canned reply, a sentiment label, takes that).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from daemon.simulator.faults import parse_directive
from daemon.simulator.tools import arguments_for


@dataclass(frozen=True)
class JsonAsk:
    """A request that asks for JSON: its schema (None: any object), which call of its
    conversation it is, and what its first user message's directives ask."""

    schema: Mapping[str, Any] | None
    call: int = 1
    bad: bool = False
    wrong: bool = False
    valid_on: int = 0
    sleep_ms: float = 0.0  # json_sleep: the wait of every call after the first

    @property
    def delay_s(self) -> float:
        return self.sleep_ms / 1000 if self.call > 1 else 0.0

    @property
    def marked(self) -> bool:
        return self.bad or self.wrong or self.valid_on > 0

    def answer(self, reply: str) -> str:
        failing = self.bad or self.wrong or self.valid_on > 1
        if failing and (not self.valid_on or self.call < self.valid_on):
            if self.bad:
                return f"Sure! Here is the JSON you asked for: {{{reply!r}"
            return json.dumps(_violating(self.schema))
        return json.dumps(_instance(self.schema, reply), ensure_ascii=False)


def json_ask(form: Any, messages: Sequence[Mapping[str, Any]], first_user: str,
             ) -> JsonAsk | None:
    """From a chat `response_format` (or a Responses `text.format`, its schema inline)."""
    kind = form.get("type") if isinstance(form, dict) else None
    if kind not in ("json_schema", "json_object"):
        return None
    assert isinstance(form, dict)
    spec = form.get("json_schema") if "json_schema" in form else form
    schema = spec.get("schema") if kind == "json_schema" and isinstance(spec, dict) else None
    try:
        directive = parse_directive(first_user)
    except ValueError:
        directive = None  # refused where the prompt's directives are read
    calls = 1 + sum(1 for m in messages if m.get("role") == "assistant")
    if directive is None:
        return JsonAsk(schema if isinstance(schema, dict) else None, calls)
    return JsonAsk(schema if isinstance(schema, dict) else None, calls,
                   directive.json_bad, directive.json_wrong, directive.json_valid_on,
                   directive.json_sleep_ms)


def _instance(schema: Mapping[str, Any] | None, reply: str) -> Any:
    if schema is None or schema.get("type") not in (None, "object"):
        return {"answer": reply}
    value = arguments_for(schema, reply, 1)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            enum = sub.get("enum") if isinstance(sub, dict) else None
            if isinstance(enum, list) and reply in enum:
                value[name] = reply
    return value


def _violating(schema: Mapping[str, Any] | None) -> Any:
    if schema is None or schema.get("type") in (None, "object"):
        return ["not", "an", "object"]
    return {"unexpected": True}
