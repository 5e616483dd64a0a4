"""Opening the SQLite store: pragmas, schema creation and versioned migrations."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from peewee import SqliteDatabase

from daemon.store.models import TABLES, SchemaVersion, database

PRAGMAS = {
    "journal_mode": "wal",
    "busy_timeout": 10_000,
    "foreign_keys": 1,
    "synchronous": "normal",
    "cache_size": -32_000,
}

# Each migration takes the database from version N-1 to N. Version 1 is the
# initial schema, created from the models.
MIGRATIONS: dict[int, Callable[[SqliteDatabase], None]] = {}
SCHEMA_VERSION = 1


def open_database(path: Path) -> SqliteDatabase:
    """Open (creating if needed) the store at `path` and bring its schema up to date."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = SqliteDatabase(str(path), pragmas=PRAGMAS, check_same_thread=False)
    database.initialize(db)
    db.connect(reuse_if_open=True)
    with db.atomic("IMMEDIATE"):
        _migrate(db)
    return db


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
