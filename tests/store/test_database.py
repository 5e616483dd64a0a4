"""Opening the store: schema creation, the version row, reopening without migrating."""

from __future__ import annotations

from pathlib import Path

from daemon.store.db import SCHEMA_VERSION, open_database
from daemon.store.repo import Repo

NOW = 1_700_000_000.0


def versions(db_path: Path) -> list[int]:
    db = open_database(db_path)
    try:
        return [v for (v,) in db.execute_sql("SELECT version FROM schema_version")]
    finally:
        db.close()


def test_schema_version_row_exists(db_path: Path) -> None:
    assert versions(db_path) == [SCHEMA_VERSION]


def test_tables_exist(db_path: Path) -> None:
    db = open_database(db_path)
    tables = set(db.get_tables())
    db.close()
    assert {"schema_version", "workspace", "api_key", "job", "row", "attempt"} <= tables


def test_pragmas_are_applied(db_path: Path) -> None:
    db = open_database(db_path)
    (mode,) = db.execute_sql("PRAGMA journal_mode").fetchone()
    (fk,) = db.execute_sql("PRAGMA foreign_keys").fetchone()
    db.close()
    assert mode == "wal"
    assert fk == 1


def test_reopening_keeps_data_and_adds_no_version(db_path: Path) -> None:
    db = open_database(db_path)
    Repo(db).ensure_workspace("acme", now=NOW)
    db.close()
    assert versions(db_path) == [SCHEMA_VERSION]
    db = open_database(db_path)
    assert Repo(db).workspace("acme") is not None
    db.close()


def test_open_creates_missing_parent_dirs(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "relay.db"
    db = open_database(path)
    db.close()
    assert path.exists()
