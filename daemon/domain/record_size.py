"""How big a multi-call record has grown, against `[limits] max_record_mb`.

A tool-calling record's transcript (its input messages, then every model turn and
tool message of its rounds) and a workflow record's state (its input, every step's
requests and every result) are stored and, for a transcript, sent with each model
call. Their size is counted as JSON, as the store writes it, when a piece is added,
before it is stored or sent: a record that would pass the cap ends
`record_too_large` instead, so what a row holds in memory and in the store stays
below the cap.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

RECORD_TOO_LARGE = "record_too_large"
MB = 1024 * 1024


class RecordTooLarge(Exception):
    """Adding `what` would take the record to `size` bytes, past `limit`."""

    def __init__(self, size: int, limit: int, what: str) -> None:
        self.size, self.limit, self.what = size, limit, what
        super().__init__(f"{what} would take the record to {size / MB:.1f} MB, past "
                         f"[limits] max_record_mb ({limit / MB:g} MB)")


def json_size(value: Any) -> int:
    """Bytes of `value` as JSON (ASCII, as the store writes it)."""
    return len(json.dumps(value))


@dataclass
class RecordSize:
    limit: int  # bytes
    used: int = 0

    def grow(self, what: str, *values: Any) -> None:
        """Count `values` into the record; RecordTooLarge (counting nothing) if that
        would pass the limit."""
        size = self.used + sum(json_size(v) for v in values)
        if size > self.limit:
            raise RecordTooLarge(size, self.limit, what)
        self.used = size
