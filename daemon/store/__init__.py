"""The store: Relay's source of truth. `open_store` builds one from `[database] url`."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from daemon.store.interface import Store

SCHEMES = ("sqlite",)


class UnsupportedDatabase(ValueError):
    """A `[database] url` no backend here can open."""


def open_store(url: str) -> Store:
    """The store at `url`: `sqlite:///relative/path.db` or `sqlite:////absolute/path.db`."""
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        from daemon.store.sqlite import open_sqlite

        return open_sqlite(Path(url.removeprefix("sqlite:///")))
    raise UnsupportedDatabase(
        f"database.url: no backend for {scheme or 'a URL without a scheme'!r} "
        f"(supported: {', '.join(s + '://' for s in SCHEMES)}); got {url!r}")
