"""Databases as older versions left them, for migration tests."""

from __future__ import annotations

from peewee import Database


def undo_version_11(db: Database) -> None:
    """Take away what schema version 11 added: nodes and row leases."""
    for statement in ('DROP INDEX "row_lease_node"', 'ALTER TABLE "row" DROP COLUMN lease_node',
                      "ALTER TABLE job DROP COLUMN webhook_node",
                      "ALTER TABLE job DROP COLUMN validating_node", "DROP TABLE node"):
        db.execute_sql(statement)
