"""Faults of the store's own storage: a full disk, a quota, a read-only filesystem, a
database I/O error. `store_fault` tells them apart from everything else, so the API
answers them with their own status and code, and health reports them.

    StoreFault
     ├── space (507 insufficient_storage): no room left (ENOSPC, EDQUOT, SQLITE_FULL,
     │   PostgreSQL's disk_full)
     └── unavailable (503 store_unavailable): anything else the storage refused
         (EROFS, EIO, a locked or unreachable database, a PostgreSQL server that is
         shutting down, out of connections or read-only)
"""

from __future__ import annotations

import errno
import logging
import sqlite3
from dataclasses import dataclass

import peewee
import psycopg

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


@dataclass(frozen=True)
class StoreFault:
    code: str  # SPACE or UNAVAILABLE
    detail: str  # what the storage said

    @property
    def status(self) -> int:
        return 507 if self.code == SPACE else 503


def store_fault(exc: BaseException) -> StoreFault | None:
    """The storage fault `exc` is (or was caused by), or None for any other error. A
    lack of space anywhere in the chain wins: SQLite's "cannot rollback" after a full
    disk is, underneath, the full disk."""
    faults = [f for f in map(_classify, _chain(exc)) if f is not None]
    space = [f for f in faults if f.code == SPACE]
    return next(iter(space or faults), None)


def _chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _classify(exc: BaseException) -> StoreFault | None:
    text = str(exc)
    state = getattr(exc, "sqlstate", None)
    if isinstance(state, str) and state.startswith(_SPACE_STATES + _STORAGE_STATES):
        return StoreFault(SPACE if state.startswith(_SPACE_STATES) else UNAVAILABLE, text)
    # Only operational errors that are the storage's: "no such column" or "too many SQL
    # variables" is a bug, not storage, and keeps its traceback. psycopg's own (a cursor
    # used directly, which peewee does not wrap) say a lost connection without a SQLSTATE.
    if isinstance(exc, sqlite3.OperationalError | peewee.OperationalError
                  | psycopg.OperationalError | psycopg.InterfaceError):
        lowered = text.lower()
        if any(word in lowered for word in _SPACE_WORDS):
            return StoreFault(SPACE, text)
        if any(word in lowered for word in _STORAGE_WORDS):
            return StoreFault(UNAVAILABLE, text)
        return None
    if isinstance(exc, OSError) and exc.errno is not None:
        if exc.errno in _SPACE_ERRNOS:
            return StoreFault(SPACE, text)
        if exc.errno in _STORAGE_ERRNOS:
            return StoreFault(UNAVAILABLE, text)
    return None


def log_failure(log: logging.Logger, what: str, exc: BaseException) -> StoreFault | None:
    """Log a store call that failed: one line for a storage fault (which it returns, for
    health to record), a traceback for anything else (a bug)."""
    fault = store_fault(exc)
    if fault is None:
        log.error(what, exc_info=exc)
    else:
        log.warning("%s (%s)", what, fault.detail)
    return fault
