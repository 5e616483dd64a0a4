"""Ending a job, the same way whoever ends it (supervisor, scheduler, API):
rows that never ran fail (cancel, expiry), the OpenAI dialect's result files are
written, then the final status is stored. In that order, so a crash in between
repeats work and never loses it."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

from daemon.domain import files as purposes
from daemon.domain.files import FileRecord
from daemon.domain.jobs import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    EXPIRED,
    FINALIZING,
    OPENAI,
    QUEUED,
    ROW_COMPLETED,
    RUNNING,
    SCHEDULED,
    VALIDATING,
    Job,
)
from daemon.domain.render_openai import error_line, output_line
from daemon.store.files import FileStore
from daemon.store.repo import Repo

# Which statuses each ending may come from.
SOURCES = {
    COMPLETED: frozenset({RUNNING, FINALIZING}),
    CANCELLED: frozenset({SCHEDULED, VALIDATING, QUEUED, RUNNING, CANCELLING, FINALIZING}),
    EXPIRED: frozenset({VALIDATING, QUEUED, RUNNING, CANCELLING, FINALIZING}),
}

# (error code, message) for rows that never ran, per dialect.
UNRUN = {
    (CANCELLED, "relay"): ("canceled", "canceled"),
    (CANCELLED, OPENAI): ("batch_cancelled", "The batch was cancelled before this request ran."),
    (EXPIRED, "relay"): ("expired", "expired"),
    (EXPIRED, OPENAI): ("batch_expired", "The batch expired before this request ran."),
}


def finalize(repo: Repo, files: FileStore, job: Job, *, target: str, now: float) -> Job | None:
    """End `job` as `target` (completed, cancelled or expired); None if it had ended."""
    if target != COMPLETED:
        code, message = UNRUN[(target, job.dialect)]
        repo.end_pending_rows(job.seq, error=message, error_code=code, now=now)
    fields: dict[str, Any] = {}
    if job.dialect == OPENAI and job.status != SCHEDULED:
        if target == COMPLETED:
            repo.transition(job.seq, source={RUNNING}, target=FINALIZING, now=now)
        fields = write_results(repo, files, job, now=now)
    return repo.transition(job.seq, source=SOURCES[target], target=target, now=now,
                           finished_at=now, **fields)


def write_results(repo: Repo, files: FileStore, job: Job, *, now: float) -> dict[str, Any]:
    """The output file (successful records) and the error file (failed ones); a file
    with no lines is not created."""
    output = _write(repo, files, job, now=now, name="output",
                    lines=(output_line(job, r) for r in repo.rows(job.seq)
                           if r.status == ROW_COMPLETED))
    errors = _write(repo, files, job, now=now, name="errors",
                    lines=(error_line(job, r) for r in _failed_rows(repo, job)))
    return {"output_file_id": output, "error_file_id": errors}


def _failed_rows(repo: Repo, job: Job) -> Iterator[Any]:
    return (r for r in repo.rows(job.seq) if r.status != ROW_COMPLETED)


def _write(repo: Repo, files: FileStore, job: Job, *, now: float, name: str,
           lines: Iterator[dict[str, Any]]) -> str | None:
    file_id = "file-" + secrets.token_hex(16)
    path, size, count = files.write_jsonl(file_id, lines)
    if count == 0:
        files.remove(path)
        return None
    repo.add_file(FileRecord(id=file_id, workspace_id=job.workspace_id,
                             filename=f"{job.id}_{name}.jsonl", purpose=purposes.BATCH_OUTPUT,
                             bytes=size, created_at=now, path=str(path)))
    return file_id
