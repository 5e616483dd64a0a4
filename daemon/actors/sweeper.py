"""What outlives its use: leftovers of a crash, swept once at start (`sweep_leftovers`;
the rule is `domain/leftovers.py`); files past their `expires_at`, deleted by the
`Sweeper` on a timer (`expire_files`), with the idempotency keys older than 24 hours
(`sweep_keys`); and, with `[retention] days`, jobs that ended
longer ago than that, purged with their rows and files (`purge_ended`).

Records go first, bytes second: a crash in between leaves bytes no live record names,
which the next start sweeps as an orphan once they are old enough.
"""

from __future__ import annotations

import logging

import pykka

from daemon.actors.contained import contained
from daemon.actors.proxies import ActorProxyOf, message
from daemon.domain.every import Every
from daemon.domain.files import FileRecord
from daemon.domain.leftovers import leftovers, orphan_candidates
from daemon.domain.retention import (
    JOBS_PER_LOOK,
    PURGE_EVERY_S,
    RECLAIM_PAGES,
    ROWS_PER_TICK,
    ROWS_PER_WRITE,
    Purged,
    cutoff,
)
from daemon.store.faults import StoreError
from daemon.store.files import FileStore
from daemon.store.interface import Store

log = logging.getLogger("relay.files")

EXPIRY_EVERY_S = 60.0  # how often expired files are deleted; the API hides them at once


def sweep_leftovers(store: Store, files: FileStore, *, now: float) -> list[str]:
    """Delete what `domain.leftovers` calls leftovers; returns their names. `now` is wall
    time: it is compared with the files' mtimes."""
    found = files.listing()
    recorded = store.recorded_files(orphan_candidates(found, now=now))
    doomed = leftovers(found, recorded, now=now)
    for leftover in doomed:
        try:
            files.remove(files.root / leftover.name)
        except (OSError, StoreError) as exc:  # garbage never stops a start (nor a bad disk)
            log.warning("could not sweep %s: %s", leftover.name, exc)
    if doomed:
        log.info("swept %d leftover file(s) of an earlier crash", len(doomed))
    return [f.name for f in doomed]


def expire_files(store: Store, files: FileStore, *, now: float) -> list[FileRecord]:
    """Delete the files whose `expires_at` is past: their records, then their bytes."""
    expired = store.expire_files(now=now)
    for record in expired:
        files.remove(record.path)
    return expired


def purge_ended(store: Store, files: FileStore, *, now: float, days: int,
                rows: int = ROWS_PER_TICK) -> Purged:
    """One pass of retention, deleting at most `rows` rows: the jobs past it, emptied a
    chunk a write and then deleted one after another with their files, and the old
    records of deleted files; then free pages go back to the file system. `more` when
    the pass stopped with work left."""
    before = cutoff(now, days)
    targets = store.purgeable_jobs(before)
    jobs = gone = removed = 0
    more = False
    for target in targets:
        while gone < rows and (went := store.purge_rows(
                target.seq, limit=min(ROWS_PER_WRITE, rows - gone))):
            gone += went
        paths = store.purge_job(target)
        if paths is None:  # rows left: the allowance is spent
            more = True
            break
        for path in paths:
            files.remove(path)
        jobs, removed = jobs + 1, removed + len(paths)
    else:
        store.purge_deleted_files(before)
        more = len(targets) == JOBS_PER_LOOK
    if gone or jobs:
        more = store.reclaim(pages=RECLAIM_PAGES) or more
        log.info("retention purged %d job(s) and %d row(s) that ended over %d day(s) ago",
                 jobs, gone, days)
    return Purged(jobs=jobs, rows=gone, files=removed, more=more)


class Sweeper(pykka.ThreadingActor):
    """Runs `expire_files` at most every `every` seconds of `tick(now)`, and with
    `retention_days`, `purge_ended` every `PURGE_EVERY_S`, tick after tick while a pass
    leaves work; on its own thread, so the timer that ticks it never waits on the store
    or the disk."""

    def __init__(self, *, repo: Store, files: FileStore, every: float = EXPIRY_EVERY_S,
                 retention_days: int | None = None, rows_per_tick: int = ROWS_PER_TICK) -> None:
        super().__init__()
        self.repo = repo
        self.files = files
        self.every = Every(every)
        self.retention_days = retention_days
        self.rows_per_tick = rows_per_tick
        self.purge_every = Every(PURGE_EVERY_S)
        self.purging = False  # the last pass left work: the next tick goes on

    @contained
    def tick(self, now: float) -> None:
        if self.every.due(now):
            expire_files(self.repo, self.files, now=now)
            self.repo.sweep_keys(now=now)  # idempotency keys past their 24 hours
        if self.retention_days is not None and (self.purge_every.due(now) or self.purging):
            self.purging = False  # a failing pass waits for the timer, not every tick
            self.purging = purge_ended(self.repo, self.files, now=now, days=self.retention_days,
                                       rows=self.rows_per_tick).more


class SweeperProxy(ActorProxyOf[Sweeper]):
    tick = message(Sweeper.tick)
