"""The Message Batches API's ids: `msgbatch_` and 24 base62 characters, as Anthropic's
(`msgbatch_013Zva2CMHLNnXjNJJKqJ2EF`)."""

from __future__ import annotations

import re
import secrets
import string

PREFIX = "msgbatch_"
LENGTH = 24
_ALPHABET = string.digits + string.ascii_letters
_FORM = re.compile(rf"{PREFIX}[0-9A-Za-z]{{{LENGTH}}}")


def batch_id() -> str:
    return PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(LENGTH))


def is_batch_id(value: str) -> bool:
    """True if `value` has the form of this dialect's batch id (a route can answer 404
    for anything else without a lookup)."""
    return _FORM.fullmatch(value) is not None
