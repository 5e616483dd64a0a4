"""Databases as older versions left them, for migration tests."""

from __future__ import annotations

from peewee import Database


def undo_version_15(db: Database) -> None:
    """Take away what schema versions 19 to 15 added: jobs' deadlines, the idempotency
    keys, jobs' counts of checked answers, the rows' executor calls, then budgets, spend
    and paused jobs."""
    for column in ("deadline_at", "deadline_drain_s"):
        db.execute_sql(f"ALTER TABLE job DROP COLUMN {column}")
    db.execute_sql('DROP TABLE "idempotency_key"')
    for column in ("outputs_valid", "outputs_repaired", "outputs_invalid"):
        db.execute_sql(f"ALTER TABLE job DROP COLUMN {column}")
    db.execute_sql('DROP TABLE "executor_call"')
    for statement in ('DROP TABLE "spend"', "ALTER TABLE job DROP COLUMN budget_paused_at",
                      "ALTER TABLE job DROP COLUMN paused_at",
                      "ALTER TABLE workspace DROP COLUMN budget_period",
                      "ALTER TABLE workspace DROP COLUMN budget_nano_usd"):
        db.execute_sql(statement)


def undo_version_14(db: Database) -> None:
    """Take away what schema versions 19 to 14 added: the finish order of rows."""
    undo_version_15(db)
    for statement in ('DROP INDEX "rowmodel_job_id_finished_seq"',
                      'ALTER TABLE "row" DROP COLUMN finished_seq',
                      "ALTER TABLE job DROP COLUMN finished_seq"):
        db.execute_sql(statement)


def undo_version_13(db: Database) -> None:
    """Take away what schema versions 19 to 13 added: jobs' deletion time."""
    undo_version_14(db)
    db.execute_sql("ALTER TABLE job DROP COLUMN deleted_at")


def undo_version_12(db: Database) -> None:
    """Take away what schema versions 19 to 12 added: rows' lease tokens."""
    undo_version_13(db)
    db.execute_sql('ALTER TABLE "row" DROP COLUMN lease_token')


def undo_version_11(db: Database) -> None:
    """Take away what schema versions 19 to 11 added: nodes and row leases."""
    undo_version_12(db)
    for statement in ('DROP INDEX "row_lease_node"', 'ALTER TABLE "row" DROP COLUMN lease_node',
                      "ALTER TABLE job DROP COLUMN webhook_node",
                      "ALTER TABLE job DROP COLUMN validating_node", "DROP TABLE node"):
        db.execute_sql(statement)


def undo_to_version_1(db: Database) -> None:
    """Take away what schema versions 19 down to 2 added (SQLite: PostgreSQL starts at
    version 10)."""
    undo_version_11(db)
    for statement in (
            'ALTER TABLE "row" DROP COLUMN discarded_at',  # 10
            "ALTER TABLE job DROP COLUMN canceled",
            "ALTER TABLE job DROP COLUMN dead_letter_open",
            'DROP INDEX "rowmodel_job_id_custom_id"',  # 9
            'DROP TABLE "probe"',
            "ALTER TABLE job DROP COLUMN reasoning_tokens",  # 8
            "ALTER TABLE job DROP COLUMN cached_tokens",
            "ALTER TABLE job DROP COLUMN output_expires_after_s",  # 7
            "ALTER TABLE file DROP COLUMN expires_at",
            'ALTER TABLE "row" DROP COLUMN redriven_to',  # 6
            "ALTER TABLE job DROP COLUMN retry_of",
            'DROP TABLE "workflow"',  # 5
            'DROP TABLE "workflow_result"',
            "ALTER TABLE workspace DROP COLUMN workflows",  # 4
            'DROP TABLE "round"',  # 3
            "ALTER TABLE job DROP COLUMN webhook_state"):  # 2
        db.execute_sql(statement)
