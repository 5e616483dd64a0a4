"""File records and their lifetimes: `expires_at` kept, expired files left out of lists
and deleted by `expire_files`, and `recorded_files` (what the start sweep asks)."""

from __future__ import annotations

from itertools import count
from typing import Any

import pytest

from daemon.domain.files import FileRecord
from daemon.store.interface import Store
from tests.store.conftest import NOW, MakeJob

_ids = count(1)


@pytest.fixture
def workspace(repo: Store) -> int:
    return repo.ensure_workspace("acme", now=NOW).id


def add(repo: Store, workspace: int, **overrides: Any) -> FileRecord:
    file_id = f"file-{next(_ids):032x}"
    fields: dict[str, Any] = {"id": file_id, "workspace_id": workspace,
                              "filename": "in.jsonl", "purpose": "batch", "bytes": 3,
                              "created_at": NOW, "path": f"/data/files/{file_id}"}
    return repo.add_file(FileRecord(**(fields | overrides)))


def listed(repo: Store, workspace: int, **options: Any) -> list[str]:
    return [f.id for f in repo.list_files(workspace, limit=100, **options)[0]]


def test_expires_at_is_kept(repo: Store, workspace: int) -> None:
    kept = add(repo, workspace, expires_at=NOW + 3600)
    forever = add(repo, workspace)
    assert repo.file(kept.id) == kept
    assert repo.file(forever.id).expires_at is None  # type: ignore[union-attr]


def test_a_list_at_now_leaves_expired_files_out(repo: Store, workspace: int) -> None:
    expired = add(repo, workspace, expires_at=NOW + 10)
    later = add(repo, workspace, expires_at=NOW + 3600)
    forever = add(repo, workspace)
    assert listed(repo, workspace) == [forever.id, later.id, expired.id]
    assert listed(repo, workspace, now=NOW + 10) == [forever.id, later.id]
    assert repo.list_files(workspace, limit=1, now=NOW + 10)[1] is True
    assert repo.list_files(workspace, limit=2, now=NOW + 10)[1] is False


def test_expire_files_deletes_the_due_records_once(repo: Store, workspace: int) -> None:
    due = add(repo, workspace, expires_at=NOW + 10)
    later = add(repo, workspace, expires_at=NOW + 3600)
    forever = add(repo, workspace)
    assert repo.expire_files(now=NOW + 9) == []
    assert repo.expire_files(now=NOW + 10) == [due]
    assert repo.expire_files(now=NOW + 11) == []  # already gone
    assert repo.file(due.id) is None
    assert repo.file(later.id) == later and repo.file(forever.id) == forever


def test_an_expired_then_deleted_file_is_not_expired_again(repo: Store,
                                                           workspace: int) -> None:
    made = add(repo, workspace, expires_at=NOW + 10)
    assert repo.delete_file(made.id, workspace_id=workspace, now=NOW) == made
    assert repo.expire_files(now=NOW + 3600) == []


def test_recorded_files_are_the_live_ones(repo: Store, workspace: int) -> None:
    live = add(repo, workspace)
    deleted = add(repo, workspace)
    repo.delete_file(deleted.id, workspace_id=workspace, now=NOW)
    unknown = "file-" + "f" * 32
    assert repo.recorded_files([live.id, deleted.id, unknown]) == {live.id}
    assert repo.recorded_files([]) == set()


def test_recorded_files_takes_any_number_of_ids(repo: Store, workspace: int) -> None:
    made = [add(repo, workspace).id for _ in range(3)]
    asked = [f"file-{n:032x}" for n in range(10**6, 10**6 + 1200)] + made
    assert repo.recorded_files(asked) == set(made)


def test_a_job_keeps_its_output_lifetime(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, output_expires_after_s=7200)
    assert job.output_expires_after_s == 7200
    assert repo.get_job(job.id).output_expires_after_s == 7200  # type: ignore[union-attr]
    assert make_job(repo).output_expires_after_s is None
