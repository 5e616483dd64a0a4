"""Schema versions on every backend, each test on a database of its own: a new database
is created at the latest version; the next migration runs once and is recorded; a
database newer than this relayd, or a step a backend lacks, is refused; `relayd db
migrate` prints the version."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from peewee import Database

from daemon import cli
from daemon.store import open_store
from daemon.store.backend import SqlStore
from daemon.store.schema import SCHEMA_VERSION, SchemaError, migrate
from tests.store import postgres


@pytest.fixture(params=["postgres", "sqlite"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a database that does not exist yet (an empty schema, for PostgreSQL)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'relay.db'}"
    else:
        with postgres.fresh_schema() as fresh:
            yield fresh


def opened(url: str) -> SqlStore:
    store = open_store(url)
    assert isinstance(store, SqlStore)
    return store


def versions(store: SqlStore) -> list[int]:
    return [v for (v,) in store.db.execute_sql(
        "SELECT version FROM schema_version ORDER BY version")]


def test_a_new_database_is_created_at_the_latest_version(url: str) -> None:
    store = opened(url)
    store.ensure_workspace("acme", now=1.0)
    store.close()
    again = opened(url)
    assert (again.schema_version(), versions(again)) == (SCHEMA_VERSION, [SCHEMA_VERSION])
    assert again.workspace("acme") is not None
    again.close()


def test_the_next_migration_runs_once_and_is_recorded(url: str) -> None:
    store = opened(url)
    ran: list[int] = []

    def add_a_note(db: Database) -> None:
        ran.append(1)
        db.execute_sql("ALTER TABLE probe ADD COLUMN note TEXT")

    steps = {SCHEMA_VERSION + 1: add_a_note}
    assert migrate(store, steps, latest=SCHEMA_VERSION + 1) == SCHEMA_VERSION + 1
    assert migrate(store, steps, latest=SCHEMA_VERSION + 1) == SCHEMA_VERSION + 1
    assert ran == [1]
    assert versions(store) == [SCHEMA_VERSION, SCHEMA_VERSION + 1]
    store.db.execute_sql("INSERT INTO probe (id, at, note) VALUES (1, 1.0, 'new column')")
    store.close()
    with pytest.raises(SchemaError, match=f"version {SCHEMA_VERSION + 1}, newer than"):
        open_store(url)


def test_a_step_the_backend_lacks_is_refused_and_nothing_changes(url: str) -> None:
    store = opened(url)
    with pytest.raises(SchemaError, match=f"no migration to schema version {SCHEMA_VERSION + 1}"):
        migrate(store, {}, latest=SCHEMA_VERSION + 2)
    assert versions(store) == [SCHEMA_VERSION]
    store.close()


def test_relayd_db_migrate_prints_the_version(url: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "relay.toml"
    config.write_text(f'[server]\ndata_dir = "{tmp_path / "data"}"\n\n'
                      f'[database]\nurl = "{url}"\n')
    for _ in range(2):
        assert cli.main(["db", "migrate", "--config", str(config)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"schema version {SCHEMA_VERSION}"] * 2
    store = opened(url)
    assert versions(store) == [SCHEMA_VERSION]
    store.close()


def test_relayd_db_migrate_says_why_it_cannot(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "relay.toml"
    config.write_text('[database]\nurl = "postgresql://relay@127.0.0.1:1/relay"\n')
    assert cli.main(["db", "migrate", "--config", str(config)]) == 1
    assert "relayd: cannot migrate the database: connection failed" in capsys.readouterr().err
