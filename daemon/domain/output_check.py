"""Checked structured outputs: what schema a record's answer must meet, whether an
answer meets it, and the fixed wording of the message that asks the model again. Pure.

A record asks for a check with one of:

- a chat body's `response_format`: `{type: "json_schema", json_schema: {name, schema,
  strict}}` or `{type: "json_object"}`;
- a Responses body's `text.format`: `{type: "json_schema", name, schema, strict}` or
  `{type: "json_object"}`;
- `openrelay.validation.schema` (any record; the only way for an Anthropic request,
  which has no response format).

`openrelay.validation` also holds `max_repairs` (0–5, default 0) and `format_check`
(default false). The answer's text is parsed as strict JSON and validated with the
`jsonschema` library (Draft 2020-12; `format` keywords are annotations unless
`format_check` is true). `json_object` checks only that the text parses as an object.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from daemon.domain.extensions import EXTENSIONS

if TYPE_CHECKING:  # imported where a schema is first met: most processes never check one
    from jsonschema import Draft202012Validator

VALIDATION = "validation"  # `openrelay.validation`
MAX_REPAIRS = 5
FEW_ERRORS = 3  # the errors a repair message states; the rest are counted
MAX_ERROR_CHARS = 200  # one error's message, cut (a huge enum or value stays a line)
INVALID_SCHEMA = "invalid_schema"
INVALID_VALIDATION = "invalid_validation"
INVALID_OUTPUT = "invalid_output"
_KNOWN = frozenset({"schema", "max_repairs", "format_check"})

Kind = Literal["json_schema", "json_object"]
Outcome = Literal["valid", "repaired", "invalid"]
VALID: Outcome = "valid"
REPAIRED: Outcome = "repaired"
INVALID: Outcome = "invalid"
OUTCOMES: tuple[Outcome, ...] = (VALID, REPAIRED, INVALID)


class OutputCheckError(ValueError):
    """A record whose check cannot be set up: `code` (`invalid_schema`,
    `invalid_validation`) and `path`, the field at fault inside the body."""

    def __init__(self, code: str, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.code = code
        self.path = path
        self.message = f"{path}: {message}"


@dataclass(frozen=True)
class OutputCheck:
    """What a record's final answer must be."""

    kind: Kind
    schema: Mapping[str, Any] | None  # None for json_object
    where: str  # the schema's place in the body, for messages
    max_repairs: int = 0
    format_check: bool = False


@dataclass(frozen=True)
class Problem:
    """One way an answer fails its check: where (a JSON path, `$` the whole answer) and
    the rule that failed (a JSON Schema keyword, or `json` for unparseable text)."""

    path: str
    rule: str
    message: str

    def line(self) -> str:
        message = self.message if len(self.message) <= MAX_ERROR_CHARS \
            else f"{self.message[:MAX_ERROR_CHARS]}..."
        return f"{self.path}: {self.rule}: {message}"


def wants_check(body: Any) -> bool:
    """Whether a record's body asks for its answer to be checked (cheap: no parsing)."""
    if not isinstance(body, dict):
        return False
    if _json_type(body.get("response_format")) is not None:
        return True
    text = body.get("text")
    if isinstance(text, dict) and _json_type(text.get("format")) is not None:
        return True
    extensions = body.get(EXTENSIONS)
    return isinstance(extensions, dict) and VALIDATION in extensions


def output_check(body: Mapping[str, Any]) -> OutputCheck | None:
    """The record's check, None if it asks for none; raises `OutputCheckError` (a schema
    that is not a valid Draft 2020-12 JSON Schema, a malformed `openrelay.validation`)."""
    options = _options(body)
    found = _format_check(body)
    if options.get("schema") is not None:
        if found is not None:
            raise OutputCheckError(INVALID_VALIDATION, f"{EXTENSIONS}.{VALIDATION}.schema",
                                   f"the record already asks for JSON at {found.where}; "
                                   "give the schema once.")
        found = OutputCheck("json_schema", _schema(options["schema"],
                                                   f"{EXTENSIONS}.{VALIDATION}.schema"),
                            f"{EXTENSIONS}.{VALIDATION}.schema")
    if found is None:
        if options:
            raise OutputCheckError(INVALID_VALIDATION, f"{EXTENSIONS}.{VALIDATION}",
                                   "needs a schema: a json_schema or json_object "
                                   "response_format (text.format for a Responses record) or "
                                   f"{EXTENSIONS}.{VALIDATION}.schema.")
        return None
    repairs = options.get("max_repairs", 0)
    if isinstance(repairs, bool) or not isinstance(repairs, int) \
            or not 0 <= repairs <= MAX_REPAIRS:
        raise OutputCheckError(INVALID_VALIDATION, f"{EXTENSIONS}.{VALIDATION}.max_repairs",
                               f"must be an integer from 0 to {MAX_REPAIRS}; got "
                               f"{json.dumps(repairs)[:40]}.")
    format_check = options.get("format_check", False)
    if not isinstance(format_check, bool):
        raise OutputCheckError(INVALID_VALIDATION, f"{EXTENSIONS}.{VALIDATION}.format_check",
                               "must be a boolean.")
    return OutputCheck(found.kind, found.schema, found.where, repairs, format_check)


def _options(body: Mapping[str, Any]) -> dict[str, Any]:
    extensions = body.get(EXTENSIONS)
    options = extensions.get(VALIDATION) if isinstance(extensions, dict) else None
    if options is None:
        return {}
    where = f"{EXTENSIONS}.{VALIDATION}"
    if not isinstance(options, dict):
        raise OutputCheckError(INVALID_VALIDATION, where,
                               "must be an object with schema, max_repairs, format_check.")
    unknown = sorted(set(options) - _KNOWN)
    if unknown:
        raise OutputCheckError(INVALID_VALIDATION, f"{where}.{unknown[0]}",
                               f"unknown field (known: {', '.join(sorted(_KNOWN))}).")
    return options


def _format_check(body: Mapping[str, Any]) -> OutputCheck | None:
    """From `response_format` (chat) or `text.format` (Responses)."""
    response_format = body.get("response_format")
    kind = _json_type(response_format)
    if kind is not None:
        assert isinstance(response_format, dict)
        if kind == "json_object":
            return OutputCheck(kind, None, "response_format")
        spec = response_format.get("json_schema")
        if not isinstance(spec, dict):
            raise OutputCheckError(INVALID_SCHEMA, "response_format.json_schema",
                                   "is required: an object with name and schema.")
        return OutputCheck(kind, _schema(spec.get("schema"),
                                         "response_format.json_schema.schema"),
                           "response_format.json_schema.schema")
    text = body.get("text")
    form = text.get("format") if isinstance(text, dict) else None
    kind = _json_type(form)
    if kind is None:
        return None
    assert isinstance(form, dict)
    if kind == "json_object":
        return OutputCheck(kind, None, "text.format")
    return OutputCheck(kind, _schema(form.get("schema"), "text.format.schema"),
                       "text.format.schema")


def _json_type(value: Any) -> Kind | None:
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if kind in ("json_schema", "json_object") else None


def _schema(schema: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(schema, dict):
        raise OutputCheckError(INVALID_SCHEMA, where, "must be a JSON Schema object.")
    problem = _schema_problem(json.dumps(schema, sort_keys=True))
    if problem is not None:
        raise OutputCheckError(INVALID_SCHEMA, where, problem)
    return schema


@lru_cache(maxsize=256)
def _schema_problem(text: str) -> str | None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(json.loads(text))
    except SchemaError as exc:
        at = exc.json_path if exc.path else "$"
        return f"is not a valid JSON Schema (Draft 2020-12): at {at}: {exc.message}"
    return None


@lru_cache(maxsize=256)
def _validator(text: str, format_check: bool) -> Draft202012Validator:
    """One compiled validator per distinct schema: a batch's rows share theirs."""
    from jsonschema import Draft202012Validator, FormatChecker

    return Draft202012Validator(json.loads(text),
                                format_checker=FormatChecker() if format_check else None)


def problems(check: OutputCheck, text: str | None) -> list[Problem]:
    """Every way `text` (the answer's content) fails `check`, in document order; [] when
    it passes."""
    if text is None:
        return [Problem("$", "content", "the answer holds no text to parse as JSON.")]
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        where = (f" (line {exc.lineno}, column {exc.colno})"
                 if isinstance(exc, json.JSONDecodeError) else "")
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return [Problem("$", "json", f"the answer is not valid JSON: {reason}{where}.")]
    if check.schema is None:
        if isinstance(value, dict):
            return []
        return [Problem("$", "type", f"the answer is {_json_name(value)}, not a JSON object.")]
    validator = _validator(json.dumps(check.schema, sort_keys=True), check.format_check)
    try:
        found = sorted(validator.iter_errors(value),
                       key=lambda e: (list(map(str, e.absolute_path)), str(e.validator)))
    except Exception as exc:  # a $ref that cannot be resolved (remote refs are not fetched)
        return [Problem("$", "schema", f"the schema could not be applied: {exc}")]
    return [Problem(e.json_path, str(e.validator), e.message) for e in found]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _json_name(value: Any) -> str:
    if value is None:
        return "null"
    kinds = ((bool, "a boolean"), (int, "a number"), (float, "a number"), (str, "a string"),
             (list, "an array"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "a value")


def repair_message(found: Sequence[Problem], *, most: int = FEW_ERRORS) -> str:
    """The user message that asks the model again (the fixed, documented wording)."""
    count = len(found)
    lines = [f"- {p.line()}" for p in found[:most]]
    if count > most:
        lines.append(f"- and {count - most} more")
    return ("Your previous answer did not pass validation against the required JSON "
            f"Schema ({count} error{'s' if count != 1 else ''}):\n" + "\n".join(lines)
            + "\nAnswer again with only the corrected JSON, and no other text.")


def error_summary(found: Sequence[Problem], *, most: int = FEW_ERRORS) -> str:
    """A row's error when it stays invalid: the first few problems on one line."""
    count = len(found)
    shown = "; ".join(p.line() for p in found[:most])
    rest = f"; and {count - most} more" if count > most else ""
    return (f"{INVALID_OUTPUT}: the answer did not pass its JSON Schema check "
            f"({count} error{'s' if count != 1 else ''}): {shown}{rest}")


# -- answers and the repair conversation, per endpoint --------------------------------

CHAT, RESPONSES, MESSAGES = "/v1/chat/completions", "/v1/responses", "/v1/messages"
CHECKED_ENDPOINTS = (CHAT, RESPONSES, MESSAGES)  # the records whose answers can be checked


def answer_text(endpoint: str, response: Mapping[str, Any]) -> str | None:
    """The final answer's text in the row's own shape (chat completion, Response,
    Anthropic Message); None when it holds none."""
    if endpoint == RESPONSES:
        texts = [part.get("text") for item in _dicts(response.get("output"))
                 if item.get("type") == "message" for part in _dicts(item.get("content"))
                 if part.get("type") == "output_text"]
        return "".join(t for t in texts if isinstance(t, str)) if texts else None
    if endpoint == MESSAGES:
        texts = [b.get("text") for b in _dicts(response.get("content"))
                 if b.get("type") == "text"]
        return "".join(t for t in texts if isinstance(t, str)) if texts else None
    choices = _dicts(response.get("choices"))
    message = choices[0].get("message") if choices else None
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else None


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def repair_turn(answer: str | None, found: Sequence[Problem]) -> tuple[dict[str, Any], ...]:
    """The two messages a repair adds: the assistant's answer as given, then the errors."""
    return ({"role": "assistant", "content": answer if answer else "(no text)"},
            {"role": "user", "content": repair_message(found)})


def with_turns(endpoint: str, body: Mapping[str, Any],
               added: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The record's request with the repair turns appended to its conversation
    (`messages`; `input` for a Responses record, a string input made a user message)."""
    if not added:
        return dict(body)
    if endpoint == RESPONSES:
        given = body.get("input")
        items = [{"role": "user", "content": given}] if isinstance(given, str) \
            else list(given or [])
        return {**body, "input": [*items, *added]}
    return {**body, "messages": [*(body.get("messages") or []), *added]}
