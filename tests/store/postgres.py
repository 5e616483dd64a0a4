"""PostgreSQL for the tests: the server the PostgreSQL half of the store's contract
suite (and tests/e2e/test_postgres.py) runs against, and a schema of its own per test.

The server is `RELAY_TEST_POSTGRES_URL` (default: postgresql://postgres@127.0.0.1:5432/test);
the tests need a role that may create schemas in that database. Where it cannot be
reached, the PostgreSQL tests skip and say why; with `CI=true` they fail instead, so a
CI run never passes by skipping them.

A store reaches its schema through the URL: libpq's `options=-csearch_path=<schema>`,
URL-encoded (`schema_url`). Two ways to get one:

- `fresh_schema()`: a new empty schema, dropped afterwards; the store creates its tables
  in it as in production. Creating 11 tables and their indexes costs 70–400 ms on a
  busy two-core machine (a database copied from a template is no faster), so
- `clean_schema()`, what the contract suite uses: a schema no other test holds, with
  the tables at the latest version and nothing in them. A schema is created (by the
  store, through `fresh_schema`'s path) the first time one is needed, emptied after
  each test (DELETE from every table and sequences restarted: a few ms; TRUNCATE after
  a test that left many rows), and dropped at the end of the session; one the emptying
  fails on is dropped instead of reused.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from daemon.testing import create_schema, drop_schema, with_params

SERVER_URL = os.environ.get("RELAY_TEST_POSTGRES_URL",
                            "postgresql://postgres@127.0.0.1:5432/test")
# Every table but schema_version (which keeps its row), children first.
_TABLES = ("probe", "file", "workflow_result", "workflow", "round", "attempt", "row", "job",
           "api_key", "workspace", "node", "spend", "idempotency_key")
# One round trip, never waiting long on a lock a broken test left (the schema is dropped
# instead): DELETE, then every sequence of the schema starts again at 1 (a few ms); or,
# once a test left many rows, TRUNCATE (a constant 50-200 ms, where DELETE takes seconds).
_LOCK_TIMEOUT = "SET LOCAL lock_timeout = '5s'; "
_DELETE = _LOCK_TIMEOUT + "".join(f'DELETE FROM "{table}"; ' for table in _TABLES) + (
    "SELECT setval(c.oid, 1, false) FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind = 'S' AND n.nspname = current_schema()")
_TRUNCATE = (_LOCK_TIMEOUT + "TRUNCATE " + ", ".join(f'"{table}"' for table in _TABLES)
             + " RESTART IDENTITY")
_MANY_ROWS = 'SELECT EXISTS (SELECT 1 FROM "row" OFFSET 10000)'

_unreachable: list[str | None] = []  # the server's answer, asked once per session
_free: list[str] = []  # emptied schemas, ready for the next test
_made: set[str] = set()  # every schema this session made and has not dropped
_emptiers: dict[str, psycopg.Connection] = {}  # a connection into each schema, kept


def unreachable() -> str | None:
    """Why the test server cannot be used, or None when it can (asked once)."""
    if not _unreachable:
        try:
            with psycopg.connect(SERVER_URL, connect_timeout=3):
                _unreachable.append(None)
        except psycopg.Error as exc:
            said = " ".join(str(exc).split())
            _unreachable.append(f"PostgreSQL at {SERVER_URL} is unreachable "
                                f"(set RELAY_TEST_POSTGRES_URL): {said}")
    return _unreachable[0]


def asked() -> bool:
    """Whether this session has asked for the server yet."""
    return bool(_unreachable)


def require_server() -> str:
    """The server's URL; skips the test if it is unreachable (fails it under CI=true)."""
    reason = unreachable()
    if reason is None:
        return SERVER_URL
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} [CI=true: an unreachable PostgreSQL fails the run]",
                    pytrace=False)
    pytest.skip(reason)


def schema_url(url: str, schema: str) -> str:
    """`url` with its tables in `schema`: libpq's `options=-csearch_path=<schema>`."""
    return with_params(url, options=f"-csearch_path={schema}")


@contextmanager
def fresh_schema() -> Iterator[str]:
    """A new, empty schema on the test server, dropped on exit; yields a store URL
    whose tables live in it."""
    server = require_server()
    name = _create(server)
    try:
        yield schema_url(server, name)
    finally:
        _drop(server, name)


@contextmanager
def clean_schema() -> Iterator[str]:
    """A schema of this test's own, empty (its tables created by the first store opened
    on it), emptied again on exit; yields a store URL whose tables live in it."""
    server = require_server()
    name = _free.pop() if _free else _create(server)
    try:
        yield schema_url(server, name)
    finally:
        try:
            _empty(server, name)
        except psycopg.Error:
            _drop(server, name)
        else:
            _free.append(name)


def finish() -> None:
    """Drop every schema this session made (at the end of the session)."""
    _free.clear()
    for name in sorted(_made):
        _drop(SERVER_URL, name)


def _create(server: str) -> str:
    name = create_schema(server, "relay_test_")
    _made.add(name)
    return name


def _empty(server: str, name: str) -> None:
    if name not in _emptiers:
        _emptiers[name] = psycopg.connect(schema_url(server, name), autocommit=True)
    conn = _emptiers[name]
    with conn.transaction():
        (many,) = conn.execute(_MANY_ROWS).fetchone() or (False,)
        conn.execute(_TRUNCATE if many else _DELETE)


def _drop(server: str, name: str) -> None:
    if conn := _emptiers.pop(name, None):
        conn.close()
    drop_schema(server, name)
    _made.discard(name)
