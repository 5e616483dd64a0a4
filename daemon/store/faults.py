"""Faults of the store's own storage (a full disk, a quota, a read-only filesystem, a
database I/O error), and the store boundary where a driver's error becomes the store's
own. The store's errors hang in Relay's one tree (`domain/errors.py`):

* StoreError                 the storage refused; `detail` is what it said
  x StorageFull              also an InsufficientStorage (507, insufficient_storage): no
                             room left (ENOSPC, EDQUOT, SQLITE_FULL, PostgreSQL's disk_full)
  x StoreUnavailable         also an Unavailable (503, store_unavailable): anything else
                             the storage refused (EROFS, EIO, a locked or unreachable
                             database, a PostgreSQL server that is shutting down, out of
                             connections or read-only)

`store_fault` is the one classifier, used at the boundary only: every method of the
`Store` interface and of the `FileStore` (`guard`), opening a store (`guarded`), and a
file being written (`PartialFile`'s `with` block) raise the store's error from the
driver's (`raise_fault`). Callers catch `StoreError`, never a driver's exception. An
error the classifier does not know passes unchanged: a value the database cannot hold
or a bug is no storage fault (`domain/unstorable.py` splits a group around it).
"""

from __future__ import annotations

import errno
import functools
import inspect
import logging
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import peewee

from daemon.domain.errors import InsufficientStorage, RelayError, Unavailable

SPACE = "insufficient_storage"
UNAVAILABLE = "store_unavailable"

_SPACE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_STORAGE_ERRNOS = {errno.EROFS, errno.EIO}
# PostgreSQL's SQLSTATEs (psycopg errors carry `sqlstate`): disk_full; then the classes of
# connection exceptions, insufficient resources, operator intervention and system errors,
# a read-only transaction (a standby), and the conflicts a transaction meets with others
# (serialization failure, deadlock, lock not available, a statement timeout): each is
# over once tried again, and never the fault of the data it wrote (an outcome split
# apart on one would fail a good row).
_SPACE_STATES = ("53100",)
_STORAGE_STATES = ("08", "53", "57P", "58", "25006", "40001", "40P01", "55P03", "57014")
_SPACE_WORDS = ("database or disk is full", "disk is full", "no space left")
_STORAGE_WORDS = ("disk i/o error", "readonly", "read-only", "locked", "busy",
                  "unable to open", "cannot rollback", "cannot commit", "malformed",
                  "not a database", "connection", "server closed")


F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


class StoreError(RelayError):
    """The store's storage refused a call; nothing of the call was kept (each write is
    one transaction)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail  # what the storage said


class StorageFull(StoreError, InsufficientStorage):
    code = SPACE


class StoreUnavailable(StoreError, Unavailable):
    type = "server_error"  # the store's fault, where a plain Unavailable is the daemon's
    code = UNAVAILABLE


def store_fault(exc: BaseException) -> StoreError | None:
    """The storage fault `exc` is (or was caused by), or None for any other error. A
    lack of space anywhere in the chain wins: SQLite's "cannot rollback" after a full
    disk is, underneath, the full disk."""
    faults = [f for f in map(_classify, _chain(exc)) if f is not None]
    space = [f for f in faults if isinstance(f, StorageFull)]
    return next(iter(space or faults), None)


def _chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _classify(exc: BaseException) -> StoreError | None:
    if isinstance(exc, StoreError):
        return exc
    text = str(exc)
    state = getattr(exc, "sqlstate", None)
    if isinstance(state, str) and state.startswith(_SPACE_STATES + _STORAGE_STATES):
        return (StorageFull if state.startswith(_SPACE_STATES) else StoreUnavailable)(text)
    # Only operational errors that are the storage's: "no such column" or "too many SQL
    # variables" is a bug, not storage, and keeps its traceback. psycopg's own (a cursor
    # used directly, which peewee does not wrap) say a lost connection without a SQLSTATE.
    if isinstance(exc, _operational_errors()):
        lowered = text.lower()
        if any(word in lowered for word in _SPACE_WORDS):
            return StorageFull(text)
        if any(word in lowered for word in _STORAGE_WORDS):
            return StoreUnavailable(text)
        return None
    if isinstance(exc, OSError) and exc.errno is not None:
        if exc.errno in _SPACE_ERRNOS:
            return StorageFull(text)
        if exc.errno in _STORAGE_ERRNOS:
            return StoreUnavailable(text)
    return None


def _operational_errors() -> tuple[type[BaseException], ...]:
    """The drivers' operational errors. psycopg's only where it is loaded: a store on
    SQLite never imports it (`daemon.store.drivers`), and then none of its errors exists."""
    errors: tuple[type[BaseException], ...] = (sqlite3.OperationalError,
                                                 peewee.OperationalError)
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None:
        errors += (psycopg.OperationalError, psycopg.InterfaceError)
    return errors


def raise_fault(exc: Exception) -> None:
    """The boundary: raise the store's error for `exc` (from it) if it is a storage
    fault not yet translated; return if it is anything else."""
    if isinstance(exc, StoreError):
        return
    fault = store_fault(exc)
    if fault is not None:
        raise fault from exc


@contextmanager
def translated() -> Iterator[None]:
    """A block at the store boundary: a storage fault leaves it as a `StoreError`."""
    try:
        yield
    except Exception as exc:
        raise_fault(exc)
        raise


def guarded(function: F) -> F:
    """`function` at the store boundary (a generator's faults are met as it is read)."""
    if inspect.isgeneratorfunction(function):
        @functools.wraps(function)
        def generator(*args: Any, **kwargs: Any) -> Any:
            with translated():
                return (yield from function(*args, **kwargs))

        return generator  # type: ignore[return-value]

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        with translated():
            return function(*args, **kwargs)

    return call  # type: ignore[return-value]


def guard(cls: C, names: Iterable[str]) -> C:
    """`cls` with each of its methods `names` `guarded`."""
    for name in names:
        setattr(cls, name, guarded(getattr(cls, name)))
    return cls


def log_failure(log: logging.Logger | logging.LoggerAdapter[logging.Logger], what: str,
                exc: BaseException) -> StoreError | None:
    """Log a call that failed: one line for a storage fault (which it returns, for
    health to record), a traceback for anything else (a bug)."""
    if not isinstance(exc, StoreError):
        log.error(what, exc_info=exc)
        return None
    log.warning("%s (%s)", what, exc.detail)
    return exc
