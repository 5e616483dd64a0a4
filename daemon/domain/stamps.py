"""Times as clients read them: the store keeps Unix seconds."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


@overload
def iso(ts: float) -> str: ...
@overload
def iso(ts: None) -> None: ...
@overload
def iso(ts: float | None) -> str | None: ...


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_ms(ts: float) -> str:
    """ISO 8601 to the millisecond: retries of one row can start within a second."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")
