"""How a request to this dialect carries its key, and the `anthropic-version` header
Anthropic's API requires. The key is a Relay key; the API looks it up as for every
dialect.

The SDK has sent the key two ways: `x-api-key` (its 0.x releases, and Anthropic's API
reference) and, from its 2.x releases, `Authorization: Bearer`; both are read, the
first first. Its `anthropic-version` moves with its releases (`2023-06-01` for years,
`2026-10-21` in 2.15), so any version in the date form is taken, and a missing or
malformed one is refused as Anthropic's API refuses it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from daemon.domain.errors import InvalidRequest

API_KEY_HEADER = "x-api-key"
BEARER_HEADER = "Authorization"
VERSION_HEADER = "anthropic-version"
_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}")
MISSING_KEY = "x-api-key header is required"
INVALID_KEY = "invalid x-api-key"


def api_key(headers: Mapping[str, str]) -> str | None:
    """The key a request carries (`headers`: case-insensitive, as aiohttp's are), or None:
    answered 401 `authentication_error` with `MISSING_KEY`; a key no workspace has gets
    `INVALID_KEY`."""
    key = (headers.get(API_KEY_HEADER) or "").strip()
    if key:
        return key
    scheme, _, token = (headers.get(BEARER_HEADER) or "").partition(" ")
    return (token.strip() or None) if scheme.lower() == "bearer" else None


def check_version(headers: Mapping[str, str]) -> None:
    """Raise `InvalidRequest` (400 `invalid_request_error`) unless `anthropic-version`
    names a version (`YYYY-MM-DD`)."""
    version = (headers.get(VERSION_HEADER) or "").strip()
    if not version:
        raise InvalidRequest(f"{VERSION_HEADER}: header is required", param=VERSION_HEADER)
    if _VERSION.fullmatch(version) is None:
        raise InvalidRequest(f"{VERSION_HEADER}: {version[:40]!r} is not a version "
                             "(YYYY-MM-DD, e.g. 2023-06-01)", param=VERSION_HEADER)
