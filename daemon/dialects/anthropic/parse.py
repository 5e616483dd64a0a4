"""The create body of the Message Batches API, checked whole before anything is stored:
`{requests: [{custom_id, params}]}`, where `params` is a Messages API request body.

A refusal raises `InvalidRequest` naming the field (`requests[3].custom_id`). A request
that is well formed but cannot run in a batch (`params.stream: true`, a model this
server does not serve) does not refuse the batch: its row is stored already failed,
and its result reads `errored` with an `invalid_request_error` (`not_found_error` for
the model), as Anthropic's API reports such requests.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from daemon.dialects.anthropic.shapes import MAX_REQUESTS
from daemon.domain.errors import InvalidRequest, shown
from daemon.domain.extensions import EXTENSIONS
from daemon.domain.jobs import QUEUED, JobDraft, RowDraft
from daemon.domain.openai_input import check_refusal
from daemon.domain.output_check import VALIDATION

MESSAGES = "/v1/messages"  # every row's endpoint
MAX_BODY_MB = 256  # this dialect's body limit, beside `[server] max_body_mb`
CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
STREAM_UNSUPPORTED = "stream_unsupported"
EXTENSION_UNSUPPORTED = "extension_unsupported"  # `openrelay` in params
MODEL_NOT_FOUND = "model_not_found"
_TOP_LEVEL = frozenset({"requests"})
_REQUEST_KEYS = frozenset({"custom_id", "params"})


@dataclass(frozen=True)
class Submission:
    """A checked create body: the rows to store, in order, and the batch's model (its
    first request's: what listings show; each row names its own)."""

    rows: list[RowDraft]
    model: str


def parse_create(body: Any, *, models: Collection[str] | None = None,
                 max_requests: int = MAX_REQUESTS) -> Submission:
    """Check a create body. `models`: the aliases this server serves (None: any model;
    a request naming another fails alone); `max_requests`: the configured row cap."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    for key in body:
        if key not in _TOP_LEVEL:
            raise InvalidRequest(f"{key}: Extra inputs are not permitted.", param=key)
    requests = _requests(body.get("requests"), max_requests)
    rows = [_row(request, f"requests[{i}]", models) for i, request in enumerate(requests)]
    _reject_duplicates(rows)
    return Submission(rows=rows, model=str(requests[0]["params"]["model"]))


def job_draft(submission: Submission, *, job_id: str, workspace_id: int, dialect: str,
              now: float, completion_window_s: int) -> JobDraft:
    """The job a checked submission is stored as, with its rows: queued at once (the
    body was checked whole), expiring a completion window after creation."""
    count = len(submission.rows)
    return JobDraft(
        id=job_id, workspace_id=workspace_id, dialect=dialect,
        name=f"message batch of {count:,} request{'s' if count != 1 else ''}",
        model=submission.model, endpoint=MESSAGES, status=QUEUED, priority=0,
        created_at=now, expires_at=now + completion_window_s,
    )


def _requests(requests: Any, most: int) -> list[Any]:
    if requests is None:
        raise InvalidRequest("requests: Field required.", param="requests")
    if not isinstance(requests, list):
        raise InvalidRequest("requests: must be an array of {custom_id, params}.",
                             param="requests")
    if not requests:
        raise InvalidRequest("requests: must hold at least one request.", param="requests")
    if len(requests) > most:
        raise InvalidRequest(f"requests: {len(requests):,} requests; a batch holds at most "
                             f"{most:,}.", param="requests")
    return requests


def _row(request: Any, where: str, models: Collection[str] | None) -> RowDraft:
    if not isinstance(request, dict):
        raise InvalidRequest(f"{where}: must be an object with 'custom_id' and 'params'.",
                             param=where)
    for key in request:
        if key not in _REQUEST_KEYS:
            raise InvalidRequest(f"{where}.{key}: Extra inputs are not permitted.",
                                 param=f"{where}.{key}")
    custom_id = _custom_id(request.get("custom_id"), f"{where}.custom_id")
    params = _params(request.get("params"), f"{where}.params")
    _check_output(params, f"{where}.params")
    return _drafted(custom_id, params, models)


def _check_output(params: dict[str, Any], where: str) -> None:
    """`openrelay.validation` (a checked answer, `output_check`) is the one extension a
    Message Batch takes; a schema that cannot be used refuses the batch, naming it."""
    extensions = params.get(EXTENSIONS)
    if not (isinstance(extensions, dict) and set(extensions) == {VALIDATION}):
        return
    refusal = check_refusal(params, MESSAGES)
    if refusal is not None:
        path = f"{where}.{refusal.path}" if refusal.path else where
        message = refusal.message.removeprefix(f"{refusal.path}: ") if refusal.path \
            else refusal.message
        raise InvalidRequest(f"{path}: {message} ({refusal.code})", param=path,
                             code=refusal.code)


def _custom_id(value: Any, where: str) -> str:
    if not isinstance(value, str) or CUSTOM_ID.fullmatch(value) is None:
        got = "missing" if value is None else shown(value) if isinstance(value, str) \
            else f"a {type(value).__name__}"
        raise InvalidRequest(f"{where}: must be 1-64 characters of letters, digits, '_' "
                             f"and '-'; got {got}.", param=where)
    return value


def _params(params: Any, where: str) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise InvalidRequest(f"{where}: must be a Messages API request object.", param=where)
    model = params.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest(f"{where}.model: must be a model name string.",
                             param=f"{where}.model")
    tokens = params.get("max_tokens")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise InvalidRequest(f"{where}.max_tokens: must be a positive integer.",
                             param=f"{where}.max_tokens")
    messages = params.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest(f"{where}.messages: must be a non-empty array of messages.",
                             param=f"{where}.messages")
    if not isinstance(params.get("stream", False), bool):
        raise InvalidRequest(f"{where}.stream: must be a boolean.", param=f"{where}.stream")
    return params


def _drafted(custom_id: str, params: dict[str, Any],
             models: Collection[str] | None) -> RowDraft:
    """The row to store: failed already when it cannot run in a batch."""
    model = params["model"]
    extensions = params.get(EXTENSIONS)
    if EXTENSIONS in params and not (isinstance(extensions, dict)
                                     and set(extensions) == {VALIDATION}):
        return RowDraft(custom_id=custom_id, body=params, model=model,
                        error=f"{EXTENSIONS}: Relay's record extensions (tool-calling and "
                              "workflow records) are not available in a Message Batch; "
                              "Anthropic tools come back as tool_use blocks to run.",
                        error_code=EXTENSION_UNSUPPORTED, error_path=EXTENSIONS)
    if params.get("stream") is True:
        return RowDraft(custom_id=custom_id, body=params, model=model,
                        error="stream: streaming is not supported in a Message Batch.",
                        error_code=STREAM_UNSUPPORTED, error_path="stream")
    if models is not None and model not in models:
        return RowDraft(custom_id=custom_id, body=params, model=None,
                        error=f"model: {shown(model)} is not served here.",
                        error_code=MODEL_NOT_FOUND, error_path="model")
    return RowDraft(custom_id=custom_id, body=params, model=model)


def _reject_duplicates(rows: list[RowDraft]) -> None:
    first_seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        first = first_seen.setdefault(row.custom_id, i)
        if first != i:
            raise InvalidRequest(f"requests[{i}].custom_id: {row.custom_id!r} is already the "
                                 f"custom_id of requests[{first}]; each must be unique in "
                                 "the batch.", param=f"requests[{i}].custom_id")
