"""What a translation between the two upstream protocols refuses, and the field rules
both directions share.

`Untranslatable` is a row's request that the model's protocol cannot say (a parameter
with no counterpart, a content block of a kind the other side lacks, a malformed
field): the row fails with its `code` on that model, which is never called.
`BadAnswer` is an upstream's answer that cannot become the row's shape (the row fails
`invalid_response`). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from daemon.domain.errors import clipped

UNSUPPORTED = "unsupported_parameter"  # a parameter or content with no counterpart
UNSUPPORTED_ENDPOINT = "unsupported_endpoint"  # a row endpoint the protocol does not serve
ENDPOINT_NOT_SERVED = "endpoint_not_served"  # one the model's `endpoints` leave out
MALFORMED = "invalid_request"  # a field of the wrong shape, met while translating
_SHOWN = 48  # characters of a client's value quoted in a refusal


class Untranslatable(ValueError):
    """A request the model's protocol cannot carry; the message names the field."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class BadAnswer(ValueError):
    """An upstream's answer that cannot be turned into the row's shape."""


def no_counterpart(where: str, target: str, *, value: object = None) -> Untranslatable:
    """`top_k has no counterpart in OpenAI's chat completions`."""
    said = f" = {shown(value)}" if value is not None else ""
    return Untranslatable(UNSUPPORTED, f"{where}{said} has no counterpart in {target}")


def malformed(where: str, wanted: str) -> Untranslatable:
    return Untranslatable(MALFORMED, f"{where}: must be {wanted}")


def refuse_unknown(body: Mapping[str, Any], known: Iterable[str], *, where: str,
                   target: str) -> None:
    """Every key set (not null) must be one the translation knows: none is dropped."""
    known = set(known)
    for key, value in body.items():
        if key not in known and value is not None:
            raise no_counterpart(f"{where}{key}", target)


def as_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise malformed(where, "an object")
    return value


def as_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise malformed(where, "an array")
    return value


def as_text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise malformed(where, "a string")
    return value


def shown(value: object) -> str:
    return clipped(repr(value), most=_SHOWN)
