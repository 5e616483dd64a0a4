"""How a request to this dialect carries its key: `x-api-key`, beside the
`anthropic-version` header that Anthropic's API requires (the SDK sends both). The key
is a Relay key; the API looks it up as for every dialect."""

from __future__ import annotations

from collections.abc import Mapping

from daemon.domain.errors import InvalidRequest

API_KEY_HEADER = "x-api-key"
VERSION_HEADER = "anthropic-version"
VERSIONS = frozenset({"2023-06-01", "2023-01-01"})  # the versions Anthropic's API accepts
MISSING_KEY = "x-api-key header is required"
INVALID_KEY = "invalid x-api-key"


def api_key(headers: Mapping[str, str]) -> str | None:
    """The key a request carries, or None (answered 401 `authentication_error`, with
    `MISSING_KEY`; a key no workspace has gets `INVALID_KEY`)."""
    key = (headers.get(API_KEY_HEADER) or "").strip()
    return key or None


def check_version(headers: Mapping[str, str]) -> None:
    """Raise `InvalidRequest` (400 `invalid_request_error`) unless `anthropic-version`
    names a version this API speaks."""
    version = (headers.get(VERSION_HEADER) or "").strip()
    if not version:
        raise InvalidRequest(f"{VERSION_HEADER}: header is required", param=VERSION_HEADER)
    if version not in VERSIONS:
        raise InvalidRequest(f"{VERSION_HEADER}: invalid version {version!r}; this API "
                             f"speaks {', '.join(sorted(VERSIONS))}", param=VERSION_HEADER)
