"""What OpenRelay's record extensions (`body.openrelay.*`: tool_config, workflow) share:
the reserved key, how one is found in a body, the error that names a field, and the
field rules they have in common. Pure."""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import urlsplit

EXTENSIONS = "openrelay"  # the one body key OpenRelay's request extensions live under


class ExtensionError(ValueError):
    """A malformed extension: `field` is the key at fault ("" for the whole value)."""

    extension: ClassVar[str]

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message

    @property
    def path(self) -> str:
        """Where the fault is inside the record's body."""
        return ".".join(p for p in (EXTENSIONS, self.extension, self.field) if p)


def raw_extension(body: Any, name: str) -> Any:
    """The record's `openrelay.<name>` as sent, or None when it has none."""
    extensions = body.get(EXTENSIONS) if isinstance(body, dict) else None
    return extensions.get(name) if isinstance(extensions, dict) else None


def fields_of(value: Any, known: frozenset[str], error: type[ExtensionError],
              shape: str) -> dict[str, Any]:
    """The extension's object, with no field it does not know."""
    if not isinstance(value, dict):
        raise error("", f"must be an object with {shape}.")
    unknown = sorted(set(value) - known)
    if unknown:
        raise error(unknown[0], f"unknown field (known: {', '.join(sorted(known))}).")
    return value


def https_url(url: Any, error: type[ExtensionError], what: str) -> str:
    """The URL's shape; whether it is an allowed target is the outbound policy's."""
    if not isinstance(url, str) or not url:
        raise error("url", f"is required: {what}'s https:// URL.")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise error("url", f"must be an absolute https:// URL; got {url!r}.")
    return url


def header_value(value: Any, error: type[ExtensionError], *, required: bool) -> str | None:
    """`authorization`: sent verbatim as a header, so no line breaks or control
    characters (they would break the request, and error messages would quote it)."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise error("authorization", "is required: the whole Authorization header value."
                    if required else "must be a string (the whole header value).")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise error("authorization", "must not hold line breaks or control characters.")
    return value


def json_object(value: Any, error: type[ExtensionError], field: str) -> Any:
    if value is not None and not isinstance(value, dict):
        raise error(field, "must be a JSON object.")
    return value
