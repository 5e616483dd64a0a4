"""The PostgreSQL backend: opening by URL (both schemes), 64-bit columns, schema changes
that take turns (an advisory lock), row locks that make a read-then-write atomic between
connections, a dropped connection replaced, and its errors read as storage faults."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import peewee
import psycopg
import pytest

from daemon.store import open_store
from daemon.store.faults import SPACE, UNAVAILABLE, StoreUnavailable, store_fault
from daemon.store.interface import Store
from daemon.store.postgres import SCHEMA_LOCK, PostgresStore
from daemon.store.schema import SCHEMA_VERSION
from tests.store import postgres
from tests.store.conftest import NOW, MakeJob, MakeOutcome, postgres_store


@pytest.fixture
def pg(tmp_path: Path) -> Iterator[Store]:
    with postgres_store(tmp_path) as store:
        yield store


def in_thread(work: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Run `work` on a thread of its own (so on a connection of its own); its result,
    or what it raised, lands in the list."""
    found: list[Any] = []

    def run() -> None:
        try:
            found.append(work())
        except Exception as exc:
            found.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, found


def test_open_store_takes_both_schemes() -> None:
    with postgres.fresh_schema() as url:
        for scheme in ("postgresql", "postgres"):
            store = open_store(scheme + url.removeprefix("postgresql"))
            assert isinstance(store, PostgresStore)
            assert store.schema_version() == SCHEMA_VERSION
            store.close()


def test_columns_are_64_bit(pg: PostgresStore, make_job: MakeJob,
                            make_outcome: MakeOutcome) -> None:
    types = dict(pg.db.execute_sql(
        "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = current_schema()").fetchall())
    assert types["job.created_at"] == types["attempt.started_at"] == "double precision"
    assert types["job.seq"] == types["row.job_id"] == types["job.cost_nano_usd"] == "bigint"
    job = make_job(pg, rows=1, created_at=NOW + 0.123456)
    (row,) = pg.pending_rows(job, after_id=0, limit=1)
    pg.save_outcomes(job.seq, [(row.id, make_outcome(cost_nano_usd=5_000_000_000))], now=NOW)
    stored = pg.job_by_seq(job.seq)
    assert stored is not None
    assert (stored.created_at, stored.cost_nano_usd) == (NOW + 0.123456, 5_000_000_000)


def test_schema_changes_take_turns() -> None:
    """A node that starts while another holds the schema lock waits for it, then finds
    the schema made."""
    with postgres.fresh_schema() as url, psycopg.connect(url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", (SCHEMA_LOCK,))
        thread, found = in_thread(lambda: open_store(url))
        time.sleep(0.5)
        waited = thread.is_alive()
        other.execute("SELECT pg_advisory_unlock(%s)", (SCHEMA_LOCK,))
        thread.join(timeout=30)
        assert waited and isinstance(found[0], PostgresStore)
        assert found[0].schema_version() == SCHEMA_VERSION
        found[0].close()


def test_a_transition_waits_for_a_concurrent_writer_of_the_job(
        pg: PostgresStore, make_job: MakeJob) -> None:
    """Another connection cancels the job while a transition to running is decided: the
    transition reads the job only once that write is done, so the cancel is not lost."""
    job = make_job(pg)
    (schema,) = pg.db.execute_sql("SELECT current_schema()").fetchone()
    with psycopg.connect(postgres.schema_url(postgres.SERVER_URL, schema)) as other:
        other.execute("UPDATE job SET status = 'cancelling' WHERE seq = %s", (job.seq,))
        thread, found = in_thread(lambda: pg.transition(job.seq, "running", now=NOW))
        time.sleep(0.3)
        other.commit()
        thread.join(timeout=30)
    assert found == [None]
    assert pg.job_by_seq(job.seq).status == "cancelling"  # type: ignore[union-attr]


def test_one_outcome_stored_twice_at_once_counts_once(
        pg: PostgresStore, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    job = make_job(pg, rows=2)
    outcomes = [(w.id, make_outcome()) for w in pg.pending_rows(job, after_id=0, limit=2)]
    started = threading.Barrier(4)

    def save() -> Any:
        started.wait()
        try:
            return pg.save_outcomes(job.seq, outcomes, now=NOW)
        finally:
            pg.db.close()

    runs = [in_thread(save) for _ in range(4)]
    for thread, _ in runs:
        thread.join(timeout=30)
    assert sorted(found[0].completed for _, found in runs) == [0, 0, 0, 2]
    stored = pg.job_by_seq(job.seq)
    assert stored is not None and stored.completed == 2
    assert pg.row_counts(job.seq)["completed"] == 2


def test_a_connection_the_server_dropped_is_replaced(pg: PostgresStore) -> None:
    pg.ensure_workspace("acme", now=NOW)
    (pid,) = pg.db.execute_sql("SELECT pg_backend_pid()").fetchone()
    with psycopg.connect(postgres.SERVER_URL, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))
    with pytest.raises(StoreUnavailable) as raised:  # the call that finds it gone
        pg.workspace("acme")
    assert raised.value.code == UNAVAILABLE
    assert isinstance(raised.value.__cause__, peewee.DatabaseError | psycopg.Error)
    assert pg.workspace("acme") is not None
    with pg.write():  # and a transaction, too
        assert pg.workspaces()


def test_an_unreachable_server_is_a_storage_fault() -> None:
    with pytest.raises(StoreUnavailable) as raised:  # from peewee's OperationalError
        open_store("postgresql://relay@127.0.0.1:1/relay?connect_timeout=3")
    assert raised.value.code == UNAVAILABLE


@pytest.mark.parametrize(("error", "code"), [
    (psycopg.errors.DiskFull("could not extend file"), SPACE),
    (psycopg.errors.AdminShutdown("terminating connection"), UNAVAILABLE),
    (psycopg.errors.TooManyConnections("sorry, too many clients already"), UNAVAILABLE),
    (psycopg.errors.ReadOnlySqlTransaction("cannot execute INSERT"), UNAVAILABLE),
    (psycopg.errors.SerializationFailure("could not serialize access"), UNAVAILABLE),
    (psycopg.errors.DeadlockDetected("deadlock detected"), UNAVAILABLE),
    (psycopg.errors.LockNotAvailable("could not obtain lock"), UNAVAILABLE),
    (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"),
     UNAVAILABLE),
    (psycopg.errors.NumericValueOutOfRange("bigint out of range"), None),  # the data's
    (psycopg.errors.UniqueViolation("duplicate key value"), None),
])
def test_server_errors_are_read_by_their_sqlstate(error: Exception, code: str | None) -> None:
    fault = store_fault(error)
    assert (fault.code if fault else None) == code
