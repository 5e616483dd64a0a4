"""Relay's errors: one tree, whose classes say what went wrong in terms a client can act
on. Every layer raises them and none knows a status: the API turns each class into
the status drawn here in one place (`api/middleware.py`'s `STATUSES`). The store's two
are also its `StoreError`s (store/faults.py draws them).

* RelayError
  x InvalidRequest            400  a client mistake, naming its `param`
    + RequestTimeout          408  the client stopped sending
    + TooLarge                413  a body or file past its limit
  x NotFound                  404  no such thing (or not this workspace's)
  x Conflict                  409  not in this state
  x TooMany                   429  over a limit for now; `retry_after_s` says when to retry
  x Unavailable               503  not now (shutting down, no actor to take it)
    + store.StoreUnavailable  503  the store's storage refused (store/faults.py)
  x InsufficientStorage       507  no room left
    + store.StorageFull       507  the store's disk or database is full (store/faults.py)

Every error carries a message for a person, optionally the `param` it is about and a
`code` a program can match, and the `type` of the error envelope both dialects share
(each class has its default code and its type); how a message names a list of things
is below.
"""

from __future__ import annotations

from collections.abc import Sequence

FEW = 5  # items a message names before it counts the rest
SHOWN = 100  # characters of a client's value a message repeats


class RelayError(Exception):
    """The root: anything Relay refuses with a reason it can state."""

    type = "server_error"  # the envelope's `type`
    code: str | None = None  # the class's code, unless an error names its own

    def __init__(self, message: str, *, param: str | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code


class InvalidRequest(RelayError, ValueError):
    """A client mistake in what it sent. Also a `ValueError`: the parsers raise it."""

    type = "invalid_request_error"


class RequestTimeout(InvalidRequest):
    """The client sent nothing for too long."""


class TooLarge(InvalidRequest):
    """A body or a file past its limit."""


class NotFound(RelayError):
    type = "not_found_error"
    code = "not_found"


class Conflict(RelayError):
    """The thing exists, but its state does not allow the request."""

    type = "invalid_request_error"
    code = "conflict"


class TooMany(RelayError):
    """Over a limit for now: the client should retry after `retry_after_s`."""

    type = "rate_limit_error"

    def __init__(self, message: str, *, code: str, retry_after_s: int | None,
                 param: str | None = None) -> None:
        super().__init__(message, code=code, param=param)
        self.retry_after_s = retry_after_s  # None: no time is known to help


class Unavailable(RelayError):
    """The daemon cannot take the request now; the same request may succeed later."""

    type = "service_unavailable"
    code = "unavailable"


class InsufficientStorage(RelayError):
    """No room left to keep what the request would write."""

    code = "insufficient_storage"


def not_found(what: str, ident: str) -> NotFound:
    return NotFound(f"No {what} found with id '{ident}'.")


def no_batch_access() -> NotFound:
    """The OpenRelay batch API: a workspace without Batch API access is answered 404."""
    return NotFound("Not found: this organization does not have Batch API access.")


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
