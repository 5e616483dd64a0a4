"""The OpenAI Batch dialect's input (seed 002): the create body and the JSONL records.

Two kinds of problem, as OpenAI has them:
- file-level (`FileError`): the batch fails as a whole with an `errors` list;
- record-level: that record alone fails (stored already failed, with its code).

`parse_records` is the one JSONL parser for OpenAI records: the validator, the
Relay-dialect upload path and the CLI all use it.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from daemon.domain.errors import InvalidRequest, shown
from daemon.domain.extensions import EXTENSIONS as RESERVED
from daemon.domain.files import lifetime_from_json
from daemon.domain.jobs import RowDraft
from daemon.domain.output_check import (
    CHECKED_ENDPOINTS,
    INVALID_VALIDATION,
    VALIDATION,
    OutputCheckError,
    output_check,
    wants_check,
)
from daemon.domain.record_bodies import Problem, moderation_problem, responses_problem
from daemon.domain.tool_config import TOOL_CONFIG, ToolConfigError, parse_tool_config
from daemon.domain.workflow_config import WORKFLOW, WorkflowConfigError, parse_workflow

CheckUrl = Callable[[str, str], object]  # (url, param) -> raises InvalidRequest if refused

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MODERATIONS = "/v1/moderations"
OPENRELAY_ENDPOINTS = (CHAT, "/v1/completions", "/v1/embeddings")  # the three it names
ENDPOINTS = (*OPENRELAY_ENDPOINTS, RESPONSES, MODERATIONS)  # OpenAI's Batch API takes five
TOOL_ENDPOINTS = (CHAT, RESPONSES)  # where tool-calling records run
_BODY_RULES: dict[str, Callable[[dict[str, Any]], Problem | None]] = {
    RESPONSES: responses_problem, MODERATIONS: moderation_problem}
MAX_RECORDS = 50_000
MAX_METADATA = 16
MAX_ERRORS = 100  # file-level errors reported before giving up
_CREATE_KEYS = frozenset({"completion_window", "endpoint", "input_file_id", "metadata",
                          "model", "output_expires_after", "priority", "requests"})
_RECORD_KEYS = frozenset({"custom_id", "method", "url", "body"})


@dataclass(frozen=True)
class CreateRequest:
    endpoint: str
    input_file_id: str | None
    requests: list[Any] | None
    metadata: dict[str, str] | None
    model_hint: str | None
    tier: str
    output_expires_after_s: int | None = None  # the result files' lifetime


@dataclass(frozen=True)
class FileError:
    code: str
    message: str
    line: int | None = None
    param: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "line": self.line, "message": self.message,
                "param": self.param}


@dataclass
class ParsedRecords:
    rows: list[RowDraft] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)

    @property
    def model(self) -> str | None:
        """The batch's model, settled from the first record that names one."""
        return next((r.model for r in self.rows if r.model), None)


def parse_create(body: Any) -> CreateRequest:
    """Validate an OpenAI-dialect create body; raise `InvalidRequest` naming the field."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    for key in body:
        if key not in _CREATE_KEYS:
            raise InvalidRequest(f"Unknown parameter: '{key}'.", param=key,
                                 code="unknown_parameter")
    _one_of(body, "endpoint", ENDPOINTS, required=True)
    _one_of(body, "completion_window", ("24h",), required=True)
    tier = _one_of(body, "priority", ("standard", "expedited"), required=False) or "standard"
    return CreateRequest(
        endpoint=body["endpoint"],
        input_file_id=_input_source(body),
        requests=body.get("requests"),
        metadata=_metadata(body.get("metadata")),
        model_hint=_optional_string(body, "model"),
        tier=tier,
        output_expires_after_s=lifetime_from_json(body.get("output_expires_after"),
                                                  param="output_expires_after"),
    )


def _one_of(body: dict[str, Any], key: str, allowed: tuple[str, ...], *,
            required: bool) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if value not in allowed:
        shown = "missing" if value is None else repr(value)
        raise InvalidRequest(f"'{key}' must be one of {', '.join(allowed)}; got {shown}.",
                             param=key)
    return str(value)


def _input_source(body: dict[str, Any]) -> str | None:
    file_id, requests = body.get("input_file_id"), body.get("requests")
    if (file_id is None) == (requests is None):
        raise InvalidRequest("Provide exactly one of 'input_file_id' and 'requests'.",
                             param="input_file_id" if file_id is not None else "requests")
    if file_id is not None and (not isinstance(file_id, str) or not file_id):
        raise InvalidRequest("'input_file_id' must be a file id string.",
                             param="input_file_id")
    if requests is not None:
        if not isinstance(requests, list) or not requests:
            raise InvalidRequest("'requests' must be a non-empty array of request records.",
                                 param="requests")
        if len(requests) > MAX_RECORDS:
            raise InvalidRequest(f"'requests' has {len(requests)} records; at most "
                                 f"{MAX_RECORDS} are allowed.", param="requests")
    return file_id


def _metadata(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidRequest("'metadata' must be an object of string pairs.", param="metadata")
    if len(value) > MAX_METADATA:
        raise InvalidRequest(f"'metadata' has {len(value)} pairs; at most {MAX_METADATA}.",
                             param="metadata")
    for k, v in value.items():
        if len(k) > 64:
            raise InvalidRequest(f"metadata key {k[:20]!r}… is over 64 characters.",
                                 param=f"metadata.{k[:64]}")
        if not isinstance(v, str) or len(v) > 512:
            raise InvalidRequest(f"metadata value for {k!r} must be a string of at most 512 "
                                 "characters.", param=f"metadata.{k}")
    return value


def _optional_string(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidRequest(f"'{key}' must be a string.", param=key)
    return value


# -- records -------------------------------------------------------------------


def parse_records(lines: Iterable[tuple[int, Any]], *, endpoint: str,
                  models: Collection[str], check_url: CheckUrl | None = None,
                  workflows: bool = False, max_records: int = MAX_RECORDS) -> ParsedRecords:
    """Records from `(line number, raw)` pairs, where raw is a JSONL line (bytes or
    str) or an already-decoded inline record, all held in memory (a submit's inline
    `requests`, the budget check at submit). `workflows`: whether the workspace may
    run workflow records; `max_records`: the configured row cap. The validator reads a
    file a chunk at a time instead (`RecordStream`)."""
    stream = RecordStream(lines, endpoint=endpoint, models=models, check_url=check_url,
                          workflows=workflows, max_records=max_records)
    rows = [row for chunk in stream.chunks() for row in chunk]
    return ParsedRecords(rows=rows, errors=stream.errors)


class Earlier(Protocol):
    """Where the custom_ids of the chunks already handed out are (their positions, 1 on):
    kept in memory here, or the job's stored rows for the validator."""

    def positions(self, custom_ids: Collection[str]) -> Mapping[str, int]: ...

    def add(self, rows: Sequence[RowDraft], *, start: int) -> None: ...


class EarlierInMemory:
    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def positions(self, custom_ids: Collection[str]) -> Mapping[str, int]:
        return {c: self.seen[c] for c in custom_ids if c in self.seen}

    def add(self, rows: Sequence[RowDraft], *, start: int) -> None:
        for n, row in enumerate(rows, start=start + 1):
            self.seen.setdefault(row.custom_id, n)


CHUNK_ROWS = 500  # records a chunk holds


class RecordStream:
    """OpenAI records parsed a chunk at a time, so a file of a million records never
    sits in memory whole. `chunks()` hands out the rows to store, in input order; each
    chunk must be stored before the next is asked for, so that a custom_id used again
    in a later chunk is found (`earlier`). Once it is spent,
    `errors` holds the file-level problems (the batch fails as a whole when there are
    any: the rows handed out are then to be thrown away), and `count`, `failed`,
    `refused_last` and `model` describe the rows."""

    def __init__(self, lines: Iterable[tuple[int, Any]], *, endpoint: str,
                 models: Collection[str], check_url: CheckUrl | None = None,
                 workflows: bool = False, max_records: int = MAX_RECORDS,
                 earlier: Earlier | None = None, chunk_rows: int = CHUNK_ROWS) -> None:
        self.lines = lines
        self.endpoint, self.models, self.check_url = endpoint, models, check_url
        self.workflows, self.max_records = workflows, max_records
        self.earlier = earlier if earlier is not None else EarlierInMemory()
        self.chunk_rows = chunk_rows
        self.errors: list[FileError] = []
        self.count = 0  # records that are rows (refused ones included)
        self.failed = 0  # of those, refused at validation
        self.refused_last = 0  # the last position of a refused row (0: none)
        self.model: str | None = None  # the batch's model: the first a row names
        self.line_of = array("I")  # each position's line, for a duplicate's message

    def chunks(self) -> Iterator[list[RowDraft]]:
        chunk: list[RowDraft] = []
        for number, raw in self.lines:
            if len(self.errors) >= MAX_ERRORS:
                break
            record = _decode(number, raw, self.errors)
            if record is _SKIP:
                continue
            row = record_row(number, record, endpoint=self.endpoint, models=self.models,
                             check_url=self.check_url, workflows=self.workflows)
            if isinstance(row, FileError):
                self.errors.append(row)
                continue
            chunk.append(row)
            self.line_of.append(number)
            if len(chunk) >= self.chunk_rows:
                yield from self._handed(chunk)
                chunk = []
        if chunk:
            yield from self._handed(chunk)
        # A duplicate is found when its chunk is handed out: in line order, the first
        # MAX_ERRORS of every problem of the lines read.
        self.errors.sort(key=lambda error: error.line or 0)
        del self.errors[MAX_ERRORS:]
        self._check_size()

    def _handed(self, chunk: list[RowDraft]) -> Iterator[list[RowDraft]]:
        """`chunk` less its custom_ids used before (each a file-level error), numbered
        on from the rows handed out already; nothing past the row cap (the records are
        still read: every problem is reported, and the count)."""
        start = self.count
        first = len(self.line_of) - len(chunk)  # the chunk's first index in `line_of`
        before = self.earlier.positions({row.custom_id for row in chunk})
        seen: dict[str, int] = {}
        kept: list[RowDraft] = []
        lines = array("I")
        for i, row in enumerate(chunk):
            line = self.line_of[first + i]
            earlier = before.get(row.custom_id)
            first_line = self.line_of[earlier - 1] if earlier else seen.get(row.custom_id)
            if first_line is not None:
                self.errors.append(FileError(
                    "duplicate_custom_id", f"custom_id {row.custom_id!r} is used again "
                    f"(first on line {first_line}).", line, "custom_id"))
                continue
            seen[row.custom_id] = line
            kept.append(row)
            lines.append(line)
        del self.line_of[first:]
        self.line_of.extend(lines)
        self.count += len(kept)
        for n, row in enumerate(kept, start=start + 1):
            if row.error:
                self.failed += 1
                self.refused_last = n
            if self.model is None and row.model:
                self.model = row.model
        if self.count <= self.max_records:  # past the cap, nothing more is stored (nor
            self.earlier.add(kept, start=start)  # kept in memory: both readers find the
            yield kept  # same duplicates, the validator's and a dry run's)

    def _check_size(self) -> None:
        if self.errors:
            return
        if not self.count:
            self.errors.append(FileError("empty_file", "The input has no records."))
        elif self.count > self.max_records:
            self.errors.append(FileError(
                "too_many_tasks", f"The input has {self.count} records; at most "
                f"{self.max_records} are allowed."))


def jsonl_lines(data: Iterable[bytes]) -> Iterable[tuple[int, bytes]]:
    """Numbered non-blank lines of a JSONL byte stream (a file object works)."""
    for number, line in enumerate(data, start=1):
        if line.strip():
            yield number, line


_SKIP = object()  # a line that was refused (its error is recorded)


def _decode(number: int, raw: Any, errors: list[FileError]) -> Any:
    """A JSONL line (bytes: strict UTF-8, strict JSON) or an inline record as is."""
    if not isinstance(raw, bytes):
        return raw
    try:
        return json.loads(raw.decode("utf-8-sig"), parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        reason = "is not valid UTF-8"
    except (ValueError, RecursionError) as exc:
        reason = f"is not valid JSON ({str(getattr(exc, 'msg', exc))[:120]})"
    errors.append(FileError("invalid_json_line", f"Line {number} {reason}.", number))
    return _SKIP


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def is_text(value: str) -> bool:
    """True unless `value` holds a lone surrogate or a NUL (valid JSON escapes, but not
    text a name or an id can carry into files, logs and terminals)."""
    if "\x00" in value:
        return False
    if value.isascii():  # the common case: no surrogate can hide in it
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def record_row(number: int, record: Any, *, endpoint: str, models: Collection[str],
               default_model: str | None = None, check_url: CheckUrl | None = None,
               workflows: bool | None = None) -> RowDraft | FileError:
    """One OpenAI record: a `FileError` if it is not a record for this endpoint, else a
    row (already failed, with its code, for a record-level problem). `default_model`
    fills a missing `body.model` (Relay-dialect jobs name the model once); `check_url`
    applies the outbound policy to a tool executor's URL (raising `InvalidRequest`)."""
    problem = _shape_problem(record, endpoint)
    if problem is not None:
        code, message, param = problem
        return FileError(code, f"Line {number}: {message}", number, param)
    body = record["body"]
    if default_model and isinstance(body, dict) and "model" not in body:
        body = {**body, "model": default_model}
    model = body.get("model") if isinstance(body, dict) else None
    failure = record_failure(body, endpoint=endpoint, models=models, check_url=check_url,
                             workflows=workflows)
    if failure is not None:
        return RowDraft(custom_id=record["custom_id"],
                        body=body if isinstance(body, dict) else {},
                        model=model if model in models else None, error=failure.message,
                        error_code=failure.code, error_path=failure.path)
    return RowDraft(custom_id=record["custom_id"], body=body, model=model)


def _shape_problem(record: Any, endpoint: str) -> tuple[str, str, str | None] | None:
    """File-level: not a `{custom_id, method: POST, url, body}` record for this endpoint."""
    if not isinstance(record, dict):
        return "invalid_request", "a record must be a JSON object.", None
    for key in _RECORD_KEYS:
        if key not in record:
            return "invalid_request", f"the record has no '{key}'.", key
    extra = sorted(set(record) - _RECORD_KEYS)
    if extra:
        return "invalid_request", f"unknown record field '{extra[0]}'.", extra[0]
    custom_id = record["custom_id"]
    if (not isinstance(custom_id, str) or not custom_id or len(custom_id) > 512
            or not is_text(custom_id)):
        return ("invalid_request", "'custom_id' must be a non-empty string of at most 512 "
                "characters of valid text.", "custom_id")
    if record["method"] != "POST":
        return "invalid_request", "'method' must be POST.", "method"
    if record["url"] != endpoint:
        return ("url_mismatch", f"the record's url {record['url']!r} does not match the "
                f"batch's endpoint {endpoint!r}.", "url")
    return None


@dataclass(frozen=True)
class Refusal:
    """Why one record fails: its code, a message, and where in the body (if known)."""

    code: str
    message: str
    path: str | None = None


def record_failure(body: Any, *, endpoint: str, models: Collection[str],
                   check_url: CheckUrl | None = None,
                   workflows: bool | None = None) -> Refusal | None:
    """Record-level refusals: this record fails; the rest of the batch runs."""
    if not isinstance(body, dict):
        return Refusal("invalid_body", "The record's body must be a JSON object.")
    if body.get("stream") is True:
        return Refusal("stream_unsupported",
                       "Streaming is not supported in batches (\"stream\": true).", "stream")
    if "tool_config" in body:
        return Refusal("tool_config_moved", "A top-level 'tool_config' is the retired "
                       "spelling; move it to body.openrelay.tool_config.", "tool_config")
    refusal = _extensions_refusal(body.get(RESERVED), endpoint=endpoint, check_url=check_url,
                                  workflows=workflows) or check_refusal(body, endpoint)
    if refusal is not None:
        return refusal
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return Refusal("invalid_body", "The record's body has no 'model'.", "model")
    if model not in models:
        return Refusal("model_not_found",
                       f"The model {shown(model)} is not configured on this server.", "model")
    return _body_refusal(body, endpoint)


def _body_refusal(body: dict[str, Any], endpoint: str) -> Refusal | None:
    """The endpoint's own rules for its body (`record_bodies`), where it has some."""
    rule = _BODY_RULES.get(endpoint)
    problem = rule(body) if rule is not None else None
    return None if problem is None else Refusal(*problem)


def _extensions_refusal(extensions: Any, *, endpoint: str, check_url: CheckUrl | None,
                        workflows: bool | None) -> Refusal | None:
    if extensions is None:
        return None
    if not isinstance(extensions, dict):
        return Refusal("invalid_body", "'openrelay' must be an object of request extensions.",
                       RESERVED)
    if WORKFLOW in extensions:
        if endpoint not in OPENRELAY_ENDPOINTS:
            path = f"{RESERVED}.{WORKFLOW}"
            return Refusal("invalid_workflow", f"{path}: workflow records are for "
                           f"{', '.join(OPENRELAY_ENDPOINTS)} records, not {endpoint}.", path)
        return _workflow_refusal(extensions, check_url=check_url, workflows=workflows)
    if TOOL_CONFIG not in extensions:
        return None
    try:
        if endpoint not in TOOL_ENDPOINTS:
            raise ToolConfigError("", f"is only for {' and '.join(TOOL_ENDPOINTS)} records, "
                                  f"not {endpoint}.")
        config = parse_tool_config(extensions[TOOL_CONFIG])
        if check_url is not None:
            _check_target(config.url, check_url)
    except ToolConfigError as exc:
        return Refusal("invalid_tool_config", f"{exc.path}: {exc.message}", exc.path)
    return None


def check_refusal(body: dict[str, Any], endpoint: str) -> Refusal | None:
    """A checked structured output (`output_check`) that cannot be set up: a schema that
    is not JSON Schema (`invalid_schema`), a malformed `openrelay.validation`."""
    extensions = body.get(RESERVED)
    if not isinstance(extensions, dict):
        extensions = {}
    asked = VALIDATION in extensions
    if asked and (TOOL_CONFIG in extensions or WORKFLOW in extensions):
        return Refusal(INVALID_VALIDATION, f"{RESERVED}.{VALIDATION}: checked answers are for "
                       "records without tool_config or workflow.", f"{RESERVED}.{VALIDATION}")
    if asked and endpoint not in CHECKED_ENDPOINTS:
        return Refusal(INVALID_VALIDATION, f"{RESERVED}.{VALIDATION}: is for "
                       f"{', '.join(CHECKED_ENDPOINTS)} records, not {endpoint}.",
                       f"{RESERVED}.{VALIDATION}")
    if not wants_check(body) or endpoint not in CHECKED_ENDPOINTS:
        return None
    try:
        output_check(body)
    except OutputCheckError as exc:
        return Refusal(exc.code, exc.message, exc.path)
    return None


def _workflow_refusal(extensions: dict[str, Any], *, check_url: CheckUrl | None,
                      workflows: bool | None) -> Refusal | None:
    """`workflows` is the workspace's switch; None: this dialect has no workflow records."""
    path = f"{RESERVED}.{WORKFLOW}"
    if workflows is None:
        return Refusal("invalid_workflow", f"{path}: workflow records are for the OpenRelay "
                       "batch API (OpenAI's shape); the Relay Batches API does not run them.",
                       path)
    if not workflows:
        return Refusal("workflow_not_enabled", "Workflow records are not enabled for this "
                       "organization; an operator can enable them.", path)
    try:
        if TOOL_CONFIG in extensions:
            raise WorkflowConfigError("", "a record carries one of tool_config and workflow, "
                                      "not both.")
        config = parse_workflow(extensions[WORKFLOW])
        if check_url is not None:
            try:
                check_url(config.url, f"{path}.url")
            except InvalidRequest as exc:
                raise WorkflowConfigError("url", exc.message) from exc
    except WorkflowConfigError as exc:
        return Refusal("invalid_workflow", f"{exc.path}: {exc.message}", exc.path)
    return None


def _check_target(url: str, check_url: CheckUrl) -> None:
    """The outbound policy (HTTPS, no private address), as a tool_config refusal."""
    try:
        check_url(url, f"{RESERVED}.{TOOL_CONFIG}.url")
    except InvalidRequest as exc:
        raise ToolConfigError("url", exc.message) from exc
