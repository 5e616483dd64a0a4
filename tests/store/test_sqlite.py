"""The SQLite backend: opening by URL, schema creation, pragmas, the version rows and the
migrations from version 1 (webhook state matched inside JSON, now its own column; tool
rounds; the workflows switch; workflow state)."""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from pathlib import Path

import pytest

from daemon.domain.jobs import JobDraft, RowDraft
from daemon.store import UnsupportedDatabase, open_store, sqlite
from daemon.store.schema import SCHEMA_VERSION
from daemon.store.sqlite import SqliteStore, open_sqlite
from tests.store.older import undo_to_version_1

NOW = 1_700_000_000.0
MB = 1024 * 1024


def versions(store: SqliteStore) -> list[int]:
    return [v for (v,) in store.db.execute_sql("SELECT version FROM schema_version")]


def test_schema_version_rows(tmp_path: Path) -> None:
    store = open_sqlite(tmp_path / "relay.db")
    assert versions(store) == [SCHEMA_VERSION]
    store.close()


def test_tables_exist(tmp_path: Path) -> None:
    store = open_sqlite(tmp_path / "relay.db")
    tables = set(store.db.get_tables())
    store.close()
    assert {"schema_version", "workspace", "api_key", "job", "row", "attempt", "file"} <= tables


def test_pragmas_are_applied(tmp_path: Path) -> None:
    store = open_sqlite(tmp_path / "relay.db")
    (mode,) = store.db.execute_sql("PRAGMA journal_mode").fetchone()
    (fk,) = store.db.execute_sql("PRAGMA foreign_keys").fetchone()
    store.close()
    assert (mode, fk) == ("wal", 1)


def test_a_new_file_gives_pages_back_and_a_connection_asks_nothing_a_full_disk_refuses(
        tmp_path: Path) -> None:
    store = open_sqlite(tmp_path / "relay.db")
    (vacuum,) = store.db.execute_sql("PRAGMA auto_vacuum").fetchone()
    store.close()
    assert vacuum == sqlite.INCREMENTAL
    # Asking for auto_vacuum is a write, which a full disk refuses: a read on a new
    # connection (an API thread's) would then fail. Only the new file asks for it.
    assert "auto_vacuum" not in sqlite.PRAGMAS
    assert open_sqlite(tmp_path / "relay.db").db.execute_sql(
        "PRAGMA auto_vacuum").fetchone() == (sqlite.INCREMENTAL,)


def test_reopening_keeps_data_and_adds_no_version(tmp_path: Path) -> None:
    store = open_sqlite(tmp_path / "relay.db")
    store.ensure_workspace("acme", now=NOW)
    store.close()
    again = open_sqlite(tmp_path / "relay.db")
    assert again.workspace("acme") is not None
    assert versions(again) == [SCHEMA_VERSION]
    again.close()


def test_open_creates_missing_parent_dirs(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "relay.db"
    open_sqlite(path).close()
    assert path.exists()


def test_open_store_reads_the_url(tmp_path: Path) -> None:
    path = tmp_path / "by-url.db"
    store = open_store(f"sqlite:///{path}")
    store.close()
    assert path.exists()


@pytest.mark.parametrize("url", ["mysql://db/relay", "relay.db"])
def test_open_store_refuses_a_backend_it_does_not_have(url: str) -> None:
    with pytest.raises(UnsupportedDatabase, match=r"database\.url"):
        open_store(url)


def _version_1_database(path: Path) -> None:
    """A database as version 1 left it: no `webhook_state`; a claim inside `webhook`."""
    store = open_sqlite(path)
    ws = store.ensure_workspace("acme", now=NOW)
    undo_to_version_1(store.db)
    store.db.execute_sql("UPDATE schema_version SET version = 1")
    for seq, (status, webhook) in enumerate([
        ("completed", None),  # ended, never claimed: still due
        ("completed", json.dumps({"state": "sending", "claimed_at": NOW})),  # cut off
        ("cancelled", json.dumps({"status_code": 200, "error": None})),  # delivered
        ("running", None),  # not ended: nothing due yet
    ], start=1):
        store.db.execute_sql(
            "INSERT INTO job (seq, id, workspace_id, dialect, name, model, endpoint, status, "
            "priority, tier, total, completed, failed, dead_letter, input_tokens, "
            "output_tokens, cost_nano_usd, stamps, created_at, webhook_url, webhook) "
            "VALUES (?, ?, ?, 'relay', 'n', 'm', '/v1', ?, 0, 'standard', 0, 0, 0, 0, 0, 0, 0, "
            "'{}', ?, 'https://example.com/hook', ?)",
            (seq, f"{seq:032x}", ws.id, status, NOW, webhook))
    store.close()


def test_migrations_from_version_1(tmp_path: Path) -> None:
    path = tmp_path / "relay.db"
    _version_1_database(path)
    store = open_sqlite(path)
    states = dict(store.db.execute_sql("SELECT seq, webhook_state FROM job").fetchall())
    assert states == {1: "queued", 2: "sending", 3: "done", 4: None}
    assert versions(store) == list(range(1, SCHEMA_VERSION + 1))
    assert store.workspace("acme").workflows is False  # type: ignore[union-attr]
    assert [j.seq for j in store.unsent_webhooks()] == [1]
    assert store.abandon_claimed_webhooks(now=NOW) == 1
    store.close()


def test_jobs_from_before_token_details_read_zero_of_them(tmp_path: Path) -> None:
    path = tmp_path / "relay.db"
    _version_1_database(path)
    store = open_sqlite(path)
    job = store.job_by_seq(1)
    store.close()
    assert job is not None and (job.cached_tokens, job.reasoning_tokens) == (0, 0)


def test_a_migrated_database_finds_rows_by_custom_id_with_an_index(tmp_path: Path) -> None:
    path = tmp_path / "relay.db"
    _version_1_database(path)
    store = open_sqlite(path)
    plan = store.db.execute_sql(
        'EXPLAIN QUERY PLAN SELECT id FROM "row" WHERE job_id = 1 AND custom_id = \'x\''
    ).fetchall()
    store.probe_write(now=NOW)
    store.probe_write(now=NOW + 1)
    probes = store.db.execute_sql("SELECT id, at FROM probe").fetchall()
    store.close()
    assert any("rowmodel_job_id_custom_id" in str(step) for step in plan), plan
    assert probes == [(1, NOW + 1)]


def wal_size(store: SqliteStore) -> int:
    return os.path.getsize(f"{store.db.database}-wal")


def test_the_wal_is_truncated_once_past_its_limit_and_no_reader_holds_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As found: large workflow writes while a reader holds an older snapshot grow the
    log (SQLite cannot restart it meanwhile) and, before this, it never shrank again."""
    monkeypatch.setattr(sqlite, "WAL_LIMIT", 4 * MB)  # the rule, at a test's scale
    store = open_sqlite(tmp_path / "relay.db")
    ws = store.ensure_workspace("acme", now=NOW)
    job = store.create_job(JobDraft(
        id="j" * 32, workspace_id=ws.id, dialect="openai", name="big states",
        model="gpt-4o-mini", endpoint="/v1/chat/completions", status="queued", priority=0,
        created_at=NOW), [RowDraft(custom_id="flow", body={"messages": []})])
    (row,) = store.pending_rows(job, after_id=0, limit=1)
    states = [{"phase": "running", "requests": [secrets.token_hex(MB // 2)]}  # 1 MB each
              for _ in range(13)]
    reader = sqlite3.connect(tmp_path / "relay.db")
    try:
        store.save_workflows([(row.id, {"phase": "deliver"}, None)])  # in the log, then
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM job").fetchone()  # a snapshot that reads it
        for state in states[:12]:
            store.save_workflows([(row.id, state, None)])
        held = wal_size(store)
        assert held > 12 * MB  # the reader keeps the log from restarting: it grows
        reader.execute("COMMIT")

        store.save_workflows([(row.id, states[12], None)])  # the next write truncates it

        assert wal_size(store) <= 4 * MB < held
        assert store.workflow(row.id) is not None  # nothing lost
        reader.execute("BEGIN")  # and a reader sees every write
        (stored,) = reader.execute("SELECT state FROM workflow").fetchone()
        assert json.loads(stored) == states[12]
    finally:
        reader.close()
        store.close()


def test_the_wal_limit_is_also_sqlites_journal_size_limit(tmp_path: Path) -> None:
    store = open_sqlite(tmp_path / "relay.db")
    (limit,) = store.db.execute_sql("PRAGMA journal_size_limit").fetchone()
    store.close()
    assert limit == sqlite.WAL_LIMIT == 64 * MB
