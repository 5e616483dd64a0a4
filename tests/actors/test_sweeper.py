"""The file sweeper over a real store and a real folder, without threads: leftovers of
a crash swept at start (`sweep_leftovers`), expired files deleted on a timer
(`Sweeper.tick`), records before bytes."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.actors.sweeper import Sweeper, expire_files, sweep_leftovers
from daemon.domain.files import FileRecord
from daemon.domain.leftovers import STALE_AFTER_S
from daemon.store.files import FileStore
from daemon.store.interface import Store
from daemon.store.sqlite import open_sqlite

NOW = 1_800_000_000.0
OLD = NOW - STALE_AFTER_S - 1


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Store]:
    store = open_sqlite(tmp_path / "relay.db")
    yield store
    store.close()


@pytest.fixture
def files(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "data")


def put(files: FileStore, name: str, *, mtime: float, data: bytes = b"x") -> Path:
    path = files.path_for(name)
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))
    return path


def recorded(repo: Store, files: FileStore, file_id: str, *, mtime: float = OLD,
             expires_at: float | None = None) -> FileRecord:
    path = put(files, file_id, mtime=mtime)
    ws = repo.ensure_workspace("acme", now=NOW)
    return repo.add_file(FileRecord(id=file_id, workspace_id=ws.id, filename="a.jsonl",
                                    purpose="batch", bytes=1, created_at=NOW, path=str(path),
                                    expires_at=expires_at))


def names(files: FileStore) -> set[str]:
    return {f.name for f in files.listing()}


def fid(n: int) -> str:
    return f"file-{n:032x}"


def test_a_start_sweeps_stale_leftovers_only(repo: Store, files: FileStore) -> None:
    kept = recorded(repo, files, fid(1))
    deleted = recorded(repo, files, fid(2))
    repo.delete_file(deleted.id, workspace_id=deleted.workspace_id, now=NOW)
    put(files, fid(3) + ".partial", mtime=OLD)  # an upload cut off by kill -9
    put(files, fid(4) + ".partial", mtime=NOW - 5)  # an upload in progress elsewhere
    put(files, fid(5), mtime=OLD, data=b"")  # a result file whose job never ended
    put(files, fid(6), mtime=NOW - 5)  # renamed a moment ago, record on its way
    put(files, "README", mtime=OLD)
    swept = sweep_leftovers(repo, files, now=NOW)
    assert sorted(swept) == [fid(2), fid(3) + ".partial", fid(5)]
    assert names(files) == {kept.id, fid(4) + ".partial", fid(6), "README"}
    assert repo.file(kept.id) == kept


def test_a_leftover_the_disk_refuses_to_delete_does_not_stop_the_start(
        repo: Store, files: FileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    stuck = put(files, fid(1) + ".partial", mtime=OLD)
    put(files, fid(2) + ".partial", mtime=OLD)
    unlink = Path.unlink

    def failing(path: Path, missing_ok: bool = False) -> None:
        if path == stuck:
            raise OSError(errno.EIO, "Input/output error")  # a storage fault: StoreUnavailable
        unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", failing)
    assert sorted(sweep_leftovers(repo, files, now=NOW)) == [fid(1) + ".partial",
                                                              fid(2) + ".partial"]
    assert names(files) == {stuck.name}


def test_a_start_with_no_files_folder_sweeps_nothing(repo: Store, files: FileStore) -> None:
    assert sweep_leftovers(repo, files, now=NOW) == []
    assert not files.root.exists()


def test_expired_files_lose_their_record_then_their_bytes(repo: Store,
                                                          files: FileStore) -> None:
    due = recorded(repo, files, fid(1), expires_at=NOW)
    later = recorded(repo, files, fid(2), expires_at=NOW + 1)
    assert expire_files(repo, files, now=NOW) == [due]
    assert repo.file(due.id) is None and not Path(due.path).exists()
    assert repo.file(later.id) == later and Path(later.path).exists()


def test_the_sweeper_runs_at_its_first_tick_then_every_interval(repo: Store,
                                                                files: FileStore) -> None:
    sweeper = Sweeper(repo=repo, files=files, every=60)
    first = recorded(repo, files, fid(1), expires_at=NOW)
    sweeper.tick(NOW)
    assert repo.file(first.id) is None
    second = recorded(repo, files, fid(2), expires_at=NOW + 10)
    sweeper.tick(NOW + 59)  # due, but the timer is not
    assert repo.file(second.id) == second
    sweeper.tick(NOW + 60)
    assert repo.file(second.id) is None and not Path(second.path).exists()


class BrokenStore:
    def expire_files(self, *, now: float) -> list[FileRecord]:
        raise OSError("disk I/O error")


def test_a_failing_sweep_does_not_stop_the_sweeper(files: FileStore,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    sweeper = Sweeper(repo=BrokenStore(), files=files, every=60)  # type: ignore[arg-type]
    assert sweeper.tick(NOW) is None  # logged, not raised: the actor lives on
    assert "Sweeper.tick failed" in caplog.text
