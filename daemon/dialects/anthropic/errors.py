"""Anthropic's error envelope, `{"type": "error", "error": {"type", "message"}}`, for the
answers of this dialect's routes and for the `errored` results of its rows.

On Anthropic's API an error's `type` follows from its status (400 invalid_request_error,
401 authentication_error, 403 permission_error, 404 not_found_error, 413
request_too_large, 429 rate_limit_error, 500 api_error, 504 timeout_error, 529
overloaded_error); Relay's statuses outside that table read as their nearest type.
A failed row reads as the upstream's own Anthropic error when it answered with one,
otherwise as its Relay error code says.
"""

from __future__ import annotations

from typing import Any, Final, get_args

from daemon.dialects.anthropic.parse import (
    EXTENSION_UNSUPPORTED,
    MODEL_NOT_FOUND,
    STREAM_UNSUPPORTED,
)
from daemon.dialects.anthropic.shapes import AnthropicErrorObject, AnthropicErrorResponse, ErrorType
from daemon.domain.errors import RelayError
from daemon.domain.jobs import RowRecord

ERROR_TYPES: frozenset[str] = frozenset(get_args(ErrorType))
# The types an errored result may carry: the SDK's `AnthropicErrorObject` union has no
# `request_too_large` (a status-only error of the HTTP API).
RESULT_ERROR_TYPES: frozenset[str] = ERROR_TYPES - {"request_too_large"}

_BY_STATUS: dict[int, ErrorType] = {
    400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
    403: "permission_error", 404: "not_found_error", 413: "request_too_large",
    429: "rate_limit_error", 500: "api_error", 503: "overloaded_error",
    504: "timeout_error", 529: "overloaded_error",
}

# Relay's row error codes (`RowRecord.error_code`) by the type they read as; a code that
# is itself an Anthropic error type reads as that type (a translation's refusal can
# name `invalid_request_error` directly); any other code is Relay's fault or the
# upstream's: `api_error`, or the type of the upstream's status where it answered.
_BY_CODE: dict[str, ErrorType] = {
    STREAM_UNSUPPORTED: "invalid_request_error",
    EXTENSION_UNSUPPORTED: "invalid_request_error",
    "invalid_body": "invalid_request_error",
    "invalid_request": "invalid_request_error",  # a field of the wrong shape, met translating
    "record_too_large": "invalid_request_error",
    "unsupported_parameter": "invalid_request_error",
    "invalid_tool_config": "invalid_request_error",
    MODEL_NOT_FOUND: "not_found_error",
    "rate_limit_exceeded": "rate_limit_error",
    "rate_limited": "rate_limit_error",
    "overloaded": "overloaded_error",
}
NO_MESSAGE: Final = "The request failed."


def type_for_status(status: int) -> ErrorType:
    """The error type of an answer with HTTP status `status`."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def envelope(error_type: ErrorType, message: str) -> AnthropicErrorResponse:
    return AnthropicErrorResponse(type="error",
                                  error=AnthropicErrorObject(type=error_type, message=message))


def error_response(error: RelayError, *, status: int) -> AnthropicErrorResponse:
    """A Relay error as this dialect answers it, given the status the API gives its class
    (the route's answer uses the same status)."""
    return envelope(type_for_status(status), error.message)


def row_error(row: RowRecord) -> AnthropicErrorResponse:
    """A failed row's error as its `errored` result carries it."""
    upstream = _anthropic_error(row.response)
    if upstream is not None:
        return upstream
    return envelope(_row_type(row), row.error or NO_MESSAGE)


def _row_type(row: RowRecord) -> ErrorType:
    code = row.error_code or ""
    if code in _BY_CODE:
        return _BY_CODE[code]
    if code in RESULT_ERROR_TYPES:
        return code  # type: ignore[return-value]  # checked against the Literal's values
    status = row.status_code
    if status is not None and not 200 <= status < 300:
        found = type_for_status(status)
        return found if found in RESULT_ERROR_TYPES else "invalid_request_error"
    return "api_error"


def _anthropic_error(response: dict[str, Any] | None) -> AnthropicErrorResponse | None:
    """The upstream's answer, if it is Anthropic's error envelope with a type a result
    may carry."""
    if not isinstance(response, dict) or response.get("type") != "error":
        return None
    error = response.get("error")
    if not isinstance(error, dict):
        return None
    kind, message = error.get("type"), error.get("message")
    if not isinstance(kind, str) or kind not in RESULT_ERROR_TYPES \
            or not isinstance(message, str):
        return None
    return envelope(kind, message)  # type: ignore[arg-type]  # checked against the Literal's values
