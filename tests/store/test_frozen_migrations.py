"""Migrations are frozen: a schema step does what it did when its version shipped.

The rule, checked on every migration of every backend: a migration reads no global
that can change after its version ships. The globals its code loads may be builtins,
and classes, functions and modules from outside `daemon` (Peewee, the standard
library); never a data value (a code list, a SQL string: copy it in as a literal),
and nothing of Relay's (`daemon.*`: a constant such as `domain.jobs.DL_STATES`, a
model, whose table grows with later versions, or a helper). A database migrated from
its backend's first version then has the schema a new one is created with.
"""

from __future__ import annotations

import builtins
import dis
import json
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from peewee import Database

from daemon.domain.jobs import DL_STATES
from daemon.store import postgres, sqlite
from daemon.store.backend import SqlStore
from daemon.store.models import RoundModel
from daemon.store.schema import SCHEMA_VERSION
from tests.store import postgres as test_postgres
from tests.store.older import undo_to_version_1, undo_version_11

MIGRATIONS = [(name, version, step) for name, steps in
              (("sqlite", sqlite.MIGRATIONS), ("postgres", postgres.MIGRATIONS))
              for version, step in sorted(steps.items())]
CODES = ("batch_cancelled", "batch_expired")  # a module-level data value, for the checks


def globals_loaded(function: Callable[..., Any]) -> set[str]:
    """The global names `function`'s code loads, its comprehensions' and inner
    functions' included."""
    names: set[str] = set()
    codes = [function.__code__]
    while codes:
        code = codes.pop()
        names |= {i.argval for i in dis.get_instructions(code)
                  if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return names


def unfrozen(function: Callable[..., Any]) -> list[str]:
    """The globals `function` loads that the rule refuses, by name."""
    refused = []
    for name in sorted(globals_loaded(function)):
        if name not in function.__globals__:
            if hasattr(builtins, name):
                continue
            refused.append(name)  # not defined at all: the step could not run
            continue
        value = function.__globals__[name]
        if isinstance(value, types.ModuleType):
            origin = value.__name__
        elif isinstance(value, type | types.FunctionType | types.BuiltinFunctionType):
            origin = value.__module__
        else:
            refused.append(name)  # a data value: it may change under the step
            continue
        if origin == "daemon" or origin.startswith("daemon."):
            refused.append(name)
    return refused


@pytest.mark.parametrize(("backend", "version", "step"), MIGRATIONS,
                         ids=[f"{name}-{version}" for name, version, _ in MIGRATIONS])
def test_every_migration_is_frozen(backend: str, version: int,
                                   step: Callable[[Database], None]) -> None:
    assert unfrozen(step) == [], (
        f"{backend} migration {version} ({step.__name__}) reads globals that can change "
        "after its version ships: copy their values in as literals")


def test_the_check_refuses_what_the_rule_forbids() -> None:
    def reads_a_domain_constant(db: Database) -> None:  # migration 10 as it was
        codes = ", ".join(f"'{code}'" for code in sorted(DL_STATES))
        db.execute_sql(f"UPDATE job SET canceled = 0 WHERE error_code IN ({codes})")

    def creates_a_table_from_its_model(db: Database) -> None:
        db.create_tables([RoundModel])

    def reads_a_module_constant(db: Database) -> None:
        db.execute_sql("UPDATE job SET canceled = 0 WHERE error_code IN (%s)", CODES)

    def frozen(db: Database) -> None:
        db.execute_sql("UPDATE job SET errors = ?", (json.dumps(sorted(["b", "a"])),))

    assert unfrozen(reads_a_domain_constant) == ["DL_STATES"]
    assert unfrozen(creates_a_table_from_its_model) == ["RoundModel"]
    assert unfrozen(reads_a_module_constant) == ["CODES"]
    assert unfrozen(frozen) == []


def schema_of(store: SqlStore) -> set[tuple[Any, ...]]:
    """Every column (table, name, type, not null, primary key) and every index (table,
    name, whether unique, columns): what a step must create as a new database has it.
    Column order and defaults are left out: `ADD COLUMN` appends, and needs a default
    for `NOT NULL`."""
    db = store.db
    if isinstance(store, postgres.PostgresStore):
        return set(db.execute_sql(
            "SELECT table_name, column_name, data_type, is_nullable FROM "
            "information_schema.columns WHERE table_schema = current_schema()").fetchall()) | {
            ("index", *row) for row in db.execute_sql(
                "SELECT tablename, indexdef FROM pg_indexes "
                "WHERE schemaname = current_schema()").fetchall()}
    found: set[tuple[Any, ...]] = set()
    for table in db.get_tables():
        found |= {(table, name, kind, notnull, pk) for _, name, kind, notnull, _, pk
                  in db.execute_sql(f'PRAGMA table_info("{table}")').fetchall()}
        for _, index, unique, *_ in db.execute_sql(f'PRAGMA index_list("{table}")').fetchall():
            columns = tuple(c for *_, c in db.execute_sql(f'PRAGMA index_info("{index}")'))
            found.add(("index", table, index, unique, columns))
    return found


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'relay.db'}"
    else:
        with test_postgres.fresh_schema() as fresh:
            yield fresh


def test_a_database_migrated_from_the_first_version_has_a_new_ones_schema(
        url: str, tmp_path: Path) -> None:
    from daemon.store import open_store

    store = open_store(url)
    assert isinstance(store, SqlStore)
    new = schema_of(store)
    first = 1 if isinstance(store, sqlite.SqliteStore) else 10
    if first == 1:
        undo_to_version_1(store.db)
    else:
        undo_version_11(store.db)
    store.db.execute_sql(f"UPDATE schema_version SET version = {first}")
    assert schema_of(store) != new
    store.close()

    migrated = open_store(url)
    assert isinstance(migrated, SqlStore)
    assert migrated.schema_version() == SCHEMA_VERSION
    assert schema_of(migrated) == new
    migrated.close()
