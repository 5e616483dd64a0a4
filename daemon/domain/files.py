"""Files: uploaded batch inputs and written result files, as the rest of Relay sees them,
and their lifetimes (OpenAI's `expires_after` policy)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from daemon.domain.errors import InvalidRequest

BATCH = "batch"
BATCH_OUTPUT = "batch_output"

# OpenAI's bounds for `expires_after.seconds` and `output_expires_after.seconds`.
MIN_LIFETIME_S = 3600
MAX_LIFETIME_S = 2_592_000
_ANCHOR = "created_at"  # the only anchor OpenAI has: the file's own creation time
_POLICY_KEYS = frozenset({"anchor", "seconds"})
_DIGITS = re.compile(r"[0-9]{1,12}")


@dataclass(frozen=True)
class FileRecord:
    id: str
    workspace_id: int
    filename: str
    purpose: str
    bytes: int
    created_at: float
    path: str
    status: str = "processed"
    expires_at: float | None = None  # None: kept until deleted

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now


def lifetime_from_json(value: Any, *, param: str) -> int | None:
    """A JSON policy `{"anchor": "created_at", "seconds": N}`: N, or None when absent.
    A refusal names the field as `param.key`."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidRequest(f"'{param}' must be an object with 'anchor' and 'seconds'.",
                             param=param)
    return _lifetime(value, name=lambda key: f"{param}.{key}", strict_int=True)


def lifetime_from_form(fields: dict[str, str], *, param: str) -> int | None:
    """The same policy as multipart fields `param[anchor]` and `param[seconds]` (how the
    openai SDK sends it); None when neither was sent."""
    if not fields:
        return None
    return _lifetime(fields, name=lambda key: f"{param}[{key}]", strict_int=False)


def _lifetime(policy: dict[str, Any], *, name: Callable[[str], str], strict_int: bool) -> int:
    for key in policy:
        if key not in _POLICY_KEYS:
            raise InvalidRequest(f"Unknown parameter: '{name(key)}'.", param=name(key),
                                 code="unknown_parameter")
    if policy.get("anchor") != _ANCHOR:
        shown = "missing" if policy.get("anchor") is None else repr(policy["anchor"])
        raise InvalidRequest(f"'{name('anchor')}' must be '{_ANCHOR}'; got {shown}.",
                             param=name("anchor"))
    seconds = _seconds(policy.get("seconds"), strict_int=strict_int)
    if seconds is None or not MIN_LIFETIME_S <= seconds <= MAX_LIFETIME_S:
        raise InvalidRequest(f"'{name('seconds')}' must be an integer from {MIN_LIFETIME_S} "
                             f"to {MAX_LIFETIME_S}; got {policy.get('seconds')!r}.",
                             param=name("seconds"))
    return seconds


def _seconds(value: Any, *, strict_int: bool) -> int | None:
    """An integer, or None: JSON must send a number, a form field sends its digits."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not strict_int and isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        return int(value)
    return None
