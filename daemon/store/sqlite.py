"""The SQLite backend: opening the file with its pragmas, its migrations from version 1,
and write transactions taken `IMMEDIATE` (under WAL a transaction that reads and then
writes would otherwise fail with "database is locked" when another writer won). An
`IMMEDIATE` transaction holds the whole database, so reads need no row locks.

The write-ahead log is kept bounded under large writes (workflow states and tool
rounds of up to `[limits] max_record_mb` each): SQLite's own checkpoints (every 1,000
pages) cannot restart the log while a reader holds an older snapshot, and it never
shrinks the file by itself. So once a write leaves the log past `WAL_LIMIT`, a
`TRUNCATE` checkpoint empties it (waiting at most `CHECKPOINT_WAIT_MS` for readers,
else the next write tries again), and `journal_size_limit` truncates it to that size
whenever SQLite restarts it.

Statements that touch many rows do it in one step each. Python's `sqlite3` lets go of
the interpreter lock around every step (every row an `executemany` writes, every row a
read returns), and while the I/O loop keeps the lock busy, taking it back can wait
the switch interval (5 ms) each time. Measured beside one busy Python thread, a group
of 64 outcomes written by `executemany` took 175–295 ms and 52–89 thread switches, and
by one `UPDATE … FROM (VALUES …)` 12–17 ms and 4–5; a 256-row read 125–150 ms, and as
one `json_group_array` 9–12 ms. So rows go in as multi-row `INSERT`s, outcomes as one
`UPDATE … FROM (VALUES …)` (`store_outcomes`), both padded to a few sizes
(`_statements`), and hot reads come back as one JSON array (`fetch_all`)."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import peewee
from peewee import Database, SqliteDatabase

from daemon.domain import codec
from daemon.domain.jobs import ROW_PENDING
from daemon.store.backend import SqlStore
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
from daemon.store.sql import OUTCOME_COLUMNS, Query

log = logging.getLogger("relay.store")

WAL_LIMIT = 64 * 1024 * 1024  # bytes of write-ahead log kept past a write, at most
CHECKPOINT_WAIT_MS = 100  # how long a TRUNCATE checkpoint waits for readers
BUSY_TIMEOUT_MS = 10_000
STATEMENT_ROWS = 512  # rows written by one statement, at most
# `UPDATE … FROM` (3.33) and the JSON functions built in (3.38): older libraries take
# the statements a row of every backend.
ONE_STEP = sqlite3.sqlite_version_info >= (3, 38)

INCREMENTAL = 2  # `PRAGMA auto_vacuum`'s answer for "incremental"
# Each connection's settings. (`auto_vacuum` is not among them: it is set once, when the
# file is made (`open_sqlite`), and asking for it again on each new connection is a write,
# which a full disk refuses: a read on a new thread would then fail.)
PRAGMAS = {
    "journal_mode": "wal",
    "journal_size_limit": WAL_LIMIT,
    "busy_timeout": BUSY_TIMEOUT_MS,
    "foreign_keys": 1,
    "synchronous": "normal",
    "cache_size": -8_000,
}


def _webhook_state(db: Database) -> None:
    """Version 2: a delivery's state gets its own column (it was matched inside JSON)."""
    db.execute_sql("ALTER TABLE job ADD COLUMN webhook_state TEXT")
    db.execute_sql("UPDATE job SET webhook_state = 'sending' "
                   "WHERE json_extract(webhook, '$.state') = 'sending'")
    db.execute_sql("UPDATE job SET webhook_state = 'done' "
                   "WHERE webhook IS NOT NULL AND webhook_state IS NULL")
    db.execute_sql("UPDATE job SET webhook_state = 'queued' WHERE webhook IS NULL "
                   "AND webhook_url IS NOT NULL "
                   "AND status IN ('completed', 'failed', 'expired', 'cancelled')")


def _rounds(db: Database) -> None:
    """Version 3: tool rounds, stored as each one finishes."""
    db.execute_sql(
        'CREATE TABLE IF NOT EXISTS "round" ("id" INTEGER NOT NULL PRIMARY KEY, '
        '"row_id" INTEGER NOT NULL, "number" INTEGER NOT NULL, "model" TEXT NOT NULL, '
        '"prompt_tokens" INTEGER NOT NULL, "completion_tokens" INTEGER NOT NULL, '
        '"messages" TEXT NOT NULL, '
        'FOREIGN KEY ("row_id") REFERENCES "row" ("id") ON DELETE CASCADE)')
    db.execute_sql('CREATE UNIQUE INDEX IF NOT EXISTS "roundmodel_row_id_number" '
                   'ON "round" ("row_id", "number")')


def _workflows_switch(db: Database) -> None:
    """Version 4: the operator's switch for workflow records (off until enabled)."""
    db.execute_sql("ALTER TABLE workspace ADD COLUMN workflows INTEGER NOT NULL DEFAULT 0")


def _workflow_state(db: Database) -> None:
    """Version 5: where each workflow record stands, and its finished requests."""
    db.execute_sql(
        'CREATE TABLE IF NOT EXISTS "workflow" ("row_id" INTEGER NOT NULL PRIMARY KEY, '
        '"state" TEXT NOT NULL, '
        'FOREIGN KEY ("row_id") REFERENCES "row" ("id") ON DELETE CASCADE)')
    db.execute_sql(
        'CREATE TABLE IF NOT EXISTS "workflow_result" ("id" INTEGER NOT NULL PRIMARY KEY, '
        '"row_id" INTEGER NOT NULL, "step" INTEGER NOT NULL, "position" INTEGER NOT NULL, '
        '"result" TEXT NOT NULL, '
        'FOREIGN KEY ("row_id") REFERENCES "row" ("id") ON DELETE CASCADE)')
    db.execute_sql('CREATE UNIQUE INDEX IF NOT EXISTS "workflowresultmodel_row_id_step_position" '
                   'ON "workflow_result" ("row_id", "step", "position")')


def _redrives(db: Database) -> None:
    """Version 6: which job a dead-letter retry came from, and where each row went."""
    db.execute_sql("ALTER TABLE job ADD COLUMN retry_of TEXT")
    db.execute_sql('ALTER TABLE "row" ADD COLUMN redriven_to TEXT')


def _file_lifetimes(db: Database) -> None:
    """Version 7: when a file expires, and how long a batch's result files live."""
    db.execute_sql("ALTER TABLE file ADD COLUMN expires_at REAL")
    db.execute_sql("ALTER TABLE job ADD COLUMN output_expires_after_s INTEGER")


def _token_details(db: Database) -> None:
    """Version 8: a job's cached input tokens and reasoning output tokens (OpenAI's
    `usage.input_tokens_details` and `output_tokens_details`)."""
    db.execute_sql("ALTER TABLE job ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0")
    db.execute_sql("ALTER TABLE job ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0")


def _probe_and_row_lookup(db: Database) -> None:
    """Version 9: the health probe's row, and finding a job's row by its custom_id
    without a scan (the results' `after` cursor, the row route)."""
    db.execute_sql('CREATE TABLE IF NOT EXISTS "probe" ("id" INTEGER NOT NULL PRIMARY KEY, '
                   '"at" REAL NOT NULL)')
    db.execute_sql('CREATE INDEX IF NOT EXISTS "rowmodel_job_id_custom_id" '
                   'ON "row" ("job_id", "custom_id")')


def _dead_letter_lifecycle(db: Database) -> None:
    """Version 10: a job's rows that never ran (`canceled`) and its dead-lettered rows
    still open, counted like its other counters; a dead-lettered row can be discarded."""
    db.execute_sql('ALTER TABLE "row" ADD COLUMN discarded_at REAL')
    db.execute_sql("ALTER TABLE job ADD COLUMN dead_letter_open INTEGER NOT NULL DEFAULT 0")
    db.execute_sql("ALTER TABLE job ADD COLUMN canceled INTEGER NOT NULL DEFAULT 0")
    db.execute_sql('UPDATE job SET dead_letter_open = (SELECT COUNT(*) FROM "row" r '
                   "WHERE r.job_id = job.seq AND r.dead_letter = 1 "
                   "AND r.redriven_to IS NULL)")
    # The codes of rows that never ran as version 10 knew them (the dialects' codes
    # then), copied rather than read: a dialect adding its codes there later must not
    # change what this step counts in a database it upgrades.
    db.execute_sql('UPDATE job SET canceled = (SELECT COUNT(*) FROM "row" r '
                   "WHERE r.job_id = job.seq AND r.status = 'failed' AND r.attempts = 0 "
                   "AND r.error_code IN ('batch_cancelled', 'batch_expired', 'canceled', "
                   "'expired'))")


# Each migration takes the database from version N-1 to N (schema.py). Version 1 is the
# initial schema.
MIGRATIONS: dict[int, Migration] = {
    2: _webhook_state, 3: _rounds, 4: _workflows_switch, 5: _workflow_state, 6: _redrives,
    7: _file_lifetimes, 8: _token_details, 9: _probe_and_row_lookup,
    10: _dead_letter_lifecycle, 11: leases, 12: lease_tokens, 13: deleted_jobs,
    14: finish_order, 15: budgets, 16: executor_calls, 17: output_checks,
    18: idempotency_keys, 19: deadlines}


def _marks(rows: int, width: int) -> str:
    """`(?, ?), (?, ?)`: the parameters of `rows` rows of `width` values."""
    row = "(" + ", ".join(["?"] * width) + ")"
    return ", ".join([row] * rows)


class SqliteStore(SqlStore):
    """The `Store` on one SQLite file."""

    RETURNING = False  # a RETURNING answer is read a step a row: leases take three statements
    QUICK_READS = True  # a key's row in tens of microseconds; WAL: no writer holds a reader up

    @contextmanager
    def write(self) -> Iterator[Any]:
        with self.db.atomic("IMMEDIATE") as transaction:
            yield transaction
        if not self.db.in_transaction():  # committed, not a savepoint inside another
            self.keep_wal_bounded()

    def keep_wal_bounded(self) -> None:
        """A `TRUNCATE` checkpoint once the log is past `WAL_LIMIT` (a stat otherwise).
        The write before it has committed: nothing here may fail it."""
        try:
            if os.path.getsize(f"{self.db.database}-wal") <= WAL_LIMIT:
                return
        except OSError:  # no log (yet)
            return
        try:
            self.db.execute_sql(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
            try:
                busy, *_ = self.db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            finally:
                self.db.execute_sql(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        except (sqlite3.Error, peewee.DatabaseError) as exc:
            log.warning("checkpointing the write-ahead log failed; the next write tries "
                        "again (%s)", exc)
            return
        if busy:
            log.debug("the write-ahead log waits for a reader; the next write tries again")

    def insert_many(self, table: str, columns: Sequence[str],
                    values: Iterable[Sequence[Any]]) -> None:
        """(Every table written so has a first column that is never NULL: a row of
        NULLs is padding.)"""
        width = len(columns)
        for rows, params in self._statements(list(values), width):
            self.db.execute_sql(
                f'INSERT INTO "{table}" ({", ".join(columns)}) SELECT * FROM (VALUES '
                f"{_marks(rows, width)}) WHERE column1 IS NOT NULL", params)

    def store_outcomes(self, values: Sequence[Sequence[Any]]) -> None:
        if not ONE_STEP:
            return super().store_outcomes(values)
        width = len(OUTCOME_COLUMNS) + 1
        sets = ", ".join(f"{column} = v.column{n}"
                         for n, column in enumerate(OUTCOME_COLUMNS, start=1))
        for rows, params in self._statements(values, width, spare=1):
            self.db.execute_sql(
                f'UPDATE "row" SET {sets}, lease_node = NULL FROM (VALUES '
                f'{_marks(rows, width)}) AS v WHERE "row".id = v.column{width} '
                'AND "row".status = ?', [*params, ROW_PENDING])

    def fetch_all(self, statement: str, params: Sequence[Any], *,
                  columns: str) -> list[tuple[Any, ...]]:
        """Read as one JSON array, in one step, in no promised order. Values come back
        as JSON has them: a REAL may lose digits past its 15th, so no read of one is
        made so."""
        if not ONE_STEP:
            return super().fetch_all(statement, params, columns=columns)
        found = self.db.execute_sql(
            f"SELECT json_group_array(json_array({columns})) FROM ({statement})",
            params).fetchone()
        return [tuple(row) for row in codec.loads(found[0])]

    def _statements(self, values: Sequence[Sequence[Any]], width: int, *,
                    spare: int = 0) -> Iterator[tuple[int, list[Any]]]:
        """`values` as the rows and flat parameters of multi-row statements: parts
        within SQLite's parameter limit (less `spare` for the statement's own), each
        padded with rows of NULLs up to a power of two (the statements skip them), so
        there are a few statement texts, not one per size: Python's `sqlite3` keeps up
        to 128 prepared statements a connection, and one of hundreds of rows is large."""
        limit = self.db.connection().getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        size = max(1, min(STATEMENT_ROWS, (limit - spare) // width))
        for start in range(0, len(values), size):
            part = values[start:start + size]
            rows = min(size, 1 << (len(part) - 1).bit_length())
            params = [value for row in part for value in row]
            yield rows, params + [None] * ((rows - len(part)) * width)

    def schema_change(self) -> AbstractContextManager[Any]:
        return self.write()

    def locked(self, query: Query) -> Query:
        return query  # the IMMEDIATE transaction holds the database already

    def hold_job(self, seq: int) -> None:
        pass  # the IMMEDIATE transaction holds the database already

    def whole(self, expr: str) -> str:
        return f"CAST({expr} AS INTEGER)"  # truncates: the floor of a non-negative value

    def json_text(self, column: str, key: str) -> str:
        return f"json_extract({column}, '$.{key}')"

    def table_bytes(self) -> dict[str, int]:
        try:
            found = self.db.execute_sql(
                "SELECT m.tbl_name, SUM(s.pgsize) FROM dbstat s "
                "JOIN sqlite_master m ON s.name = m.name GROUP BY m.tbl_name").fetchall()
        except peewee.OperationalError:  # a SQLite built without the dbstat table
            return {}
        return {name: int(size) for name, size in found}

    def reclaim(self, *, pages: int) -> bool:
        # A no-op on a file made before auto_vacuum was set (`_make_file`): its free pages
        # are reused by later writes, so it stops growing, but it does not shrink.
        # A page a step: `executescript` steps it to its end in a transaction of its own
        # (`execute` stops after one page, as the pragma answers no rows).
        self.db.connection().executescript(f"PRAGMA incremental_vacuum({int(pages)});")
        (free,) = self.db.execute_sql("PRAGMA freelist_count").fetchone()
        (mode,) = self.db.execute_sql("PRAGMA auto_vacuum").fetchone()
        return bool(free) and mode == INCREMENTAL


def _make_file(path: Path) -> None:
    """A new database file that can give pages back (`reclaim`) without a whole VACUUM:
    `auto_vacuum` takes only before anything is written, the journal mode included."""
    made = sqlite3.connect(path)
    try:
        made.execute("PRAGMA auto_vacuum = incremental")
        made.execute("PRAGMA journal_mode = wal")
    finally:
        made.close()


@guarded
def open_sqlite(path: Path) -> SqliteStore:
    """Open (creating if needed) the store at `path` and bring its schema up to date."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or not path.stat().st_size:
        _make_file(path)
    db = SqliteDatabase(str(path), pragmas=PRAGMAS, check_same_thread=False)
    db.connect(reuse_if_open=True)
    store = SqliteStore(db)
    migrate(store, MIGRATIONS)
    return store
