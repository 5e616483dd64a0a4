"""Telling the store's storage faults apart from every other error."""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator

import peewee
import psycopg
import pytest

from daemon.store.backend import INTERFACE, SqlStore
from daemon.store.faults import (
    SPACE,
    UNAVAILABLE,
    StorageFull,
    StoreError,
    StoreUnavailable,
    guard,
    guarded,
    store_fault,
)


@pytest.mark.parametrize(("exc", "code"), [
    (sqlite3.OperationalError("database or disk is full"), SPACE),
    (peewee.OperationalError("database or disk is full"), SPACE),
    (OSError(errno.ENOSPC, "No space left on device"), SPACE),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), SPACE),
    (OSError(errno.EFBIG, "File too large"), SPACE),
    (sqlite3.OperationalError("disk I/O error"), UNAVAILABLE),
    (peewee.OperationalError("attempt to write a readonly database"), UNAVAILABLE),
    (peewee.OperationalError("database is locked"), UNAVAILABLE),
    (OSError(errno.EROFS, "Read-only file system"), UNAVAILABLE),
    (OSError(errno.EIO, "Input/output error"), UNAVAILABLE),
    # psycopg's own, from a cursor peewee does not wrap, after pg_terminate_backend
    (psycopg.OperationalError("consuming input failed: server closed the connection "
                              "unexpectedly"), UNAVAILABLE),
    (psycopg.InterfaceError("the connection is closed"), UNAVAILABLE),
])
def test_storage_faults_are_classified(exc: BaseException, code: str) -> None:
    fault = store_fault(exc)
    assert fault is not None and fault.code == code
    assert isinstance(fault, StorageFull if code == SPACE else StoreUnavailable)
    assert fault.detail == str(exc)


@pytest.mark.parametrize("exc", [
    ValueError("bad input"),
    KeyError("x"),
    sqlite3.IntegrityError("UNIQUE constraint failed"),
    peewee.IntegrityError("UNIQUE constraint failed"),
    sqlite3.ProgrammingError("bad binding"),
    FileNotFoundError(errno.ENOENT, "No such file"),
    PermissionError(errno.EACCES, "Permission denied"),
    OSError("no errno"),
    sqlite3.OperationalError("no such column: x"),  # a bug in a query, not the storage
    peewee.OperationalError("too many SQL variables"),
    psycopg.InterfaceError("the query has 2 placeholders but 1 parameters were passed"),
])
def test_other_errors_are_not_storage_faults(exc: BaseException) -> None:
    assert store_fault(exc) is None


def test_a_fault_is_found_behind_the_error_it_caused() -> None:
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise RuntimeError("writing the result file failed") from inner
    except RuntimeError as outer:
        fault = store_fault(outer)
    assert fault is not None and fault.code == SPACE


def test_a_cycle_of_causes_ends() -> None:
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__, b.__cause__ = b, a
    assert store_fault(a) is None


def test_a_full_disk_behind_a_failed_rollback_is_a_full_disk() -> None:
    try:
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError:
            raise peewee.OperationalError("cannot rollback - no transaction is active")  # noqa: B904 - as SQLite chains it
    except peewee.OperationalError as outer:
        fault = store_fault(outer)
    assert fault is not None and fault.code == SPACE


# -- the boundary: `guarded` raises the store's error from a driver's storage fault -----


def test_a_guarded_call_raises_the_store_error_from_the_driver_error() -> None:
    driver = sqlite3.OperationalError("database or disk is full")

    @guarded
    def write() -> None:
        raise driver

    with pytest.raises(StorageFull) as raised:
        write()
    assert raised.value.__cause__ is driver and raised.value.detail == str(driver)


def test_a_guarded_generator_is_guarded_as_it_is_read() -> None:
    @guarded
    def rows() -> Iterator[int]:
        yield 1
        raise peewee.OperationalError("disk I/O error")

    read = rows()
    assert next(read) == 1
    with pytest.raises(StoreUnavailable):
        next(read)


def test_a_store_error_and_any_other_error_leave_a_guarded_call_unchanged() -> None:
    for error in (StoreUnavailable("database is locked"),
                  sqlite3.IntegrityError("UNIQUE constraint failed"), OverflowError("int")):
        @guarded
        def call(error: Exception = error) -> None:
            raise error

        with pytest.raises(type(error)) as raised:
            call()
        assert raised.value is error


def test_guard_wraps_the_named_methods_only() -> None:
    class Store:
        def write(self) -> None:
            raise OSError(errno.EROFS, "Read-only file system")

        def other(self) -> None:
            raise OSError(errno.EROFS, "Read-only file system")

    guard(Store, ["write"])
    with pytest.raises(StoreUnavailable):
        Store().write()
    with pytest.raises(OSError) as raised:
        Store().other()
    assert not isinstance(raised.value, StoreError)


def test_every_method_of_the_store_interface_is_guarded() -> None:
    """A method added to `Store` is at the boundary with no more code."""
    assert INTERFACE and all(hasattr(getattr(SqlStore, name), "__wrapped__")
                             for name in INTERFACE)
