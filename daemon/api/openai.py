"""The OpenAI Batch dialect's create (seed 002): check the body, store the batch as
`validating`, hand it to the validator. Inline `requests` are written as an input
file first, so every batch has an `input_file_id` as OpenAI's object requires."""

from __future__ import annotations

import secrets
from typing import Any

import pykka

from daemon.api.context import Services
from daemon.domain import ids
from daemon.domain.errors import InvalidRequest
from daemon.domain.files import BATCH, FileRecord
from daemon.domain.jobs import OPENAI, VALIDATING, Job
from daemon.domain.openai_input import CreateRequest, parse_create
from daemon.store.repo import JobDraft, WorkspaceRecord


def submit(services: Services, workspace: WorkspaceRecord, body: Any) -> Job:
    """Blocking (runs in a worker thread)."""
    request = parse_create(body)
    if request.tier == "expedited" and not workspace.expedited:
        raise InvalidRequest("The expedited tier is disabled for this organization.",
                             param="priority", code="expedited_disabled")
    if not services.validator_alive():
        raise _unavailable()
    now = services.clock()
    file_id = _input_file(services, workspace, request, now=now)
    job = services.repo.create_job(_draft(services, workspace, request, file_id, now=now), [])
    try:
        services.validator.validate(job.seq)
    except pykka.ActorDeadError as exc:  # raced with shutdown: leave it for the next start
        raise _unavailable() from exc
    return job


def _input_file(services: Services, workspace: WorkspaceRecord, request: CreateRequest, *,
                now: float) -> str:
    if request.input_file_id is not None:
        record = services.repo.file(request.input_file_id, workspace_id=workspace.id)
        if record is None:
            raise InvalidRequest(f"No file found with id '{request.input_file_id}'.",
                                 param="input_file_id", code="file_not_found")
        if record.purpose != BATCH:
            raise InvalidRequest(f"File '{record.id}' has purpose '{record.purpose}'; a batch "
                                 "input needs purpose 'batch'.", param="input_file_id")
        return record.id
    file_id = "file-" + secrets.token_hex(16)
    path, size, _ = services.files.write_jsonl(file_id, request.requests or [])
    services.repo.add_file(FileRecord(id=file_id, workspace_id=workspace.id,
                                      filename="inline-requests.jsonl", purpose=BATCH,
                                      bytes=size, created_at=now, path=str(path)))
    return file_id


def _draft(services: Services, workspace: WorkspaceRecord, request: CreateRequest,
           file_id: str, *, now: float) -> JobDraft:
    return JobDraft(
        id=ids.openai_batch_id(), workspace_id=workspace.id, dialect=OPENAI,
        name=(request.metadata or {}).get("name") or f"batch {file_id}",
        model=request.model_hint or "", endpoint=request.endpoint, status=VALIDATING,
        priority=0, created_at=now, tier=request.tier, metadata=request.metadata,
        input_file_id=file_id,
        expires_at=now + services.config.gateway.completion_window_s,
    )


def _unavailable() -> InvalidRequest:
    return InvalidRequest("The batch could not be dispatched; retry.", status=503,
                          code="unavailable", type="service_unavailable")
