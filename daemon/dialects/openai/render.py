"""Rendering for the OpenAI Batch dialect (seed 002): the batch object, the file
object, the lines of the output and error files, and a row as an input file's record.
Pure: records in, dicts out."""

from __future__ import annotations

import hashlib
from typing import Any, cast

from daemon.dialects.openai.shapes import (
    Endpoint,
    FileError,
    FileObject,
    LineBody,
    OpenAIBatch,
    OpenAIStatus,
    OutputLine,
    Purpose,
    Tier,
)
from daemon.dialects.relay.render import usage
from daemon.domain.files import FileRecord
from daemon.domain.jobs import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    EXPIRED,
    FAILED,
    FINALIZING,
    QUEUED,
    RUNNING,
    VALIDATING,
    Job,
    RowRecord,
    StatusView,
)
from daemon.domain.output_check import INVALID_OUTPUT

OPENAI_VIEW = StatusView({QUEUED: "in_progress", RUNNING: "in_progress"})
openai_status = OPENAI_VIEW.name


def _ts(value: float | None) -> int | None:
    return None if value is None else int(value)


def batch(job: Job) -> OpenAIBatch:
    """`GET /v1/batches/{id}` for an OpenAI-dialect batch."""
    stamps = job.stamps
    progressed = job.completed + job.failed > 0 or job.input_tokens > 0
    view: OpenAIBatch = {
        "id": job.id,
        "object": "batch",
        "endpoint": cast(Endpoint, job.endpoint),
        "errors": {"object": "list", "data": cast(list[FileError], job.errors)}
        if job.errors else None,
        "input_file_id": job.input_file_id or "",  # every OpenAI batch has one
        "completion_window": "24h",
        "status": cast(OpenAIStatus, openai_status(job.status)),
        "output_file_id": job.output_file_id,
        "error_file_id": job.error_file_id,
        "created_at": int(job.created_at),
        "in_progress_at": _ts(stamps.get(QUEUED) if job.status != VALIDATING else None),
        "expires_at": _ts(job.expires_at),
        "finalizing_at": _ts(stamps.get(FINALIZING)),
        "completed_at": _ts(stamps.get(COMPLETED)),
        "failed_at": _ts(stamps.get(FAILED)),
        "expired_at": _ts(stamps.get(EXPIRED)),
        "cancelling_at": _ts(stamps.get(CANCELLING)),
        "cancelled_at": _ts(stamps.get(CANCELLED)),
        "request_counts": {"total": job.total, "completed": job.completed,
                           "failed": job.failed},
        "metadata": job.metadata,
        "model": job.model or None,
        "priority": cast(Tier, job.tier),
        "usage": usage(job) if progressed else None,
    }
    if job.retry_of:
        view["retry_of"] = job.retry_of
    return view


def file_object(f: FileRecord) -> FileObject:
    return {"id": f.id, "object": "file", "bytes": f.bytes, "created_at": int(f.created_at),
            "filename": f.filename, "purpose": cast(Purpose, f.purpose), "status": "processed",
            "status_details": None, "expires_at": _ts(f.expires_at)}


def request_line(job: Job, row: RowRecord) -> dict[str, Any]:
    """A row as a line of an input file: the record it was submitted as."""
    return {"custom_id": row.custom_id, "method": "POST", "url": job.endpoint,
            "body": row.body}


def _line_ids(job: Job, row: RowRecord) -> tuple[str, str]:
    digest = hashlib.sha256(f"{job.id}:{row.position}".encode()).hexdigest()
    return "batch_req_" + digest[:32], "req_" + digest[32:64]


def output_line(job: Job, row: RowRecord) -> OutputLine:
    """A successful record's line of the output file."""
    line_id, request_id = _line_ids(job, row)
    return {"id": line_id, "custom_id": row.custom_id,
            "response": {"status_code": row.status_code or 200, "request_id": request_id,
                         "body": cast(LineBody, row.response)},
            "error": None}


def error_line(job: Job, row: RowRecord) -> OutputLine:
    """A failed record's line of the error file: the upstream's non-2xx answer when
    there was one, otherwise `{code, message}`; an answer that stayed invalid against its
    schema (`invalid_output`) has both: the last answer, and the validation errors."""
    line_id, request_id = _line_ids(job, row)
    if row.error_code == INVALID_OUTPUT and row.response is not None:  # paid for: kept
        return {"id": line_id, "custom_id": row.custom_id,
                "response": {"status_code": row.status_code or 200, "request_id": request_id,
                             "body": cast(LineBody, row.response)},
                "error": {"code": INVALID_OUTPUT, "message": row.error or INVALID_OUTPUT}}
    if row.status_code and not 200 <= row.status_code < 300 and row.response is not None:
        return {"id": line_id, "custom_id": row.custom_id,
                "response": {"status_code": row.status_code, "request_id": request_id,
                             "body": cast(LineBody, row.response)},
                "error": None}
    return {"id": line_id, "custom_id": row.custom_id, "response": None,
            "error": {"code": row.error_code or "failed", "message": row.error or "failed"}}
