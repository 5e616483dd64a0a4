"""Which files under `<data_dir>/files` a start sweeps (domain/leftovers.py): a table of
files by kind, age and record, at one fixed `now`."""

from __future__ import annotations

import pytest

from daemon.domain.leftovers import (
    STALE_AFTER_S,
    UPLOAD_IDLE_S,
    DiskFile,
    leftovers,
    orphan_candidates,
)

NOW = 1_800_000_000.0
RECORDED = "file-" + "a" * 32
UNRECORDED = "file-" + "b" * 32
FRESH, STALE = NOW - 60, NOW - STALE_AFTER_S - 1

CASES = [
    # name, mtime, swept?
    (f"{UNRECORDED}.partial", FRESH, False),  # an upload in progress, maybe on another node
    (f"{UNRECORDED}.partial", NOW - STALE_AFTER_S, False),  # exactly an hour: not yet
    (f"{UNRECORDED}.partial", STALE, True),  # nothing wrote to it for an hour
    (f"{RECORDED}.partial", STALE, True),  # a temp file is never anyone's record
    (f"{UNRECORDED}.partial", NOW + 600, False),  # a clock behind the writer's
    (RECORDED, FRESH, False),
    (RECORDED, STALE, False),  # a live record keeps its bytes whatever their age
    (UNRECORDED, FRESH, False),  # renamed a moment ago: its record is on its way
    (UNRECORDED, STALE, True),  # an orphan: a crash between rename and record
    ("relay.db", STALE, False),  # not ours: never touched
    ("notes.partial", STALE, False),
    ("file-" + "c" * 31, STALE, False),  # not a file id
    ("FILE-" + "c" * 32, STALE, False),
    (f"{UNRECORDED}.partial.bak", STALE, False),
    (f"{UNRECORDED}.tmp", STALE, False),
]


@pytest.mark.parametrize(("name", "mtime", "swept"), CASES)
def test_what_a_start_sweeps(name: str, mtime: float, swept: bool) -> None:
    found = [DiskFile(name, mtime)]
    assert leftovers(found, {RECORDED}, now=NOW) == (found if swept else [])


def test_only_stale_complete_files_are_looked_up() -> None:
    found = [DiskFile(name, mtime) for name, mtime, _ in CASES]
    assert sorted(orphan_candidates(found, now=NOW)) == [RECORDED, UNRECORDED]


def test_a_whole_folder_at_once() -> None:
    found = [DiskFile(name, mtime) for name, mtime, _ in CASES]
    assert leftovers(found, {RECORDED}, now=NOW) == [
        DiskFile(name, mtime) for name, mtime, swept in CASES if swept]


def test_the_threshold_is_injectable() -> None:
    found = [DiskFile(UNRECORDED, NOW - 10), DiskFile(f"{RECORDED}.partial", NOW - 10)]
    assert leftovers(found, set(), now=NOW, stale_after=5) == found
    assert orphan_candidates(found, now=NOW, stale_after=5) == [UNRECORDED]


def test_a_live_upload_always_writes_well_within_the_threshold() -> None:
    """The rule is safe across nodes only while every live upload writes more often
    than a partial file goes stale."""
    assert UPLOAD_IDLE_S * 4 <= STALE_AFTER_S
