"""`/v1/batches` routes shared by both dialects: submit (dispatching on the dialect),
read, list, cancel, results and the dead-letter list. Reads go to the store in a
worker thread; commands write the store, then `tell` an actor."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pykka
from aiohttp import web

from daemon.actors.finalize import finalize
from daemon.api import openai, relay
from daemon.api.context import SERVICES, Services
from daemon.api.middleware import WORKSPACE
from daemon.domain import ids, render_openai
from daemon.domain.errors import InvalidRequest, conflict, not_found
from daemon.domain.jobs import (
    CANCELLED,
    CANCELLING,
    OPENAI,
    QUEUED,
    RELAY,
    RUNNING,
    SCHEDULED,
    STATUSES,
    VALIDATING,
    Job,
    internal_statuses_for_relay,
    relay_status,
)
from daemon.domain.render import dead_letter_entry, relay_job, relay_result
from daemon.store.repo import WorkspaceRecord

log = logging.getLogger("relay.api")

OPENAI_KEYS = frozenset({"endpoint", "input_file_id", "completion_window"})
RENDERERS = {RELAY: relay_job, OPENAI: render_openai.batch}
ROUTE_ID = "job_id"
LARGE_BODY = 256 * 1024
CANCEL_WAIT_S = 5.0


def render(job: Job) -> dict[str, Any]:
    return RENDERERS[job.dialect](job)


def is_openai_dialect(body: Any) -> bool:
    return isinstance(body, dict) and not OPENAI_KEYS.isdisjoint(body)


async def read_json(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        raise InvalidRequest("The request body is empty; send a JSON object.")
    try:
        if len(raw) > LARGE_BODY:  # decoding megabytes would stall the event loop
            return await asyncio.to_thread(json.loads, raw)
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"The request body is not valid JSON: {exc}.") from exc


def context(request: web.Request) -> tuple[Services, WorkspaceRecord]:
    workspace: WorkspaceRecord = request[WORKSPACE]
    if not workspace.batch_access:  # seed 002: no Batch API access reads as not found
        raise InvalidRequest("Not found: this organization does not have Batch API access.",
                             status=404, code="not_found", type="not_found_error")
    return request.app[SERVICES], workspace


async def load_job(request: web.Request) -> Job:
    services, workspace = context(request)
    job_id = request.match_info[ROUTE_ID]
    job = await asyncio.to_thread(services.repo.get_job, job_id, workspace_id=workspace.id)
    if job is None:
        raise not_found("batch", job_id)
    return job


async def create(request: web.Request) -> web.Response:
    services, workspace = context(request)
    if not services.accepting:
        raise InvalidRequest("The daemon is shutting down; retry shortly.", status=503,
                             code="unavailable", type="service_unavailable")
    body = await read_json(request)
    dialect = openai if is_openai_dialect(body) else relay
    job = await asyncio.to_thread(dialect.submit, services, workspace, body)
    announce(services, job)
    return web.json_response(render(job))


def announce(services: Services, job: Job) -> None:
    services.notifier.job_created(job)
    if job.status == QUEUED:
        services.scheduler.wake()


async def get(request: web.Request) -> web.Response:
    return web.json_response(render(await load_job(request)))


async def list_jobs(request: web.Request) -> web.Response:
    services, workspace = context(request)
    query = request.query
    limit = _limit(query.get("limit"))
    statuses = _status_filter(query.get("status"))
    jobs, has_more = await asyncio.to_thread(
        services.repo.list_jobs, workspace.id, limit=limit, after=query.get("after") or None,
        statuses=statuses, template_id=query.get("template_id") or None)
    data = [render(j) for j in jobs]
    return web.json_response({
        "object": "list", "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": has_more,
    })


def _limit(raw: str | None) -> int:
    if raw is None:
        return 20
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if not 1 <= limit <= 100:
        raise InvalidRequest(f"'limit' must be an integer from 1 to 100; got {raw!r}.",
                             param="limit")
    return limit


_OPENAI_STATUS = {"in_progress": (QUEUED, RUNNING)}


def _status_filter(raw: str | None) -> tuple[str, ...] | None:
    if not raw:
        return None
    matched = internal_statuses_for_relay(raw)
    if matched is None:
        matched = _OPENAI_STATUS.get(raw) or ((raw,) if raw in STATUSES else None)
    if matched is None:
        raise InvalidRequest(f"Unknown status {raw!r}.", param="status")
    return matched


async def cancel(request: web.Request) -> web.Response:
    services, _ = context(request)
    job = await load_job(request)
    if job.terminal:
        raise conflict(f"Batch {job.id} has already ended ({relay_status(job.status)}); "
                       "there is nothing to cancel.", code="batch_already_ended")
    updated = await asyncio.to_thread(_request_cancel, services, job)
    return web.json_response(render(updated))


def _request_cancel(services: Services, job: Job) -> Job:
    """Write the cancel to the store, then tell whoever owns the job. Each step is a
    conditional transition, so a stale read (the job was admitted meanwhile) can never
    end a job behind its supervisor's back."""
    repo, now = services.repo, services.clock()
    if job.dialect == RELAY:  # a Relay job that is not running ends here and now
        taken = repo.transition(job.seq, source={QUEUED, SCHEDULED}, target=CANCELLING,
                                now=now)
        if taken is not None:
            ended = finalize(repo, services.files, taken, target=CANCELLED, now=now)
            if ended is not None:
                services.notifier.job_ended(ended)
                return ended
    # running (either dialect), or an OpenAI batch, which answers `cancelling`
    changed = repo.transition(job.seq, source={QUEUED, VALIDATING, RUNNING},
                              target=CANCELLING, now=now)
    if changed is not None:
        _wait_for_cancel(services, job.seq)
        services.notifier.job_changed(job.seq)
        return changed
    return repo.job_by_seq(job.seq) or job


def _wait_for_cancel(services: Services, seq: int) -> None:
    """Answer only once the supervisor has stopped dispatching (this runs in a worker
    thread, never on the event loop); the cancel itself is already stored."""
    try:
        forwarded = services.scheduler.cancel(seq).get(timeout=CANCEL_WAIT_S)
        if forwarded is not None:
            forwarded.get(timeout=CANCEL_WAIT_S)
    except (pykka.Timeout, pykka.ActorDeadError):
        log.warning("cancel of job %s not confirmed in time; it proceeds anyway", seq)


async def results(request: web.Request) -> web.Response:
    services, _ = context(request)
    job = await load_job(request)
    data: list[dict[str, Any]] = []
    if job.terminal:
        data = await asyncio.to_thread(
            lambda: [relay_result(r) for r in services.repo.rows(job.seq)])
    return web.json_response({"id": job.id, "object": "list",
                              "status": render(job)["status"], "data": data})


async def dead_letter(request: web.Request) -> web.Response:
    services, _ = context(request)
    job = await load_job(request)
    rows = await asyncio.to_thread(services.repo.dead_letter_rows, job.seq)
    return web.json_response({"id": job.id, "object": "list",
                              "data": [dead_letter_entry(r) for r in rows]})


async def retry_dead_letter(request: web.Request) -> web.Response:
    services, _ = context(request)
    job = await load_job(request)
    custom_ids = _custom_ids(await read_json(request) if request.can_read_body else {})
    new_id = ids.openai_batch_id() if job.dialect == OPENAI else ids.relay_job_id()
    created = await asyncio.to_thread(services.repo.retry_dead_letter, job.seq,
                                      new_id=new_id, custom_ids=custom_ids,
                                      now=services.clock())
    if created is None:
        raise InvalidRequest("This batch has no dead-lettered rows to retry"
                             + (" among the given custom_ids." if custom_ids else "."),
                             param="custom_ids" if custom_ids else None,
                             code="nothing_to_retry")
    announce(services, created)
    return web.json_response(render(created))


def _custom_ids(body: Any) -> list[str] | None:
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    value = body.get("custom_ids")
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise InvalidRequest("'custom_ids' must be a non-empty array of strings.",
                             param="custom_ids")
    return value


def routes() -> list[web.RouteDef]:
    base = "/v1/batches"
    one = base + "/{" + ROUTE_ID + "}"
    return [
        web.post(base, create),
        web.get(base, list_jobs),
        web.get(one, get),
        web.post(one + "/cancel", cancel),
        web.get(one + "/results", results),
        web.get(one + "/dead_letter", dead_letter),
        web.post(one + "/dead_letter/retry", retry_dead_letter),
    ]
