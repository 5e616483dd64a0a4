"""The store boundary (store/faults.py): a storage fault leaves every backend's methods,
and a file being written, as the store's own error raised from the driver's; a value
the database cannot hold leaves unchanged (tests/store/test_unstorable_store.py)."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import pytest

from daemon.store.backend import SqlStore
from daemon.store.faults import UNAVAILABLE, StorageFull, StoreError, StoreUnavailable
from daemon.store.files import FileStore, PartialFile
from daemon.store.interface import Store
from tests.store.conftest import NOW, MakeJob


@contextmanager
def read_only(repo: Store) -> Iterator[None]:
    """The store's own connection refuses writes, as a read-only database or a standby
    does (SQLite: "attempt to write a readonly database"; PostgreSQL: SQLSTATE 25006)."""
    db = cast(SqlStore, repo).db
    words = (("SET default_transaction_read_only = on", "SET default_transaction_read_only = off")
             if repo.SHARED else ("PRAGMA query_only = 1", "PRAGMA query_only = 0"))
    db.execute_sql(words[0])
    try:
        yield
    finally:
        db.execute_sql(words[1])


def test_a_write_the_storage_refuses_is_a_store_error_and_keeps_nothing(repo: Store) -> None:
    with read_only(repo), pytest.raises(StoreUnavailable) as refused:
        repo.ensure_workspace("acme", now=NOW)

    assert refused.value.code == UNAVAILABLE
    cause = refused.value.__cause__
    assert cause is not None and not isinstance(cause, StoreError)  # the driver's own
    assert refused.value.detail == str(cause)
    assert repo.workspace("acme") is None


def test_a_job_write_the_storage_refuses_leaves_the_job_as_it_was(
        repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, rows=2)
    with read_only(repo), pytest.raises(StoreUnavailable):
        repo.transition(job.seq, "cancelling", now=NOW)
    assert repo.job_by_seq(job.seq) == job


def test_a_full_disk_met_writing_a_file_is_storage_full_and_leaves_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(self: PartialFile, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(PartialFile, "append", full)
    files = FileStore(tmp_path)
    with pytest.raises(StorageFull) as refused:
        files.write_jsonl("file-1", [{"a": 1}])
    assert isinstance(refused.value.__cause__, OSError)
    with pytest.raises(StorageFull), files.open_partial("file-2") as out:
        out.append(b"x")
    assert list(files.root.iterdir()) == []


def test_any_other_error_in_a_file_block_leaves_unchanged(tmp_path: Path) -> None:
    files = FileStore(tmp_path)
    bug = KeyError("not the storage's")
    with pytest.raises(KeyError) as raised, files.open_partial("file-1"):
        raise bug
    assert raised.value is bug
    assert list(files.root.iterdir()) == []
