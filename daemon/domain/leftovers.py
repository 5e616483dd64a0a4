"""Leftovers under `<data_dir>/files`: which files a start may delete.

Every file is written as `<id>.partial` and renamed to `<id>` once complete; its record
is stored after the rename. So a crash (`kill -9`) leaves two kinds of leftover: a
`.partial` file (an upload or a result file cut off), and a complete file that no live
record names (a crash between the rename and the store transaction, or between a
delete's record and its bytes).

Several nodes may one day share a data directory and a database, so one node's start
must never take another node's work in progress for a leftover. Both rules therefore go
by how long nothing has written to the file (its mtime), never by who wrote it:
- a `.partial` file is stale after STALE_AFTER_S without a write: every writer appends
  at least every UPLOAD_IDLE_S (an upload idle for longer is refused and discarded),
  so an hour of silence means its writer is gone;
- a complete file with no live record is an orphan once older than STALE_AFTER_S: its
  writer records it moments after the rename.
A name that is not a file id (with or without `.partial`) is never touched.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

TEMP_SUFFIX = ".partial"
UPLOAD_IDLE_S = 300.0  # an upload that sends nothing for this long is refused (408)
STALE_AFTER_S = 3600.0  # well past UPLOAD_IDLE_S, and past any clock skew between nodes
_NAME = re.compile(r"(file-[0-9a-f]{32})(" + re.escape(TEMP_SUFFIX) + r")?")


@dataclass(frozen=True)
class DiskFile:
    """A regular file found under the files folder: its name and last write time."""

    name: str
    mtime: float


def orphan_candidates(found: Iterable[DiskFile], *, now: float,
                      stale_after: float = STALE_AFTER_S) -> list[str]:
    """The complete files old enough to be orphans: whether they are depends on which
    of these ids have a live record."""
    return [f.name for f in found
            if (m := _NAME.fullmatch(f.name)) and not m.group(2) and _stale(f, now, stale_after)]


def leftovers(found: Iterable[DiskFile], recorded: Collection[str], *, now: float,
              stale_after: float = STALE_AFTER_S) -> list[DiskFile]:
    """The files to delete: stale `.partial` files, and stale complete files whose id
    is not in `recorded` (the ids with a live record)."""
    return [f for f in found if _is_leftover(f, recorded, now=now, stale_after=stale_after)]


def _is_leftover(f: DiskFile, recorded: Collection[str], *, now: float,
                 stale_after: float) -> bool:
    match = _NAME.fullmatch(f.name)
    if match is None or not _stale(f, now, stale_after):
        return False
    return bool(match.group(2)) or match.group(1) not in recorded


def _stale(f: DiskFile, now: float, stale_after: float) -> bool:
    return now - f.mtime > stale_after
