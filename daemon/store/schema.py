"""Schema versions, shared by every backend: the `schema_version` table (one row per
version applied) and `migrate`, which brings a database to `SCHEMA_VERSION`. A new
database is created from the models at the latest version; an older one runs its
backend's migrations from its version up, each recorded as it is applied. All of it is
one `schema_change` transaction, which one process holds at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from peewee import Database

from daemon.store.models import LEASED_ROWS_INDEX, TABLES, NodeModel, SchemaVersion
from daemon.store.sql import SqlBase

# The version the models describe. A schema change adds a migration to every backend
# (N: from N-1 to N) and bumps this.
SCHEMA_VERSION = 12

Migration = Callable[[Database], None]


class SchemaError(RuntimeError):
    """A database this relayd cannot bring to its schema version."""


def migrate(store: SqlBase, migrations: Mapping[int, Migration], *,
            latest: int = SCHEMA_VERSION) -> int:
    """Create the schema at `latest`, or migrate it there from the version it is at;
    returns the version."""
    with store.schema_change():
        if not SchemaVersion.table_exists():
            store.db.create_tables(TABLES)
            store.db.execute_sql(LEASED_ROWS_INDEX)
            _record(latest)
            return latest
        current = version()
        if current > latest:
            raise SchemaError(f"the database is at schema version {current}, newer than "
                              f"this relayd's {latest}: upgrade relayd")
        for target in range(current + 1, latest + 1):
            if target not in migrations:
                raise SchemaError(f"no migration to schema version {target} on this "
                                  f"backend (the database is at {current})")
            migrations[target](store.db)
            _record(target)
    return latest


def leases(db: Database) -> None:
    """Version 11, on every backend: the nodes sharing the database, which node runs
    each pending row (a lease), and which node claimed a webhook delivery or is
    validating a batch."""
    db.create_tables([NodeModel])
    db.execute_sql('ALTER TABLE "row" ADD COLUMN lease_node TEXT')
    db.execute_sql("ALTER TABLE job ADD COLUMN webhook_node TEXT")
    db.execute_sql("ALTER TABLE job ADD COLUMN validating_node TEXT")
    db.execute_sql(LEASED_ROWS_INDEX)


def lease_tokens(db: Database) -> None:
    """Version 12, on every backend: each row's lease token (fencing: a node whose
    lease was taken over can no longer start the row or store anything of it)."""
    db.execute_sql('ALTER TABLE "row" ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0')


def version() -> int:
    """The database's schema version (0 before any)."""
    current = SchemaVersion.select().order_by(SchemaVersion.version.desc()).first()
    return current.version if current else 0


def _record(target: int) -> None:
    SchemaVersion.create(version=target, applied_at=time.time())
