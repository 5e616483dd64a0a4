"""OpenRelay's tool-calling extension, `body.openrelay.tool_config`: its fields, their
rules and clamps, and the redaction of its secret wherever a row body is shown.

Pure: `parse_tool_config` checks the shape; whether the URL is an allowed target
(HTTPS, not a private address) is the outbound policy's, injected by the caller.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

EXTENSIONS = "openrelay"  # the one body key OpenRelay's request extensions live under
TOOL_CONFIG = "tool_config"
TYPES = ("http", "mcp")
DEFAULT_ROUNDS, MOST_ROUNDS = 8, 16
DEFAULT_TIMEOUT_MS, MOST_TIMEOUT_MS = 30_000, 120_000
_KEYS = frozenset({"url", "type", "authorization", "context", "max_rounds", "timeout_ms"})
REDACTED = "***"


@dataclass(frozen=True)
class ToolConfig:
    url: str
    type: str = "http"
    authorization: str | None = None  # sent verbatim as Authorization; never shown
    context: Any = None  # opaque, forwarded on every executor call
    max_rounds: int = DEFAULT_ROUNDS
    timeout_ms: int = DEFAULT_TIMEOUT_MS

    def __repr__(self) -> str:  # never put the secret in a log line
        shown = REDACTED if self.authorization is not None else None
        return (f"ToolConfig(url={self.url!r}, type={self.type!r}, authorization={shown!r}, "
                f"max_rounds={self.max_rounds}, timeout_ms={self.timeout_ms})")


class ToolConfigError(ValueError):
    """A malformed `tool_config`: `field` is the key at fault ("" for the whole value)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message

    @property
    def path(self) -> str:
        """Where the fault is inside the record's body."""
        return ".".join(p for p in (EXTENSIONS, TOOL_CONFIG, self.field) if p)


def raw_tool_config(body: Any) -> Any:
    """The record's `openrelay.tool_config` as sent, or None when it has none."""
    extensions = body.get(EXTENSIONS) if isinstance(body, dict) else None
    return extensions.get(TOOL_CONFIG) if isinstance(extensions, dict) else None


def parse_tool_config(value: Any) -> ToolConfig:
    """Check every field and apply the clamps; raise `ToolConfigError` naming the field."""
    if not isinstance(value, dict):
        raise ToolConfigError("", "must be an object with at least 'url'.")
    unknown = sorted(set(value) - _KEYS)
    if unknown:
        raise ToolConfigError(unknown[0], f"unknown field (known: {', '.join(sorted(_KEYS))}).")
    return ToolConfig(
        url=_url(value.get("url")),
        type=_type(value.get("type")),
        authorization=_authorization(value.get("authorization")),
        context=_context(value.get("context")),
        max_rounds=_clamped(value, "max_rounds", DEFAULT_ROUNDS, MOST_ROUNDS),
        timeout_ms=_clamped(value, "timeout_ms", DEFAULT_TIMEOUT_MS, MOST_TIMEOUT_MS),
    )


def _url(url: Any) -> str:
    if not isinstance(url, str) or not url:
        raise ToolConfigError("url", "is required: the tool executor's https:// URL.")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ToolConfigError("url", f"must be an absolute https:// URL; got {url!r}.")
    return url


def _type(kind: Any) -> str:
    if kind is None:
        return "http"
    if kind not in TYPES:
        raise ToolConfigError("type", f"must be one of {', '.join(TYPES)}; got {kind!r}.")
    return str(kind)


def _authorization(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ToolConfigError("authorization", "must be a string (the whole header value).")
    return value


def _context(value: Any) -> Any:
    if value is not None and not isinstance(value, dict):
        raise ToolConfigError("context", "must be a JSON object.")
    return value


def _clamped(value: dict[str, Any], key: str, default: int, most: int) -> int:
    number = value.get(key)
    if number is None:
        return default
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise ToolConfigError(key, f"must be a non-negative integer; got {number!r}.")
    return min(number, most) if number else default


def redacted(body: dict[str, Any]) -> dict[str, Any]:
    """The body as it may be shown: every extension's `authorization` reads `***`."""
    extensions = body.get(EXTENSIONS)
    if not isinstance(extensions, dict):
        return body
    shown = copy.deepcopy(body)
    for config in shown[EXTENSIONS].values():
        if isinstance(config, dict) and config.get("authorization") is not None:
            config["authorization"] = REDACTED
    return shown
