"""The files that outlive their use: leftovers of a crash, swept once at start
(`sweep_leftovers`; the rule is `domain/leftovers.py`), and files past their
`expires_at`, deleted by the `FileSweeper` on a timer (`expire_files`).

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


class FileSweeper(pykka.ThreadingActor):
    """Runs `expire_files` at most every `every` seconds of `tick(now)`; on its own
    thread, so the timer that ticks it never waits on the store or the disk."""

    def __init__(self, *, repo: Store, files: FileStore, every: float = EXPIRY_EVERY_S) -> None:
        super().__init__()
        self.repo = repo
        self.files = files
        self.every = Every(every)

    @contained
    def tick(self, now: float) -> None:
        if self.every.due(now):
            expire_files(self.repo, self.files, now=now)


class FileSweeperProxy(ActorProxyOf[FileSweeper]):
    tick = message(FileSweeper.tick)
