"""The one error type that crosses from domain rules to the HTTP envelope."""

from __future__ import annotations


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
