"""The store: Relay's source of truth. `open_store` builds one from `[database] url`."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from daemon.store.interface import Store

SCHEMES = ("sqlite", "postgresql", "postgres")


class UnsupportedDatabase(ValueError):
    """A `[database] url` no backend here can open."""


def open_store(url: str) -> Store:
    """The store at `url`, its schema brought up to date: `sqlite:///relative/path.db`,
    `sqlite:////absolute/path.db`, or `postgresql://user@host:port/db` (also
    `postgres://`; any libpq URI, see store/postgres.py)."""
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        from daemon.store.sqlite import open_sqlite

        return open_sqlite(Path(url.removeprefix("sqlite:///")))
    if scheme in ("postgresql", "postgres"):
        from daemon.store.postgres import open_postgres

        return open_postgres(url)
    raise UnsupportedDatabase(
        f"database.url: no backend for {scheme or 'a URL without a scheme'!r} "
        f"(supported: {', '.join(s + '://' for s in SCHEMES)}); got {url!r}")
