"""One SQLite database, one process: `relayd serve` holds an exclusive OS lock
(`flock`) on `<database>.lock`, beside the database file, for as long as it runs, and
a second `relayd serve` on the same database is refused at start, told the holder's
pid and address. Two would both run work (and the second would take every lease and
node row of the first: on SQLite a starting node is the only one).

The lock file holds the holder's pid, address and start time as JSON, for the process
refused. The OS releases the lock when the holder's descriptor closes, however the
process ends (`kill -9` included), so a file left behind never blocks a start: only a
live holder does. The descriptor is not inherited by child processes.

The short `relayd` commands (`keys`, `workspaces`, `webhooks`, `db migrate`) take no
lock: they run a few transactions beside a running daemon, which SQLite serialises.
PostgreSQL takes no lock either: nodes share that database by design.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

LOCK_SUFFIX = ".lock"
READ_TRIES = 20  # a holder writes its name just after it locks: wait up to 20 × 25 ms
READ_PAUSE_S = 0.025


@dataclass(frozen=True)
class Holder:
    """Who holds a database: what the lock file says."""

    pid: int
    address: str
    since: float

    def text(self) -> str:
        return json.dumps({"pid": self.pid, "address": self.address, "since": self.since})

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        """The holder a lock file names; None if it names none (empty, or garbage)."""
        try:
            found = json.loads(text)
            return cls(int(found["pid"]), str(found["address"]), float(found["since"]))
        except (ValueError, TypeError, KeyError):
            return None


class DatabaseInUse(RuntimeError):
    """Another live process holds this SQLite database."""

    def __init__(self, database: Path, holder: Holder | None) -> None:
        self.database = database
        self.holder = holder
        super().__init__(in_use_message(database, holder))


def in_use_message(database: Path, holder: Holder | None) -> str:
    who = ("another process (it has not written its pid yet)" if holder is None else
           f"relayd pid {holder.pid} at {holder.address} (since "
           f"{datetime.fromtimestamp(holder.since, UTC):%Y-%m-%d %H:%M:%S} UTC)")
    return (f"the database {database} is in use by {who}. One SQLite database belongs "
            "to one process: stop that one first, or run several nodes on PostgreSQL "
            "([database] url; docs/deployment.md)")


def lock_path(database: Path) -> Path:
    return database.with_name(database.name + LOCK_SUFFIX)


class Ownership:
    """This process's hold on a database, until `release` (or the process's end)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd: int | None = fd

    def announce(self, holder: Holder) -> None:
        """Write who holds it (again, once the listener's port is known)."""
        assert self.fd is not None, "released"
        data = holder.text().encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)

    def release(self) -> None:
        """Unlock. The file stays: unlinking it would race a process locking it now."""
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = None


def own(database: Path, holder: Holder) -> Ownership:
    """Take `database` for this process, or raise DatabaseInUse naming its holder."""
    path = lock_path(database)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # not truncated: the holder's name
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES):
            raise
        raise DatabaseInUse(database, _read_holder(path)) from None
    ownership = Ownership(path, fd)
    ownership.announce(holder)
    return ownership


def _read_holder(path: Path) -> Holder | None:
    """The holder named in the file; it may be between locking and writing: a few
    short tries."""
    for _ in range(READ_TRIES):
        try:
            holder = Holder.parse(path.read_text())
        except OSError:
            holder = None
        if holder is not None:
            return holder
        time.sleep(READ_PAUSE_S)
    return None
