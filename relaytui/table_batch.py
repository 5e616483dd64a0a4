"""A batch made from a table, and its results joined back on: pure functions that
`relay submit --template`, `relay results --join` and the TUI's upload form share.

- A **prompt template** (`parse_template`, `render_template`): `{column}` names a
  column, `{{` and `}}` are literal braces, nothing else is evaluated.
- **Records** (`table_records`): one OpenAI chat record per row, `custom_id` the
  `--id-column`'s value or `row-N` (N the row's number, so stable across re-runs),
  with the `--system` text and body parameters (`parse_setting`, `json_schema_format`).
  A missing column, an empty value or a malformed template is refused before anything
  is sent, naming the column and the line.
- **The join** (`join_results`, `failed_rows`): the input's columns in order, then
  `content`, `error`, `finish_reason` and the tokens used, read from the batch's output
  and error file lines (`outcome_of_line`); with `expand`, a column per top-level field
  of a JSON answer. A row without a result is there with its error, never missing."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from relaytui.formats import InputFileError
from relaytui.tables import Row, Table, cell_text

CHAT = "/v1/chat/completions"
RESULT_COLUMNS = ("content", "error", "finish_reason", "prompt_tokens",
                  "completion_tokens", "total_tokens")
RESULT_TYPES = ("string", "string", "string", "int64", "int64", "int64")  # in Parquet
CLASH_PREFIX = "result_"  # an added column whose name the input already has
NOT_RUN = "no result: the batch ended before this row ran"
RESERVED = frozenset({"model", "messages"})  # --model and the template set these


# -- the template ----------------------------------------------------------------------


class TemplateError(ValueError):
    """A malformed template; the message says where."""


@dataclass(frozen=True)
class Template:
    """The template's pieces in order: literal text, or (for `is_column`) a column."""

    text: str
    pieces: tuple[tuple[str, bool], ...]

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(text for text, is_column in self.pieces if is_column))


_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


def parse_template(text: str) -> Template:
    if not text.strip():
        raise TemplateError("the template is empty")
    pieces: list[tuple[str, bool]] = []
    literal, at = [], 0
    for match in _TOKEN.finditer(text):
        literal.append(text[at:match.start()])
        at = match.end()
        token = match.group(0)
        if token in ("{{", "}}"):
            literal.append(token[0])
        elif match.group(1) is None:
            raise TemplateError(_stray(token, match.start()))
        elif not match.group(1).strip():
            raise TemplateError(f"malformed template: '{{}}' at character "
                                f"{match.start() + 1} names no column")
        else:
            pieces.append(("".join(literal), False))
            pieces.append((match.group(1), True))
            literal = []
    pieces.append(("".join([*literal, text[at:]]), False))
    return Template(text, tuple(p for p in pieces if p[1] or p[0]))


def _stray(token: str, index: int) -> str:
    what = "an unclosed '{'" if token == "{" else "a lone '}'"
    return (f"malformed template: {what} at character {index + 1} (write {token}{token} "
            f"for a literal brace)")


class EmptyValue(ValueError):
    def __init__(self, column: str) -> None:
        super().__init__(f"the {column!r} value is empty (the template uses it)")
        self.column = column


def render_template(template: Template, row: Mapping[str, Any]) -> str:
    """The prompt for one row; an empty (or absent, or null) value raises EmptyValue."""
    out = []
    for text, is_column in template.pieces:
        value = cell_text(row.get(text)) if is_column else text
        if is_column and not value.strip():
            raise EmptyValue(text)
        out.append(value)
    return "".join(out)


def check_columns(template: Template, table: Table) -> None:
    """Every column the template names is one of the table's."""
    for column in template.columns:
        if column not in table.columns:
            shown = ", ".join(repr(c) for c in table.columns)
            raise InputFileError(table.path, table.header_line,
                                 f"the template names a column {column!r}, which the "
                                 f"table does not have (its columns: {shown})")


# -- records ---------------------------------------------------------------------------


def row_ids(table: Table, id_column: str | None) -> list[str]:
    """Each row's custom_id: its `id_column` value (non-empty, unique) or `row-N`."""
    if id_column is None:
        return [f"row-{n}" for n in range(1, len(table.rows) + 1)]
    if id_column not in table.columns:
        raise InputFileError(table.path, table.header_line, f"no column {id_column!r} for "
                             f"--id-column; the columns: {', '.join(table.columns)}")
    ids: list[str] = []
    seen: dict[str, int] = {}
    for i, row in enumerate(table.rows):
        custom_id = cell_text(row.get(id_column)).strip()
        if not custom_id:
            raise table.refuse(i, f"the {id_column!r} value (the custom_id) is empty")
        if custom_id in seen:
            first = table.where(seen[custom_id])
            named = f"line {first[0]}" if first[0] is not None else f"row {seen[custom_id] + 1}"
            raise table.refuse(i, f"custom_id {custom_id!r} again (first on {named})")
        seen[custom_id] = i
        ids.append(custom_id)
    return ids


@dataclass(frozen=True)
class Request:
    """What every record of a table's batch asks besides its prompt."""

    model: str
    system: str | None = None
    params: Mapping[str, Any] | None = None  # body parameters (--set, --response-format)


def table_records(table: Table, template: Template, *, request: Request,
                  id_column: str | None = None) -> list[dict[str, Any]]:
    """One `/v1/chat/completions` record per row, checked whole before any is sent."""
    check_columns(template, table)
    ids = row_ids(table, id_column)
    system = [{"role": "system", "content": request.system}] if request.system else []
    params = dict(request.params or {})
    records = []
    for i, row in enumerate(table.rows):
        try:
            prompt = render_template(template, row)
        except EmptyValue as exc:
            raise table.refuse(i, str(exc)) from None
        body = {"model": request.model,
                "messages": [*system, {"role": "user", "content": prompt}], **params}
        records.append({"custom_id": ids[i], "method": "POST", "url": CHAT, "body": body})
    return records


def parse_setting(text: str) -> tuple[str, Any]:
    """`temperature=0` is ("temperature", 0): the value as a JSON scalar where it parses
    as one, else the text itself (`stop=END` is "END")."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"{text!r}: expected KEY=VALUE, e.g. temperature=0")
    if key in RESERVED:
        raise ValueError(f"{key!r} is not a body parameter to set: "
                         + ("use --model" if key == "model" else "the template writes it"))
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return key, raw
    return key, value if value is None or isinstance(value, str | int | float) else raw


def json_schema_format(schema: Any, *, name: str) -> dict[str, Any]:
    """`response_format` asking for JSON with `schema`: a JSON Schema, or an OpenAI
    `json_schema` object already (`{name, schema, ...}`). Only the field is set; the
    answers are not checked against it."""
    if not isinstance(schema, dict):
        raise ValueError("a JSON schema is a JSON object")
    if isinstance(schema.get("schema"), dict) and isinstance(schema.get("name"), str):
        return {"type": "json_schema", "json_schema": schema}
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "answer"
    return {"type": "json_schema", "json_schema": {"name": clean, "schema": schema}}


# -- results ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One row's result as the joined table shows it."""

    content: str | None = None
    error: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None

    def cells(self) -> tuple[Any, ...]:
        return (self.content, self.error, self.finish_reason, self.prompt_tokens,
                self.completion_tokens, self.total_tokens)


MISSING = Outcome(error=NOT_RUN)


def outcome_of_line(line: Mapping[str, Any]) -> tuple[str, Outcome]:
    """A line of an OpenAI batch's output or error file: its custom_id and outcome."""
    response = _object(line.get("response"))
    body = _object(response.get("body"))
    usage = _object(body.get("usage"))
    tokens = {k: usage.get(k) if isinstance(usage.get(k), int) else None
              for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    error = _line_error(line, response, body)
    if error is not None:
        return str(line.get("custom_id")), Outcome(error=error, **tokens)
    choice = (body.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    content = message.get("content")
    if content is None and message.get("tool_calls"):
        content = json.dumps(message["tool_calls"], ensure_ascii=False)
    return str(line.get("custom_id")), Outcome(
        content=cell_text(content) if content is not None else None,
        finish_reason=choice.get("finish_reason"), **tokens)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _line_error(line: Mapping[str, Any], response: Mapping[str, Any],
                body: Mapping[str, Any]) -> str | None:
    error = line.get("error")
    status = response.get("status_code")
    if not error and isinstance(status, int) and status >= 400:
        error = body.get("error") or {"message": f"HTTP {status}"}
        error = error if isinstance(error, dict) else {"message": str(error)}
        error = {**error, "code": error.get("code") or status}
    if not error:
        return None
    if not isinstance(error, dict):
        return str(error)
    code, message = error.get("code"), error.get("message") or "failed"
    return f"{code}: {message}" if code else str(message)


def outcome_of_result(item: Mapping[str, Any]) -> tuple[str, Outcome]:
    """An item of a Relay job's results (`{custom_id, content}` / `{custom_id,
    error}`), which name no finish_reason or tokens."""
    if item.get("content") is None:
        return str(item.get("custom_id")), Outcome(error=str(item.get("error") or "failed"))
    return str(item.get("custom_id")), Outcome(content=cell_text(item["content"]))


@dataclass(frozen=True)
class Joined:
    """A table to write: its columns, rows, and the Arrow types known (`write_table`)."""

    columns: list[str]
    rows: list[Row]
    types: Mapping[str, Any] = field(default_factory=dict)


def join_results(table: Table, ids: Sequence[str], *, outcomes: Mapping[str, Outcome],
                 expand: bool = False) -> Joined:
    """The input's rows in order with their outcomes; a row with none has `NOT_RUN`.
    Results naming a custom_id no row has mean the table is not the batch's input."""
    _same_rows(ids, outcomes)
    added = [_free(name, table.columns) for name in RESULT_COLUMNS]
    found = [outcomes.get(custom_id, MISSING) for custom_id in ids]
    fields = _fields(found) if expand else []
    expanded = [_free(f, [*table.columns, *added]) for f in fields]
    rows = []
    for row, outcome in zip(table.rows, found, strict=True):
        joined = {c: row.get(c) for c in table.columns}
        joined.update(zip(added, outcome.cells(), strict=True))
        answer = _answer(outcome) if expand else {}
        joined.update((name, answer.get(f)) for name, f in zip(expanded, fields, strict=True))
        rows.append(joined)
    types = {**table.types, **dict(zip(added, RESULT_TYPES, strict=True))}
    return Joined([*table.columns, *added, *expanded], rows, types)


def failed_rows(table: Table, ids: Sequence[str], *,
                outcomes: Mapping[str, Outcome]) -> Joined:
    """The input rows whose request failed or never ran, with the input's columns only:
    a table to submit again."""
    _same_rows(ids, outcomes)
    rows = [{c: row.get(c) for c in table.columns}
            for row, custom_id in zip(table.rows, ids, strict=True)
            if outcomes.get(custom_id, MISSING).failed]
    return Joined(list(table.columns), rows, table.types)


def _same_rows(ids: Sequence[str], outcomes: Mapping[str, Outcome]) -> None:
    known = set(ids)
    strangers = [custom_id for custom_id in outcomes if custom_id not in known]
    if strangers:
        raise ValueError(f"the batch has a result for custom_id {strangers[0]!r}, which no "
                         f"row of the table has ({len(strangers)} such): is it the table the "
                         "batch was made from (and the same --id-column)?")


def _free(name: str, taken: Sequence[str]) -> str:
    """`name`, prefixed until no input column has it (`result_content`, then
    `result_result_content`, …)."""
    while name in taken:
        name = CLASH_PREFIX + name
    return name


def _answer(outcome: Outcome) -> dict[str, Any]:
    try:
        value = json.loads(outcome.content or "")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _fields(outcomes: Sequence[Outcome]) -> list[str]:
    return list(dict.fromkeys(key for o in outcomes for key in _answer(o)))
