"""The PostgreSQL backend: `[database] url = "postgresql://user@host:port/db"` (or
`postgres://`), for nodes that share one database.

The driver is psycopg 3 (`psycopg[binary]`): it is the maintained PostgreSQL driver
(psycopg2 only gets fixes), it ships binary wheels with libpq inside (nothing to
compile, no system libpq needed), Peewee 4 supports it natively, and it binds
parameters on the server (a value never becomes SQL text; `executemany` runs in
pipeline mode, one round trip per batch).

The URL is a libpq connection URI, handed to libpq as written: every libpq parameter
works, e.g. `?sslmode=require`, `?connect_timeout=10`, and `?options=-csearch_path%3Dname`
for the tables to live in schema `name` (which must exist; the tests give each test a
schema this way).

What differs from SQLite, each in one method of `PostgresStore`:
- Write transactions are plain transactions (READ COMMITTED), and run side by side; a
  read that decides a write takes its rows `FOR UPDATE` (`locked`), the job before its
  rows.
- Creating or migrating the schema holds a transaction-scoped advisory lock, so nodes
  starting at once take turns: the first creates, the others find it done.
- A connection the server dropped is replaced (`_Database`): SQLite has no server to lose.
- Columns are 64-bit (`FLOAT` is `DOUBLE PRECISION`: a `REAL` would round a Unix time
  to minutes; integers and ids are `BIGINT`: costs in nano-dollars pass 2**31).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from peewee import PostgresqlDatabase

from daemon.store.backend import SqlStore
from daemon.store.drivers import load_psycopg
from daemon.store.faults import guarded
from daemon.store.schema import (
    Migration,
    budgets,
    deadlines,
    deleted_jobs,
    executor_calls,
    finish_order,
    idempotency_keys,
    lease_tokens,
    leases,
    migrate,
    output_checks,
)
from daemon.store.sql import Query

SCHEMES = ("postgresql", "postgres")
FIELD_TYPES = {"FLOAT": "DOUBLE PRECISION", "INT": "BIGINT", "AUTO": "BIGSERIAL"}
SCHEMA_LOCK = int.from_bytes(b"relay")  # the advisory lock key of schema changes

# PostgreSQL support starts at schema version 10: the database is created there. Each
# later change adds its step here (N: from N-1 to N), as sqlite.py does.
MIGRATIONS: dict[int, Migration] = {11: leases, 12: lease_tokens, 13: deleted_jobs,
                                 14: finish_order, 15: budgets, 16: executor_calls,
                                 17: output_checks, 18: idempotency_keys,
                                 19: deadlines}


class _Database(PostgresqlDatabase):
    """Peewee's database, whose threads each keep a connection: one the server dropped
    (a restart, a failover) fails the statement that finds it broken; the thread's next
    transaction or statement outside one connects again."""

    def cursor(self, named_cursor: Any = None) -> Any:
        if not self.is_closed() and self.connection().broken and not self.in_transaction():
            self.close()
        return super().cursor(named_cursor)


class PostgresStore(SqlStore):
    """The `Store` on one PostgreSQL database (or schema)."""

    SKIP_LOCKED = " FOR UPDATE SKIP LOCKED"
    FOR_UPDATE = " FOR UPDATE"
    FOR_SHARE = " FOR SHARE"
    SHARED = True

    def write(self) -> AbstractContextManager[Any]:
        return self.db.atomic()

    def insert_many(self, table: str, columns: Sequence[str],
                    values: Iterable[Sequence[Any]]) -> None:
        statement = f'COPY "{table}" ({", ".join(columns)}) FROM STDIN'
        with self.db.connection().cursor().copy(statement) as copy:
            for value in values:
                copy.write_row(value)

    @contextmanager
    def schema_change(self) -> Iterator[None]:
        with self.db.atomic():
            self.db.execute_sql("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            yield

    def locked(self, query: Query) -> Query:
        return query.for_update()

    def shared(self, query: Query) -> Query:
        return query.for_update("FOR SHARE")  # type: ignore[arg-type]  # Peewee takes the words

    def whole(self, expr: str) -> str:
        return f"FLOOR({expr})"  # CAST(… AS INTEGER) rounds here

    def json_text(self, column: str, key: str) -> str:
        return f"({column}::jsonb ->> '{key}')"

    def table_bytes(self) -> dict[str, int]:
        found = self.db.execute_sql(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind = 'r'").fetchall()
        return {name: int(size) for name, size in found}

    def reclaim(self, *, pages: int) -> bool:
        return False  # autovacuum makes deleted rows' space reusable (docs/deployment.md)


@guarded
def open_postgres(url: str) -> PostgresStore:
    """Connect to the database at `url` and bring its schema up to date."""
    scheme, rest = url.split("://", 1)
    if scheme not in SCHEMES:
        raise ValueError(f"not a PostgreSQL URL: {url!r}")
    load_psycopg()  # before peewee picks its PostgreSQL driver
    db = _Database(f"postgresql://{rest}", field_types=FIELD_TYPES, prefer_psycopg3=True)
    db.connect(reuse_if_open=True)
    store = PostgresStore(db)
    migrate(store, MIGRATIONS)
    return store
