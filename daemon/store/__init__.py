"""The store: Relay's source of truth. `open_store` builds one from `[database] url`."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import daemon.store.drivers  # noqa: F401  # first: peewee, without psycopg until needed
from daemon.store.interface import Store

SCHEMES = ("sqlite", "postgresql", "postgres")


class UnsupportedDatabase(ValueError):
    """A `[database] url` no backend here can open."""


def sqlite_path(url: str) -> Path | None:
    """The database file of a `sqlite:///` URL; None for any other URL."""
    return Path(url.removeprefix("sqlite:///")) if urlsplit(url).scheme == "sqlite" else None


def open_store(url: str) -> Store:
    """The store at `url`, its schema brought up to date: `sqlite:///relative/path.db`,
    `sqlite:////absolute/path.db`, or `postgresql://user@host:port/db` (also
    `postgres://`; any libpq URI, see store/postgres.py)."""
    scheme = urlsplit(url).scheme
    if (path := sqlite_path(url)) is not None:
        from daemon.store.sqlite import open_sqlite

        return open_sqlite(path)
    if scheme in ("postgresql", "postgres"):
        from daemon.store.postgres import open_postgres

        return open_postgres(url)
    raise UnsupportedDatabase(
        f"database.url: no backend for {scheme or 'a URL without a scheme'!r} "
        f"(supported: {', '.join(s + '://' for s in SCHEMES)}); got {url!r}")
