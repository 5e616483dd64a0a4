"""The one error type that crosses from domain rules to the HTTP envelope, and how a
message names a list of things."""

from __future__ import annotations

from collections.abc import Sequence

FEW = 5  # items a message names before it counts the rest
SHOWN = 100  # characters of a client's value a message repeats


class InvalidRequest(ValueError):
    """A client mistake: rendered as `{"error": {message, type, param, code}}`."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        status: int = 400,
        code: str | None = None,
        type: str = "invalid_request_error",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.code = code
        self.type = type
        self.headers = headers or {}  # e.g. Retry-After on a 429


def not_found(what: str, ident: str) -> InvalidRequest:
    return InvalidRequest(f"No {what} found with id '{ident}'.", status=404,
                          code="not_found", type="not_found_error")


def no_batch_access() -> InvalidRequest:
    """The OpenRelay batch API: a workspace without Batch API access is answered 404."""
    return InvalidRequest("Not found: this organization does not have Batch API access.",
                          status=404, code="not_found", type="not_found_error")


def conflict(message: str, *, code: str = "conflict") -> InvalidRequest:
    return InvalidRequest(message, status=409, code=code, type="invalid_request_error")


def first_few(items: Sequence[str], *, most: int = FEW) -> str:
    """`items` for a message: the first `most`, quoted, then a count of the rest, so an
    answer naming 20,000 wrong ids stays a line and not 189 KB."""
    if not items:
        return "none"
    first = ", ".join(shown(item) for item in items[:most])
    rest = len(items) - most
    return first if rest <= 0 else f"{first} and {rest:,} more ({len(items):,} in all)"


def clipped(text: str, *, most: int = SHOWN) -> str:
    """`text` for a message, cut to `most` characters (the last an ellipsis)."""
    return text if len(text) <= most else text[:most - 1] + "…"


def shown(value: str, *, most: int = SHOWN) -> str:
    """A client's value for a message, quoted, and cut after `most` characters."""
    return repr(value) if len(value) <= most else f"{value[:most]!r}... ({len(value):,} characters)"
