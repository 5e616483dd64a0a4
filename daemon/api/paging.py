"""List routes' shared rules: the `limit` query parameter and OpenAI's list envelope."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from daemon.domain.errors import InvalidRequest


def limit(raw: str | None, *, default: int, most: int) -> int:
    """`?limit=`: an integer from 1 to `most`; absent means `default`."""
    if raw is None:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= most:
        raise InvalidRequest(f"'limit' must be an integer from 1 to {most}; got {raw!r}.",
                             param="limit")
    return int(raw)


def page(data: Sequence[Mapping[str, Any]], *, has_more: bool) -> dict[str, Any]:
    """`{"object": "list", data, first_id, last_id, has_more}`."""
    return {"object": "list", "data": list(data),
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
            "has_more": has_more}
