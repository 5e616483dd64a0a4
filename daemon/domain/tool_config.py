"""OpenRelay's tool-calling extension, `body.openrelay.tool_config`: its fields, their
rules and clamps, and the redaction of its secret wherever a row body is shown.

Pure: `parse_tool_config` checks the shape; whether the URL is an allowed target
(HTTPS, not a private address) is the outbound policy's, injected by the caller.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from daemon.domain.extensions import (
    EXTENSIONS,
    ExtensionError,
    fields_of,
    header_value,
    https_url,
    json_object,
    raw_extension,
)

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


class ToolConfigError(ExtensionError):
    """A malformed `tool_config`, naming the field."""

    extension = TOOL_CONFIG


def raw_tool_config(body: Any) -> Any:
    """The record's `openrelay.tool_config` as sent, or None when it has none."""
    return raw_extension(body, TOOL_CONFIG)


def parse_tool_config(value: Any) -> ToolConfig:
    """Check every field and apply the clamps; raise `ToolConfigError` naming the field."""
    value = fields_of(value, _KEYS, ToolConfigError, "at least 'url'")
    return ToolConfig(
        url=https_url(value.get("url"), ToolConfigError, "the tool executor"),
        type=_type(value.get("type")),
        authorization=header_value(value.get("authorization"), ToolConfigError,
                                   required=False),
        context=json_object(value.get("context"), ToolConfigError, "context"),
        max_rounds=_clamped(value, "max_rounds", DEFAULT_ROUNDS, MOST_ROUNDS),
        timeout_ms=_clamped(value, "timeout_ms", DEFAULT_TIMEOUT_MS, MOST_TIMEOUT_MS),
    )


def _type(kind: Any) -> str:
    if kind is None:
        return "http"
    if kind not in TYPES:
        raise ToolConfigError("type", f"must be one of {', '.join(TYPES)}; got {kind!r}.")
    return str(kind)


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
