"""Retention (`[retention] days`): which ended jobs are old enough to purge, and how the
purge is cut into small writes.

A job is purged once it ended (a terminal status) more than `days` days ago, with its
rows, attempts, rounds, workflow state and result files. Kept whatever their age: cron
templates, and each template's latest run (the TUI and `relay ls` show it beside the
template). Unset, nothing is purged: the store keeps every job, as before retention.

The purge deletes `ROWS_PER_WRITE` rows (and what hangs off them) per transaction, so no
write holds the database's lock for long, and at most `ROWS_PER_TICK` a sweep tick, so the
sweeper's thread returns to its timer; what is left goes on at the next tick.
"""

from __future__ import annotations

from dataclasses import dataclass

DAY_S = 86_400.0
PURGE_EVERY_S = 600.0  # how often the sweeper looks for jobs past retention
ROWS_PER_WRITE = 1_000  # rows deleted in one transaction
ROWS_PER_TICK = 20_000  # rows deleted in one sweep tick, at most
JOBS_PER_LOOK = 100  # purgeable jobs read at a time
RECLAIM_PAGES = 4_096  # free pages SQLite gives back after a pass (16 MiB of 4 KiB pages)


def cutoff(now: float, days: int) -> float:
    """Jobs that ended before this instant are past retention."""
    return now - days * DAY_S


@dataclass(frozen=True)
class Purgeable:
    """An ended job past retention: its store key, its id, and the files it owns."""

    seq: int
    id: str
    files: tuple[str, ...]  # its input, output and error file ids, where set


@dataclass(frozen=True)
class Purged:
    """What one purge pass deleted; `more` when it stopped at its row allowance."""

    jobs: int = 0
    rows: int = 0
    files: int = 0
    more: bool = False


@dataclass(frozen=True)
class TableSize:
    """One table in `relayd db stats`: its rows and, where the backend tells, its bytes
    (data and indexes)."""

    name: str
    rows: int
    bytes: int | None
