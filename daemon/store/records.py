"""Records the store hands out, and the conversions from Peewee rows to them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any, cast

from daemon.domain import codec
from daemon.domain.budget import Budget, Period
from daemon.domain.files import FileRecord
from daemon.domain.jobs import (
    Job,
    JobDraft,
    RowRecord,
    RowStatus,
)
from daemon.store.interface import WorkspaceRecord
from daemon.store.models import FileModel, JobModel, RowModel, Workspace
from daemon.store.sql import ROW_RECORD_FIELDS


def hash_key(plain: str) -> str:
    return hashlib.sha256(plain.encode()).hexdigest()


def workspace_record(ws: Workspace) -> WorkspaceRecord:
    return workspace_of(ws.__data__)


def workspace_of(data: Mapping[str, Any]) -> WorkspaceRecord:
    """A workspace from its columns (a Peewee row's `__data__`, or a raw read's)."""
    budget = data.get("budget_nano_usd")
    return WorkspaceRecord(id=data["id"], name=data["name"],
                           batch_access=bool(data["batch_access"]),
                           expedited=bool(data["expedited"]),
                           workflows=bool(data["workflows"]),
                           webhook_secret=data.get("webhook_secret"),
                           budget=None if budget is None else Budget(
                               budget, cast(Period, data.get("budget_period") or "none")))


# A job's fields are named once, on `Job` (and `JobDraft`, the fields a new job is
# given); the table's columns carry the same names except these.
_COLUMN = {"workspace_id": "workspace"}
_JSON_COLUMNS = ("webhook", "metadata", "errors", "stamps")
_JOB_KEYS = tuple((f.name, _COLUMN.get(f.name, f.name)) for f in fields(Job))


def draft_fields(d: JobDraft) -> dict[str, Any]:
    values = {_COLUMN.get(f.name, f.name): getattr(d, f.name) for f in fields(d)}
    return values | {"metadata": dumps(d.metadata)}


def dumps(value: Any) -> str | None:
    return json.dumps(value) if value is not None else None


def loads(text: str | None) -> Any:
    return json.loads(text) if text else None


def job_record(r: JobModel) -> Job:
    return job_of(r.__data__)


def job_of(data: Mapping[str, Any]) -> Job:
    """A job from its columns: a Peewee row's `__data__` (keyed by field) or a raw
    read's (keyed by column: `workspace_id` where the field is `workspace`)."""
    values = {name: data[key] if key in data else data.get(name) for name, key in _JOB_KEYS}
    for name in _JSON_COLUMNS:
        values[name] = loads(values[name])
    return Job(**(values | {"stamps": values["stamps"] or {}}))


def file_record(r: FileModel) -> FileRecord:
    return FileRecord(id=r.id, workspace_id=r.workspace_id, filename=r.filename,
                      purpose=r.purpose, bytes=r.bytes, created_at=r.created_at, path=r.path,
                      status=r.status, expires_at=r.expires_at)


def row_of(values: Sequence[Any], *, attempt_log: tuple[dict[str, Any], ...] = (),
           executor_calls: tuple[dict[str, Any], ...] = ()) -> RowRecord:
    """A row from its columns, in `ROW_RECORD_FIELDS` order (a raw read's, or a Peewee
    row's: `row_record`)."""
    (rid, position, custom_id, status, body, attempts, response, status_code, error,
     error_code, dead_letter, answered_by, model, redriven_to, discarded_at,
     finished_seq) = values
    return RowRecord(
        id=rid, position=position, custom_id=custom_id, status=cast(RowStatus, status),
        body=codec.loads(body), attempts=attempts,
        response=codec.loads(response) if response else None, status_code=status_code,
        error=error, error_code=error_code, dead_letter=bool(dead_letter),
        model=answered_by or model, attempt_log=attempt_log, executor_calls=executor_calls,
        redriven_to=redriven_to, discarded_at=discarded_at, finished_seq=finished_seq)


def row_record(r: RowModel, *, attempt_log: tuple[dict[str, Any], ...] = (),
               executor_calls: tuple[dict[str, Any], ...] = ()) -> RowRecord:
    return row_of([getattr(r, name) for name in ROW_RECORD_FIELDS], attempt_log=attempt_log,
                  executor_calls=executor_calls)
