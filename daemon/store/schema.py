"""Schema versions, shared by every backend: the `schema_version` table (one row per
version applied) and `migrate`, which brings a database to `SCHEMA_VERSION`. A new
database is created from the models at the latest version; an older one runs its
backend's migrations from its version up, each recorded as it is applied. All of it is
one `schema_change` transaction, which one process holds at a time.

A migration is frozen: it does what it did when its version was made, whatever the
code around it has become since. It writes literal SQL and values only, never a model
or a constant of Relay's (a model's table or a code list grows; the old step must
not), which `tests/store/test_frozen_migrations.py` checks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from peewee import Database, PostgresqlDatabase

from daemon.store.models import LEASED_ROWS_INDEX
from daemon.store.sql import SqlBase

# The version the models describe. A schema change adds a migration to every backend
# (N: from N-1 to N) and bumps this.
SCHEMA_VERSION = 19

Migration = Callable[[Database], None]


class SchemaError(RuntimeError):
    """A database this relayd cannot bring to its schema version."""


def migrate(store: SqlBase, migrations: Mapping[int, Migration], *,
            latest: int = SCHEMA_VERSION) -> int:
    """Create the schema at `latest`, or migrate it there from the version it is at;
    returns the version."""
    with store.schema_change():
        if not store.SchemaVersion.table_exists():
            store.db.create_tables(store.tables)
            store.db.execute_sql(LEASED_ROWS_INDEX)
            _record(store, latest)
            return latest
        current = version(store)
        if current > latest:
            raise SchemaError(f"the database is at schema version {current}, newer than "
                              f"this relayd's {latest}: upgrade relayd")
        for target in range(current + 1, latest + 1):
            if target not in migrations:
                raise SchemaError(f"no migration to schema version {target} on this "
                                  f"backend (the database is at {current})")
            migrations[target](store.db)
            _record(store, target)
    return latest


def leases(db: Database) -> None:
    """Version 11, on every backend: the nodes sharing the database, which node runs
    each pending row (a lease), and which node claimed a webhook delivery or is
    validating a batch."""
    # The node table as version 11 created it, in each backend's column types.
    real, boolean = (("DOUBLE PRECISION", "BOOLEAN") if isinstance(db, PostgresqlDatabase)
                     else ("REAL", "INTEGER"))
    db.execute_sql(
        'CREATE TABLE IF NOT EXISTS "node" ("id" TEXT NOT NULL PRIMARY KEY, '
        '"address" TEXT NOT NULL, "version" TEXT NOT NULL, '
        f'"started_at" {real} NOT NULL, "heartbeat_at" {real} NOT NULL, '
        f'"stopping" {boolean} NOT NULL, "jobs" TEXT NOT NULL)')
    db.execute_sql('ALTER TABLE "row" ADD COLUMN lease_node TEXT')
    db.execute_sql("ALTER TABLE job ADD COLUMN webhook_node TEXT")
    db.execute_sql("ALTER TABLE job ADD COLUMN validating_node TEXT")
    db.execute_sql('CREATE INDEX IF NOT EXISTS "row_lease_node" ON "row" ("lease_node") '
                   "WHERE lease_node IS NOT NULL")


def lease_tokens(db: Database) -> None:
    """Version 12, on every backend: each row's lease token (fencing: a node whose
    lease was taken over can no longer start the row or store anything of it)."""
    # In each backend's integer type, as a new database has it (BIGINT on PostgreSQL).
    kind = "BIGINT" if isinstance(db, PostgresqlDatabase) else "INTEGER"
    db.execute_sql(f'ALTER TABLE "row" ADD COLUMN lease_token {kind} NOT NULL DEFAULT 0')


def deleted_jobs(db: Database) -> None:
    """Version 13, on every backend: when a client deleted an ended job (Anthropic's
    Message Batches API). The job stays, hidden from every read, so its id still pages
    a listing and what points at it (a re-drive) still resolves."""
    real = "DOUBLE PRECISION" if isinstance(db, PostgresqlDatabase) else "REAL"
    db.execute_sql(f"ALTER TABLE job ADD COLUMN deleted_at {real}")


def finish_order(db: Database) -> None:
    """Version 14, on every backend: the order rows finished in, per job (a row's
    `finished_seq`, taken from its job's counter under the job's lock), which the
    partial results' cursor follows. Rows finished already are numbered by position,
    and each job's counter starts past them."""
    kind = "BIGINT" if isinstance(db, PostgresqlDatabase) else "INTEGER"
    db.execute_sql(f"ALTER TABLE job ADD COLUMN finished_seq {kind} NOT NULL DEFAULT 0")
    db.execute_sql(f'ALTER TABLE "row" ADD COLUMN finished_seq {kind}')
    db.execute_sql('UPDATE "row" SET finished_seq = position WHERE status != \'pending\'')
    db.execute_sql("UPDATE job SET finished_seq = total")
    db.execute_sql('CREATE INDEX IF NOT EXISTS "rowmodel_job_id_finished_seq" '
                   'ON "row" ("job_id", "finished_seq")')


def budgets(db: Database) -> None:
    """Version 15, on every backend: a workspace's budget (nano-USD and period), what
    each workspace spent on each UTC day (the spend the rows stored so far already cost
    is counted in, on the day each row finished), and whether a job is paused, by an
    operator or by its workspace's budget."""
    pg = isinstance(db, PostgresqlDatabase)
    kind, real = ("BIGINT", "DOUBLE PRECISION") if pg else ("INTEGER", "REAL")
    db.execute_sql(f"ALTER TABLE workspace ADD COLUMN budget_nano_usd {kind}")
    db.execute_sql("ALTER TABLE workspace ADD COLUMN budget_period TEXT")
    db.execute_sql(f"ALTER TABLE job ADD COLUMN paused_at {real}")
    db.execute_sql(f"ALTER TABLE job ADD COLUMN budget_paused_at {real}")
    db.execute_sql(
        f'CREATE TABLE IF NOT EXISTS "spend" ("workspace_id" {kind} NOT NULL, '
        f'"day" {kind} NOT NULL, "nano_usd" {kind} NOT NULL, '
        'PRIMARY KEY ("workspace_id", "day"))')
    day = ("CAST(FLOOR(r.finished_at / 86400) AS BIGINT)" if pg
           else "CAST(r.finished_at / 86400 AS INTEGER)")  # finished_at is never negative
    db.execute_sql(
        f'INSERT INTO "spend" ("workspace_id", "day", "nano_usd") '
        f"SELECT j.workspace_id, {day}, SUM(r.cost_nano_usd) "
        'FROM "row" r JOIN job j ON j.seq = r.job_id '
        "WHERE r.cost_nano_usd > 0 AND r.finished_at IS NOT NULL "
        f"GROUP BY j.workspace_id, {day}")


def executor_calls(db: Database) -> None:
    """Version 16, on every backend: each call of a tool-calling row to its tool
    executor (its round, protocol, status, error, duration, start), which the row's
    detail and dead-letter entry show beside its model attempts."""
    # In each backend's types, as a new database has them (PostgreSQL: BIGINT, BIGSERIAL).
    key, whole, real = (("BIGSERIAL", "BIGINT", "DOUBLE PRECISION")
                        if isinstance(db, PostgresqlDatabase) else ("INTEGER", "INTEGER", "REAL"))
    db.execute_sql(
        f'CREATE TABLE IF NOT EXISTS "executor_call" ("id" {key} NOT NULL PRIMARY KEY, '
        f'"row_id" {whole} NOT NULL, "round" {whole} NOT NULL, "executor" TEXT NOT NULL, '
        f'"status_code" {whole}, "error" TEXT, "duration_ms" {whole} NOT NULL, '
        f'"started_at" {real} NOT NULL, '
        'FOREIGN KEY ("row_id") REFERENCES "row" ("id") ON DELETE CASCADE)')
    db.execute_sql('CREATE INDEX IF NOT EXISTS "executorcallmodel_row_id" '
                   'ON "executor_call" ("row_id")')


def output_checks(db: Database) -> None:
    """Version 17, on every backend: each job's counts of checked answers (valid at
    once, repaired, still invalid)."""
    kind = "BIGINT" if isinstance(db, PostgresqlDatabase) else "INTEGER"
    for column in ("outputs_valid", "outputs_repaired", "outputs_invalid"):
        db.execute_sql(f"ALTER TABLE job ADD COLUMN {column} {kind} NOT NULL DEFAULT 0")


def idempotency_keys(db: Database) -> None:
    """Version 18, on every backend: each workspace's `Idempotency-Key`s of the last 24
    hours, with the request's route and body hash and, once answered, the answer."""
    pg = isinstance(db, PostgresqlDatabase)
    whole, real, blob = ("BIGINT", "DOUBLE PRECISION", "BYTEA") if pg else (
        "INTEGER", "REAL", "BLOB")
    db.execute_sql(
        f'CREATE TABLE IF NOT EXISTS "idempotency_key" ("workspace_id" {whole} NOT NULL, '
        '"key" TEXT NOT NULL, "route" TEXT NOT NULL, "body_sha256" TEXT NOT NULL, '
        f'"created_at" {real} NOT NULL, "status" {whole}, "content_type" TEXT, '
        f'"answer" {blob}, PRIMARY KEY ("workspace_id", "key"))')
    db.execute_sql('CREATE INDEX IF NOT EXISTS "idempotencykeymodel_created_at" '
                   'ON "idempotency_key" ("created_at")')


def deadlines(db: Database) -> None:
    """Version 19, on every backend: a Relay job's deadline, and how long the estimate
    at submit said its rows would take to run (`domain/deadline.py`)."""
    real = "DOUBLE PRECISION" if isinstance(db, PostgresqlDatabase) else "REAL"
    db.execute_sql(f"ALTER TABLE job ADD COLUMN deadline_at {real}")
    db.execute_sql(f"ALTER TABLE job ADD COLUMN deadline_drain_s {real}")


def version(store: SqlBase) -> int:
    """The database's schema version (0 before any)."""
    current = (store.SchemaVersion.select()
               .order_by(store.SchemaVersion.version.desc()).first())
    return current.version if current else 0


def _record(store: SqlBase, target: int) -> None:
    store.SchemaVersion.create(version=target, applied_at=time.time())
