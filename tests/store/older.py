"""Databases as older versions left them, for migration tests."""

from __future__ import annotations

from peewee import Database


def undo_version_12(db: Database) -> None:
    """Take away what schema version 12 added: rows' lease tokens."""
    db.execute_sql('ALTER TABLE "row" DROP COLUMN lease_token')


def undo_version_11(db: Database) -> None:
    """Take away what schema versions 12 and 11 added: nodes and row leases."""
    undo_version_12(db)
    for statement in ('DROP INDEX "row_lease_node"', 'ALTER TABLE "row" DROP COLUMN lease_node',
                      "ALTER TABLE job DROP COLUMN webhook_node",
                      "ALTER TABLE job DROP COLUMN validating_node", "DROP TABLE node"):
        db.execute_sql(statement)
