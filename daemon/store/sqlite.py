"""The SQLite backend: opening the file with its pragmas, versioned migrations, and
write transactions taken `IMMEDIATE` (under WAL a transaction that reads and then
writes would otherwise fail with "database is locked" when another writer won)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from peewee import SqliteDatabase

from daemon.domain.jobs import NEVER_RAN
from daemon.store.access import AccessQueries
from daemon.store.file_records import FileQueries
from daemon.store.health import HealthQueries
from daemon.store.jobs import JobQueries
from daemon.store.models import (
    TABLES,
    ProbeModel,
    RoundModel,
    SchemaVersion,
    WorkflowModel,
    WorkflowResultModel,
    database,
)
from daemon.store.rows import RowQueries
from daemon.store.stats import StatsQueries
from daemon.store.webhooks import WebhookQueries
from daemon.store.workflows import WorkflowQueries

PRAGMAS = {
    "journal_mode": "wal",
    "busy_timeout": 10_000,
    "foreign_keys": 1,
    "synchronous": "normal",
    "cache_size": -32_000,
}


def _webhook_state(db: SqliteDatabase) -> None:
    """Version 2: a delivery's state gets its own column (it was matched inside JSON)."""
    db.execute_sql("ALTER TABLE job ADD COLUMN webhook_state TEXT")
    db.execute_sql("UPDATE job SET webhook_state = 'sending' "
                   "WHERE json_extract(webhook, '$.state') = 'sending'")
    db.execute_sql("UPDATE job SET webhook_state = 'done' "
                   "WHERE webhook IS NOT NULL AND webhook_state IS NULL")
    db.execute_sql("UPDATE job SET webhook_state = 'queued' WHERE webhook IS NULL "
                   "AND webhook_url IS NOT NULL "
                   "AND status IN ('completed', 'failed', 'expired', 'cancelled')")


def _rounds(db: SqliteDatabase) -> None:
    """Version 3: tool rounds, stored as each one finishes."""
    db.create_tables([RoundModel])


def _workflows_switch(db: SqliteDatabase) -> None:
    """Version 4: the operator's switch for workflow records (off until enabled)."""
    db.execute_sql("ALTER TABLE workspace ADD COLUMN workflows INTEGER NOT NULL DEFAULT 0")


def _workflow_state(db: SqliteDatabase) -> None:
    """Version 5: where each workflow record stands, and its finished requests."""
    db.create_tables([WorkflowModel, WorkflowResultModel])


def _redrives(db: SqliteDatabase) -> None:
    """Version 6: which job a dead-letter retry came from, and where each row went."""
    db.execute_sql("ALTER TABLE job ADD COLUMN retry_of TEXT")
    db.execute_sql('ALTER TABLE "row" ADD COLUMN redriven_to TEXT')


def _file_lifetimes(db: SqliteDatabase) -> None:
    """Version 7: when a file expires, and how long a batch's result files live."""
    db.execute_sql("ALTER TABLE file ADD COLUMN expires_at REAL")
    db.execute_sql("ALTER TABLE job ADD COLUMN output_expires_after_s INTEGER")


def _token_details(db: SqliteDatabase) -> None:
    """Version 8: a job's cached input tokens and reasoning output tokens (OpenAI's
    `usage.input_tokens_details` and `output_tokens_details`)."""
    db.execute_sql("ALTER TABLE job ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0")
    db.execute_sql("ALTER TABLE job ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0")


def _probe_and_row_lookup(db: SqliteDatabase) -> None:
    """Version 9: the health probe's row, and finding a job's row by its custom_id
    without a scan (the results' `after` cursor, the row route)."""
    db.create_tables([ProbeModel])
    db.execute_sql('CREATE INDEX IF NOT EXISTS "rowmodel_job_id_custom_id" '
                   'ON "row" ("job_id", "custom_id")')


def _dead_letter_lifecycle(db: SqliteDatabase) -> None:
    """Version 10: a job's rows that never ran (`canceled`) and its dead-lettered rows
    still open, counted like its other counters; a dead-lettered row can be discarded."""
    db.execute_sql('ALTER TABLE "row" ADD COLUMN discarded_at REAL')
    db.execute_sql("ALTER TABLE job ADD COLUMN dead_letter_open INTEGER NOT NULL DEFAULT 0")
    db.execute_sql("ALTER TABLE job ADD COLUMN canceled INTEGER NOT NULL DEFAULT 0")
    db.execute_sql('UPDATE job SET dead_letter_open = (SELECT COUNT(*) FROM "row" r '
                   "WHERE r.job_id = job.seq AND r.dead_letter = 1 "
                   "AND r.redriven_to IS NULL)")
    codes = ", ".join(f"'{code}'" for code in sorted(NEVER_RAN))
    db.execute_sql('UPDATE job SET canceled = (SELECT COUNT(*) FROM "row" r '
                   "WHERE r.job_id = job.seq AND r.status = 'failed' AND r.attempts = 0 "
                   f"AND r.error_code IN ({codes}))")


# Each migration takes the database from version N-1 to N. Version 1 is the initial
# schema; a new database is created from the models at the latest version.
MIGRATIONS: dict[int, Callable[[SqliteDatabase], None]] = {
    2: _webhook_state, 3: _rounds, 4: _workflows_switch, 5: _workflow_state, 6: _redrives,
    7: _file_lifetimes, 8: _token_details, 9: _probe_and_row_lookup,
    10: _dead_letter_lifecycle}
SCHEMA_VERSION = 10


class SqliteStore(AccessQueries, JobQueries, RowQueries, FileQueries, WebhookQueries,
                  WorkflowQueries, HealthQueries, StatsQueries):
    """The `Store` on one SQLite file."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def write(self) -> AbstractContextManager[Any]:
        return self.db.atomic("IMMEDIATE")


def open_sqlite(path: Path) -> SqliteStore:
    """Open (creating if needed) the store at `path` and bring its schema up to date."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = SqliteDatabase(str(path), pragmas=PRAGMAS, check_same_thread=False)
    database.initialize(db)
    db.connect(reuse_if_open=True)
    with db.atomic("IMMEDIATE"):
        _migrate(db)
    return SqliteStore(db)


def _migrate(db: SqliteDatabase) -> None:
    if not SchemaVersion.table_exists():
        db.create_tables(TABLES)
        SchemaVersion.create(version=SCHEMA_VERSION, applied_at=time.time())
        return
    current = SchemaVersion.select().order_by(SchemaVersion.version.desc()).first()
    version = current.version if current else 0
    for target in range(version + 1, SCHEMA_VERSION + 1):
        MIGRATIONS[target](db)
        SchemaVersion.create(version=target, applied_at=time.time())
