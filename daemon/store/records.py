"""Records the store hands out, and the conversions from Peewee rows to them."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from daemon.domain.files import FileRecord
from daemon.domain.jobs import (
    Job,
    RowRecord,
)
from daemon.store.interface import JobDraft, WorkspaceRecord
from daemon.store.models import FileModel, JobModel, RowModel, Workspace


def hash_key(plain: str) -> str:
    return hashlib.sha256(plain.encode()).hexdigest()


def workspace_record(ws: Workspace) -> WorkspaceRecord:
    return WorkspaceRecord(id=ws.id, name=ws.name, batch_access=ws.batch_access,
                           expedited=ws.expedited, webhook_secret=ws.webhook_secret)


def draft_fields(d: JobDraft) -> dict[str, Any]:
    return {
        "id": d.id, "workspace": d.workspace_id, "dialect": d.dialect, "name": d.name,
        "model": d.model, "endpoint": d.endpoint, "status": d.status, "priority": d.priority,
        "created_at": d.created_at, "webhook_url": d.webhook_url, "cron": d.cron,
        "next_run_at": d.next_run_at, "template_id": d.template_id, "tier": d.tier,
        "metadata": json.dumps(d.metadata) if d.metadata is not None else None,
        "input_file_id": d.input_file_id, "expires_at": d.expires_at,
    }


def dumps(value: Any) -> str | None:
    return json.dumps(value) if value is not None else None


def loads(text: str | None) -> Any:
    return json.loads(text) if text else None


def job_record(r: JobModel) -> Job:
    return Job(
        id=r.id, seq=r.seq, workspace_id=r.workspace_id, dialect=r.dialect, name=r.name,
        model=r.model, endpoint=r.endpoint, status=r.status, priority=r.priority,
        created_at=r.created_at, total=r.total, completed=r.completed, failed=r.failed,
        dead_letter=r.dead_letter, input_tokens=r.input_tokens, output_tokens=r.output_tokens,
        cost_nano_usd=r.cost_nano_usd, started_at=r.started_at, finished_at=r.finished_at,
        error=r.error, webhook_url=r.webhook_url, webhook=loads(r.webhook), cron=r.cron,
        next_run_at=r.next_run_at, template_id=r.template_id, last_run_id=r.last_run_id,
        tier=r.tier, metadata=loads(r.metadata), errors=loads(r.errors),
        input_file_id=r.input_file_id, output_file_id=r.output_file_id,
        error_file_id=r.error_file_id, expires_at=r.expires_at, stamps=loads(r.stamps) or {},
    )


def file_record(r: FileModel) -> FileRecord:
    return FileRecord(id=r.id, workspace_id=r.workspace_id, filename=r.filename,
                      purpose=r.purpose, bytes=r.bytes, created_at=r.created_at, path=r.path,
                      status=r.status)


def row_record(r: RowModel, *, attempt_log: tuple[dict[str, Any], ...] = ()) -> RowRecord:
    return RowRecord(
        id=r.id, position=r.position, custom_id=r.custom_id, status=r.status,
        body=json.loads(r.body), attempts=r.attempts, response=loads(r.response),
        status_code=r.status_code, error=r.error, error_code=r.error_code,
        dead_letter=bool(r.dead_letter),
        model=r.answered_by or r.model, attempt_log=attempt_log,
    )
