"""The store's interface: every query the actors, the API and the CLI make, and the
frozen records that cross the boundary. Peewee never leaks out of `store/`.

`Store` is what the rest of Relay depends on; `SqliteStore` is one implementation
(see `open_store`), and the contract suite in `tests/store/test_contract.py`
runs against every backend. Rules every implementation keeps:

- Every write that changes a job's state is one transaction; rows are inserted and
  updated in bulk, never one commit per row.
- `transition` takes its allowed sources from `domain.jobs.TRANSITIONS` and refuses
  the rest; a job ends only through `end_job`, which ends its unrun rows, records
  its result files, sets the status and queues its webhook in one transaction.
- A row's outcome is stored once: a repeat is skipped whole, so a job's counters
  always equal what its rows say (`row_counts`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

from daemon.domain.files import FileRecord
from daemon.domain.jobs import Job, RowDraft, RowRecord, RowWork
from daemon.domain.outcome import RowOutcome


@dataclass(frozen=True)
class WorkspaceRecord:
    id: int
    name: str
    batch_access: bool = True
    expedited: bool = True
    webhook_secret: str | None = None


@dataclass(frozen=True)
class KeyRecord:
    id: int
    workspace: str
    prefix: str
    created_at: float
    revoked_at: float | None


@dataclass(frozen=True)
class JobDraft:
    """A job about to be stored; the store assigns `seq` and the counters. Its fields
    are `Job`'s of the same names."""

    id: str
    workspace_id: int
    dialect: str
    name: str
    model: str
    endpoint: str
    status: str
    priority: int
    created_at: float
    webhook_url: str | None = None
    cron: str | None = None
    next_run_at: float | None = None
    template_id: str | None = None
    tier: str = "standard"
    metadata: dict[str, Any] | None = None
    input_file_id: str | None = None
    expires_at: float | None = None


def draft_from(job: Job, **changes: Any) -> JobDraft:
    """A new job like `job` (a template's run, a dead-letter retry), with `changes`."""
    copied = {f.name: getattr(job, f.name) for f in fields(JobDraft)}
    return JobDraft(**(copied | changes))


@dataclass(frozen=True)
class Flushed:
    """What one `save_outcomes` call changed."""

    completed: int
    failed: int
    dead_letter: int


@dataclass(frozen=True)
class Ending:
    """How a job ends, written by `Store.end_job` in one transaction."""

    status: str  # completed, failed, expired or cancelled
    unrun: tuple[str, str] | None = None  # (code, message) for rows that never ran
    files: Sequence[FileRecord] = ()  # result files already written to disk
    output_file_id: str | None = None
    error_file_id: str | None = None
    error: str | None = None  # why a job failed as a whole
    errors: list[dict[str, Any]] | None = None  # a failed validation's file-level errors


class Store(Protocol):
    # -- workspaces and keys
    def ensure_workspace(self, name: str, *, now: float) -> WorkspaceRecord: ...
    def workspace(self, name: str) -> WorkspaceRecord | None: ...
    def workspaces(self) -> list[WorkspaceRecord]: ...
    def set_workspace(self, name: str, *, now: float, batch_access: bool | None = None,
                      expedited: bool | None = None) -> WorkspaceRecord: ...
    def create_key(self, workspace_name: str, *, now: float) -> str: ...
    def list_keys(self, workspace_name: str | None = None) -> list[KeyRecord]: ...
    def revoke_key(self, prefix: str, *, now: float) -> int: ...
    def authenticate(self, plain: str) -> WorkspaceRecord | None: ...
    def webhook_secret(self, workspace_id: int, *, rotate: bool = False) -> str: ...

    # -- jobs and their lifecycle
    def create_job(self, draft: JobDraft, rows: Sequence[RowDraft]) -> Job: ...
    def get_job(self, job_id: str, *, workspace_id: int | None = None) -> Job | None: ...
    def job_by_seq(self, seq: int) -> Job | None: ...
    def list_jobs(self, workspace_id: int, *, limit: int, after: str | None = None,
                  statuses: Sequence[str] | None = None, template_id: str | None = None,
                  ) -> tuple[list[Job], bool]: ...
    def queued_jobs(self, limit: int) -> list[Job]: ...
    def jobs_in(self, status: str) -> list[Job]: ...
    def expired_jobs(self, now: float) -> list[Job]: ...
    def transition(self, seq: int, target: str, *, now: float, **fields: Any) -> Job | None: ...
    def end_job(self, seq: int, ending: Ending, *, now: float) -> Job | None: ...
    def requeue_running(self, *, now: float) -> list[Job]: ...
    def accept_validated(self, seq: int, rows: Sequence[RowDraft], *, model: str | None,
                         now: float) -> Job | None: ...
    def retry_dead_letter(self, seq: int, *, new_id: str, custom_ids: Sequence[str] | None,
                          now: float) -> Job | None: ...
    def due_templates(self, now: float) -> list[Job]: ...
    def spawn_run(self, template: Job, *, tick: float, next_run_at: float, run_id: str,
                  now: float) -> Job | None: ...

    # -- rows
    def pending_rows(self, job: Job, *, after_id: int, limit: int) -> list[RowWork]: ...
    def save_outcomes(self, job_seq: int, outcomes: Sequence[tuple[int, RowOutcome]], *,
                      now: float) -> Flushed: ...
    def rows(self, job_seq: int, *, after_position: int = 0,
             limit: int | None = None) -> Iterator[RowRecord]: ...
    def dead_letter_rows(self, job_seq: int) -> list[RowRecord]: ...
    def row_counts(self, job_seq: int) -> dict[str, int]: ...

    # -- files
    def add_file(self, record: FileRecord) -> FileRecord: ...
    def file(self, file_id: str, *, workspace_id: int | None = None) -> FileRecord | None: ...
    def list_files(self, workspace_id: int, *, limit: int, after: str | None = None,
                   purpose: str | None = None) -> tuple[list[FileRecord], bool]: ...
    def delete_file(self, file_id: str, *, workspace_id: int,
                    now: float) -> FileRecord | None: ...

    # -- completion webhooks (queued by `end_job`, delivered at most once)
    def claim_webhook(self, seq: int, *, now: float) -> bool: ...
    def save_webhook(self, seq: int, outcome: dict[str, Any]) -> None: ...
    def unsent_webhooks(self) -> list[Job]: ...
    def abandon_claimed_webhooks(self, *, now: float) -> int: ...

    def close(self) -> None: ...
