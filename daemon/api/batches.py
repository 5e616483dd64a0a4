"""The batch routes: the generic actions every dialect's batch API is made of (submit,
read, cancel, …, performed through the dialect of the route or of the job), and
Relay's own routes on any dialect's jobs (the list of every dialect, results, the
dead letter, rows, workflows). Reads go to the store in a worker thread; commands
write the store, then `tell` an actor."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, TypedDict, cast

import msgspec
import pykka
from aiohttp import web

from daemon.api import estimate as estimating
from daemon.api import idempotency, paging, respond
from daemon.api.body_budget import read_body
from daemon.api.context import SERVICES, Services
from daemon.api.middleware import WORKSPACE
from daemon.api.reads import point_read
from daemon.dialects import (
    DIALECTS,
    EVERY_DIALECT,
    LISTED_BY_DEFAULT,
    Deletes,
    Dialect,
    ListsJobs,
    ResultLines,
    detect,
    dialect_of,
    job_shapes,
    listed,
    statuses_for,
)
from daemon.dialects.anthropic.shapes import MessageBatchIndividualResponse
from daemon.dialects.base import row_cap
from daemon.dialects.openai.shapes import OutputLine
from daemon.dialects.relay import BATCHES, JOB_ID, ONE
from daemon.dialects.relay.render import (
    dead_letter_entry,
    relay_result,
    row_detail,
    workflow_counters,
    workspace_dead_letter_entry,
)
from daemon.dialects.relay.shapes import (
    DeadLetterDiscard,
    DeadLetterDiscarded,
    DeadLetterList,
    DeadLetterRetry,
    RelayResult,
    ResultList,
    RowDetail,
    WorkflowCounters,
    WorkspaceDeadLetterList,
)
from daemon.domain import codec, finish_order
from daemon.domain.errors import Conflict, InvalidRequest, Unavailable, no_batch_access, not_found
from daemon.domain.idempotency import fingerprint
from daemon.domain.jobs import (
    CANCELLING,
    DL_OPEN,
    DL_STATES,
    QUEUED,
    STATUSES,
    VALIDATING,
    Job,
    RowRecord,
)
from daemon.domain.routes import Action, Handler, Operation, Param, Route
from daemon.store.interface import WorkspaceRecord

log = logging.getLogger("relay.api")

ROUTE_ID = "job_id"
RESULTS_STREAM_PAGE = 1000  # rows read at a time for a results stream
LARGE_BODY = 256 * 1024
CANCEL_WAIT_S = 5.0
RESULTS_PAGE_MOST = 10_000  # `?limit=` of the results
PARTIAL_PAGE = 1000  # rows of a page of partial results unless `limit` says
LIST_DIALECTS = (*DIALECTS, EVERY_DIALECT)  # `?dialect=` of the list
DEAD_LETTER_STATES = (*DL_STATES, "all")  # `?state=` of the workspace's dead letter


def render(job: Job, request: web.Request) -> Any:
    return dialect_of(job).render(job, origin=origin(request))


def origin(request: web.Request) -> str:
    """Where clients reach this daemon: `[server] public_url` when set (behind a proxy),
    else the scheme and `Host` of the request."""
    public = request.app[SERVICES].config.server.public_url
    return public.rstrip("/") if public else f"{request.scheme}://{request.host}"


async def read_json(request: web.Request) -> Any:
    return await parse_json(await read_body(request))


async def parse_json(raw: bytes | bytearray) -> Any:
    if not raw:
        raise InvalidRequest("The request body is empty; send a JSON object.")
    try:
        if len(raw) > LARGE_BODY:  # decoding megabytes would stall the event loop
            return await asyncio.to_thread(strict_json, raw)
        return strict_json(raw)
    except RecursionError as exc:
        raise InvalidRequest("The request body is nested too deeply to read.") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"The request body is not valid JSON: {exc}.") from exc


def strict_json(raw: bytes | bytearray) -> Any:
    """JSON as RFC 8259 has it: NaN, Infinity and -Infinity are not numbers there."""
    return json.loads(raw, parse_constant=_not_json)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def context(request: web.Request) -> tuple[Services, WorkspaceRecord]:
    workspace: WorkspaceRecord = request[WORKSPACE]
    if not workspace.batch_access:  # seed 002: no Batch API access reads as not found
        raise no_batch_access()
    return request.app[SERVICES], workspace


async def load_job(request: web.Request, among: Sequence[Dialect] | None = None) -> Job:
    """The job the path names, in the key's workspace (and of one of the dialects
    `among`, for a dialect's own route: another dialect's job is not found there)."""
    services, workspace = context(request)
    job_id = request.match_info[ROUTE_ID]
    job = await point_read(services.repo, services.repo.get_job, job_id,
                           workspace_id=workspace.id)
    if job is None or (among is not None and dialect_of(job) not in among):
        raise not_found("batch", job_id)
    return job


def action(kind: Action, dialects: Sequence[Dialect]) -> Handler:
    """The handler of a dialect route doing `kind` for `dialects`."""
    among = tuple(dialects)
    owner = among[0]
    hooks = {Action.LIST: ListsJobs, Action.RESULTS: ResultLines, Action.DELETE: Deletes}
    if kind in hooks and not isinstance(owner, hooks[kind]):
        raise TypeError(f"{owner.name} serves a {kind} route it has no hooks for")

    async def submit(request: web.Request) -> web.StreamResponse:
        services, workspace = context(request)
        if not services.accepting or not services.actors_alive():
            raise Unavailable("The daemon is shutting down; retry shortly.")
        raw = await read_body(request)
        if estimating.dry_run(request.query):  # a report: no key is taken, nothing stored
            body = await parse_json(raw)
            return respond.json(await asyncio.to_thread(
                estimating.answer, services, workspace, detect(body, among), body))
        key = idempotency.key_of(request)

        async def create() -> web.Response:
            body = await parse_json(raw)
            job = await asyncio.to_thread(detect(body, among).submit, services, workspace, body)
            announce(services, job)
            return respond.json(render(job, request))

        return await idempotency.once(request, services, workspace, key=key,
                                      body_sha256=fingerprint(raw), create=create)

    async def get(request: web.Request) -> web.StreamResponse:
        return respond.json(render(await load_job(request, among), request))

    async def cancel(request: web.Request) -> web.StreamResponse:
        services, _ = context(request)
        job = await load_job(request, among)
        updated = await asyncio.to_thread(request_cancel, services, job)
        return respond.json(render(updated, request))

    async def list_page(request: web.Request) -> web.StreamResponse:
        services, workspace = context(request)
        dialect = cast(ListsJobs, owner)
        pages, query = dialect.paging, request.query
        limit = paging.limit(query.get("limit"), default=pages.default, most=pages.most)
        after = query.get(pages.after) or None
        before = (query.get(pages.before) or None) if pages.before else None
        if after and before:
            raise InvalidRequest(f"Send one of {pages.after} and {pages.before}, not both.",
                                 param=pages.before)
        jobs, has_more = await asyncio.to_thread(
            services.repo.list_jobs, workspace.id, limit=limit, after=after, before=before,
            dialects=[d.name for d in among])
        return respond.json(dialect.render_list(jobs, has_more=has_more,
                                                origin=origin(request)))

    async def results_lines(request: web.Request) -> web.StreamResponse:
        """Every row's line, in input order, streamed a page at a time: a million rows
        never sit in memory at once."""
        services, _ = context(request)
        dialect = cast(ResultLines, owner)
        job = await load_job(request, among)
        if not job.terminal:
            raise InvalidRequest(f"Batch {job.id} has not ended yet; its results are ready "
                                 "once it has (results_url is set then).", code="not_ended")
        response = web.StreamResponse(headers={"Content-Type": "application/x-jsonl"})
        await response.prepare(request)
        def page(after: int) -> list[RowRecord]:
            return list(services.repo.rows(job.seq, after_position=after,
                                           limit=RESULTS_STREAM_PAGE))

        position = 0
        while True:
            rows = await asyncio.to_thread(page, position)
            if not rows:
                break
            await response.write(b"".join(codec.dumps(dialect.result_line(job, r)) + b"\n"
                                          for r in rows))
            position = rows[-1].position
        await response.write_eof()
        return response

    async def delete(request: web.Request) -> web.StreamResponse:
        services, _ = context(request)
        dialect = cast(Deletes, owner)
        job = await load_job(request, among)
        if not job.terminal or not await asyncio.to_thread(
                services.repo.delete_job, job.seq, now=services.clock()):
            raise Conflict(f"Batch {job.id} has not ended; only an ended batch can be "
                           "deleted (cancel it first).", code="batch_not_ended")
        return respond.json(dialect.deleted(job))

    handlers = {Action.SUBMIT: submit, Action.GET: get, Action.CANCEL: cancel,
                Action.LIST: list_page, Action.RESULTS: results_lines, Action.DELETE: delete}
    return handlers[kind]



def announce(services: Services, job: Job) -> None:
    """Tell whoever takes a new job next: the validator, or the scheduler."""
    services.notifier.job_created(job)
    try:
        if job.status == VALIDATING:
            services.validator.validate(job.seq)
        elif job.status == QUEUED:
            services.scheduler.wake()
    except pykka.ActorDeadError as exc:  # raced with shutdown: the next start takes it
        raise Unavailable("The batch could not be dispatched; retry.") from exc




async def list_jobs(request: web.Request) -> web.Response:
    """OpenAI's list (the Relay Batches API has none): OpenAI batches unless `dialect`
    asks for Relay jobs or `all`; each job in its own dialect's shape."""
    services, workspace = context(request)
    query = request.query
    limit = paging.limit(query.get("limit"), default=20, most=100)
    dialects = _dialect_filter(query.get("dialect"))
    statuses = _status_filter(query.get("status"), dialects)
    jobs, has_more = await asyncio.to_thread(
        services.repo.list_jobs, workspace.id, limit=limit, after=query.get("after") or None,
        statuses=statuses, template_id=query.get("template_id") or None, dialects=dialects)
    return respond.json(paging.page([render(j, request) for j in jobs],
                                         has_more=has_more))


def _dialect_filter(raw: str | None) -> tuple[str, ...]:
    matched = listed(raw)
    if matched is None:
        raise InvalidRequest(f"'dialect' must be one of {', '.join(LIST_DIALECTS)}; "
                             f"got {raw!r}.", param="dialect")
    return matched


def _status_filter(raw: str | None, dialects: tuple[str, ...]) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if not raw:  # `status=`: no status is named "", and the document lists the names
        raise InvalidRequest("'status' is empty: name a status, or leave the filter out.",
                             param="status")
    matched = statuses_for(raw, first=dialects)
    if matched is None:
        raise InvalidRequest(f"Unknown status {raw!r}.", param="status")
    return matched


def request_cancel(services: Services, job: Job) -> Job:
    """Record the cancel in the store, tell the scheduler (which has the job's owner end
    it), and answer once no row of it will start. Runs in a worker thread: the wait is
    bounded and never on the event loop. The store's conditional transition decides,
    so a stale read of the job can never end it behind its supervisor's back."""
    recorded = services.repo.transition(job.seq, CANCELLING, now=services.clock())
    if recorded is None:
        raise _cannot_cancel(services.repo.job_by_seq(job.seq) or job)
    services.notifier.job_changed(job.seq)
    ack = threading.Event()
    try:
        services.scheduler.cancel(job.seq, ack)
    except pykka.ActorDeadError:  # stopping: nothing will run; the next start ends it
        log.warning("cancel of job %s recorded; the next start ends it", job.id)
        ack.set()
    if not ack.wait(CANCEL_WAIT_S):
        log.warning("cancel of job %s not confirmed in time; it proceeds anyway", job.id)
    return services.repo.job_by_seq(job.seq) or recorded


def request_pause(services: Services, job: Job) -> Job:
    """Record an operator's pause, tell the scheduler (the job's supervisor here stops
    starting rows; other nodes read the pause at their next tick) and answer once no row
    of it starts on this node. Runs in a worker thread, the wait bounded."""
    paused = services.repo.pause_job(job.seq, now=services.clock())
    if paused is None:
        raise _cannot_pause(services.repo.job_by_seq(job.seq) or job, "paused")
    services.notifier.job_paused(paused)
    ack = threading.Event()
    try:
        services.scheduler.pause(job.seq, ack)
    except pykka.ActorDeadError:  # stopping: nothing will run; the pause is stored
        ack.set()
    if not ack.wait(CANCEL_WAIT_S):
        log.warning("pause of job %s not confirmed in time; it proceeds anyway", job.id)
    return services.repo.job_by_seq(job.seq) or paused


def request_resume(services: Services, job: Job) -> Job:
    """Take an operator's pause away; a free slot takes the job again (unless its
    workspace's budget still holds it)."""
    resumed = services.repo.resume_job(job.seq)
    if resumed is None:
        raise _cannot_pause(services.repo.job_by_seq(job.seq) or job, "resumed")
    if job.paused_at is not None:
        services.notifier.job_resumed(resumed)
    with contextlib.suppress(pykka.ActorDeadError):  # stopping: the next start takes it
        services.scheduler.wake()
    return resumed


def _cannot_pause(job: Job, verb: str) -> Conflict:
    shown = dialect_of(job).status_name(job.status)
    if job.terminal:
        return Conflict(f"Batch {job.id} has already ended ({shown}); it cannot be {verb}.",
                        code="batch_already_ended")
    if job.status == CANCELLING:
        return Conflict(f"Batch {job.id} is being cancelled; it cannot be {verb}.",
                        code="batch_already_cancelling")
    return Conflict(f"Batch {job.id} is {shown} (a cron template or a batch being "
                    f"finalized); only a batch that is validating, queued or running can "
                    f"be {verb}.", code="batch_not_pausable")


async def pause(request: web.Request) -> web.Response:
    """A Relay extension on any dialect's job: hold it back from running."""
    services, _ = context(request)
    job = await load_job(request)
    updated = await asyncio.to_thread(request_pause, services, job)
    return respond.json(render(updated, request))


async def resume(request: web.Request) -> web.Response:
    services, _ = context(request)
    job = await load_job(request)
    updated = await asyncio.to_thread(request_resume, services, job)
    return respond.json(render(updated, request))


def _cannot_cancel(job: Job) -> Conflict:
    shown = dialect_of(job).status_name(job.status)
    if job.terminal:
        return Conflict(f"Batch {job.id} has already ended ({shown}); there is nothing to "
                        "cancel.", code="batch_already_ended")
    if job.status == CANCELLING:
        return Conflict(f"Batch {job.id} is already being cancelled.",
                        code="batch_already_cancelling")
    return Conflict(f"Batch {job.id} is {shown} and can no longer be cancelled.",
                    code="batch_not_cancellable")


async def results(request: web.Request) -> web.StreamResponse:
    """Every row's result in input order, empty until the job ends. With `limit`, one
    page of them (after the row whose custom_id is `after`), with `has_more` and
    `last_id`; without, all of them, streamed a page of rows at a time. With `partial=true`, the
    rows finished so far, in finish order, paged by `cursor`."""
    services, _ = context(request)
    job = await load_job(request)  # its status is read before the rows
    query = request.query
    if _partial(query):
        rows, has_more, after = await asyncio.to_thread(_finished_page, services, job, query)
        return respond.json(ResultList(
            id=job.id, object="list", status=dialect_of(job).status_name(job.status),
            data=[relay_result(r) for r in rows], has_more=has_more,
            next_cursor=finish_order.cursor(after)))
    status = dialect_of(job).status_name(job.status)
    if "limit" not in query and "after" not in query and job.terminal:
        return await _stream_results(request, services, job, status)
    limit = None
    if "limit" in query:
        limit = paging.limit(query["limit"], default=0, most=RESULTS_PAGE_MOST)
    rows, has_more = await asyncio.to_thread(_result_rows, services, job, limit=limit,
                                             after=query.get("after"))
    answer: ResultList = {"id": job.id, "object": "list", "status": status,
                          "data": [relay_result(r) for r in rows]}
    if "limit" in query or "after" in query:
        answer |= {"has_more": has_more, "last_id": rows[-1].custom_id if rows else None}
    return respond.json(answer)


async def result_lines(request: web.Request) -> web.Response:
    """The result lines of the rows finished so far, in finish order, each as the job's
    dialect writes it in its result files (OpenAI's output and error lines, Anthropic's
    result lines, Relay's results), paged by `cursor`: while the job runs too."""
    services, _ = context(request)
    job = await load_job(request)  # its status is read before the rows
    rows, has_more, after = await asyncio.to_thread(_finished_page, services, job,
                                                    request.query)
    dialect = dialect_of(job)
    return respond.json(ResultLineList(
        id=job.id, object="list", status=dialect.status_name(job.status),
        data=[cast(Any, dialect.result_lines(job, r)[1]) for r in rows], has_more=has_more,
        next_cursor=finish_order.cursor(after)))


def _partial(query: Mapping[str, str]) -> bool:
    """`?partial=`: true or false (the default); a cursor only pages partial results."""
    raw = query.get("partial", "false")
    if raw not in ("true", "false"):
        raise InvalidRequest(f"'partial' must be true or false; got {raw!r}.", param="partial")
    if raw == "false" and "cursor" in query:
        raise InvalidRequest("'cursor' pages the results finished so far: send it with "
                             "partial=true.", param="cursor")
    if raw == "true" and "after" in query:
        raise InvalidRequest("'after' pages the results in input order; with partial=true "
                             "send 'cursor' instead.", param="after")
    return raw == "true"


def _finished_page(services: Services, job: Job,
                   query: Mapping[str, str]) -> tuple[list[RowRecord], bool, int]:
    """The page of rows finished past the query's `cursor`, whether more follow, and the
    finish sequence the next page starts after."""
    after = finish_order.position(query.get("cursor"))
    limit = paging.limit(query.get("limit"), default=PARTIAL_PAGE, most=RESULTS_PAGE_MOST)
    rows = services.repo.finished_rows(job.seq, after_seq=after, limit=limit + 1)
    page = rows[:limit]
    return page, len(rows) > limit, (page[-1].finished_seq or after) if page else after


async def _stream_results(request: web.Request, services: Services, job: Job,
                          status: str) -> web.StreamResponse:
    """An ended job's whole result list, written a page of rows at a time: the same JSON
    as one answer, but a million rows never sit in memory at once."""
    response = web.StreamResponse(
        headers={"Content-Type": "application/json; charset=utf-8"})
    await response.prepare(request)
    head = codec.dumps({"id": job.id, "object": "list", "status": status})
    await response.write(head[:-1] + b',"data":[')

    def page(after: int) -> list[RowRecord]:
        return list(services.repo.rows(job.seq, after_position=after,
                                       limit=RESULTS_STREAM_PAGE))

    position, first = 0, True
    while rows := await asyncio.to_thread(page, position):
        chunk = b",".join(codec.dumps(relay_result(r)) for r in rows)
        await response.write(chunk if first else b"," + chunk)
        position, first = rows[-1].position, False
    await response.write(b"]}")
    await response.write_eof()
    return response


def _result_rows(services: Services, job: Job, *, limit: int | None,
                 after: str | None) -> tuple[list[RowRecord], bool]:
    """A page of rows and whether more follow, paged in the store's query (one row more
    than asked says whether more follow)."""
    position = 0
    if after is not None:
        cursor = services.repo.row(job.seq, after)
        if cursor is None:
            raise InvalidRequest(f"Batch {job.id} has no row with custom_id {after!r}.",
                                 param="after")
        position = cursor.position
    if not job.terminal:
        return [], False
    rows = list(services.repo.rows(job.seq, after_position=position,
                                   limit=None if limit is None else limit + 1))
    if limit is None or len(rows) <= limit:
        return rows, False
    return rows[:limit], True


async def dead_letter(request: web.Request) -> web.Response:
    services, _ = context(request)
    job = await load_job(request)
    rows = await asyncio.to_thread(services.repo.dead_letter_rows, job.seq)
    return respond.json({"id": job.id, "object": "list",
                              "data": [dead_letter_entry(r) for r in rows]})


async def workspace_dead_letter(request: web.Request) -> web.Response:
    """`GET /v1/dead_letter`: the dead-lettered rows of every job of the workspace, open
    ones by default (`state`), newest job first, each with the job it belongs to."""
    services, workspace = context(request)
    query = request.query
    limit = paging.limit(query.get("limit"), default=100, most=1000)
    state = query.get("state", DL_OPEN)  # `state=` is refused below, like any other name
    if state not in DEAD_LETTER_STATES:
        raise InvalidRequest(f"'state' must be one of {', '.join(DEAD_LETTER_STATES)}; "
                             f"got {state!r}.", param="state")
    states = DL_STATES if state == "all" else (state,)
    found, has_more = await asyncio.to_thread(
        services.repo.workspace_dead_letter, workspace.id, states=states, limit=limit)
    return respond.json({"object": "list", "has_more": has_more,
                              "data": [workspace_dead_letter_entry(j, r) for j, r in found]})


async def discard_dead_letter(request: web.Request) -> web.Response:
    """Take open dead-lettered rows (all, or `custom_ids`) off the job's list; they stay
    in its `dead_letter` count and read `discarded` in its list."""
    services, _ = context(request)
    job = await load_job(request)
    body = await read_json(request) if request.can_read_body else {}
    custom_ids = _custom_ids(body)
    discarded = await asyncio.to_thread(services.repo.discard_dead_letter, job.seq,
                                        custom_ids=custom_ids, now=services.clock())
    if not discarded:
        raise InvalidRequest("This batch has no open dead-lettered rows to discard"
                             + (" among the given custom_ids" if custom_ids else "") + ".",
                             param="custom_ids" if custom_ids else None,
                             code="nothing_to_discard")
    updated = await asyncio.to_thread(services.repo.job_by_seq, job.seq)
    services.notifier.job_changed(job.seq)
    return respond.json({"id": job.id, "object": "batch.dead_letter.discard",
                              "discarded": discarded,
                              "dead_letter_open": (updated or job).dead_letter_open})


async def row(request: web.Request) -> web.Response:
    services, _ = context(request)
    job = await load_job(request)
    custom_id = request.match_info["custom_id"]

    def read() -> RowDetail | None:
        found = services.repo.row(job.seq, custom_id)
        if found is None:
            return None
        return row_detail(job, found, services.repo.rounds(found.id),
                          services.repo.workflow(found.id))

    detail = await asyncio.to_thread(read)
    if detail is None:
        raise not_found("row", custom_id)
    return respond.json(detail)


async def workflows(request: web.Request) -> web.Response:
    services, _ = context(request)
    job = await load_job(request)
    states = await asyncio.to_thread(services.repo.workflow_states, job.seq)
    return respond.json(workflow_counters(job, states))


async def retry_dead_letter(request: web.Request) -> web.Response:
    services, _ = context(request)
    job = await load_job(request)
    body = await read_json(request) if request.can_read_body else {}
    custom_ids, force = _custom_ids(body), _force(body)
    created = await asyncio.to_thread(redrive, services, job, custom_ids=custom_ids,
                                      force=force)
    if created is None:
        raise InvalidRequest("This batch has no dead-lettered rows to retry"
                             + (" among the given custom_ids" if custom_ids else "")
                             + ("" if force else " that were not re-driven already; send "
                                "\"force\": true to re-drive them again") + ".",
                             param="custom_ids" if custom_ids else None,
                             code="nothing_to_retry")
    announce(services, created)
    services.notifier.job_changed(job.seq)  # its rows left the open dead letter
    return respond.json(render(created, request))


def redrive(services: Services, job: Job, *, custom_ids: list[str] | None,
            force: bool) -> Job | None:
    """A new job of the rows a retry takes, started as the job's dialect starts one (an
    OpenAI batch's input file is written first, then recorded with the job in the
    store's one transaction). A retry that lost a race for the rows takes nothing, and
    its file goes. Blocking: runs in a worker thread."""
    rows = services.repo.redrivable_rows(job.seq, custom_ids=custom_ids, force=force)
    if not rows:
        return None
    dialect, now = dialect_of(job), services.clock()
    cap = row_cap(dialect, services.config.limits)
    if len(rows) > cap:
        raise InvalidRequest(f"The retry would take {len(rows)} rows; at most {cap} are "
                             "allowed in a batch ([limits] max_batch_rows): name fewer "
                             "custom_ids.", param="custom_ids", code="too_many_rows")
    start = dialect.redrive(services, job, rows, now=now)
    created = None
    try:
        created = services.repo.retry_dead_letter(
            job.seq, new_id=dialect.new_id(), custom_ids=custom_ids, now=now, force=force,
            input_file=start.input_file, input_rows=[r.id for r in rows],
            expires_at=start.expires_at)
    finally:
        if created is None and start.input_file is not None:
            services.files.remove(start.input_file.path)
    return created


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


def _force(body: Any) -> bool:
    force = body.get("force", False)
    if not isinstance(force, bool):
        raise InvalidRequest("'force' must be true or false.", param="force")
    return force


if TYPE_CHECKING:
    AnyJob: TypeAlias = Mapping[str, Any]
else:
    AnyJob = job_shapes()  # any dialect's job shape, as the document has it


class ResultLineList(TypedDict):
    """The result lines of the rows finished so far, oldest finish first, each in the
    job's dialect's shape of a result file's line."""

    id: str
    object: Literal["list"]
    status: Annotated[str, msgspec.Meta(
        description="The job's status in its own dialect's words, read before the rows: "
                    "once it has ended and has_more is false, no row follows.")]
    data: list[OutputLine | MessageBatchIndividualResponse | RelayResult]
    has_more: bool
    next_cursor: Annotated[str, msgspec.Meta(
        description="The `cursor` of the next page (this page's when it is empty).")]


class BatchList(TypedDict):
    """A page of jobs, newest first, each in its own dialect's shape."""

    object: Literal["list"]
    data: list[AnyJob]
    first_id: str | None
    last_id: str | None
    has_more: bool


BY_JOB = (401, 404)
WRITES = (503, 507)  # what any request that writes may meet when the store cannot write
STATUS_NAMES = sorted({dialect.status_name(s) for dialect in DIALECTS.values()
                       for s in STATUSES})


PARTIAL = Param("partial", "query", bool, "true: the rows finished so far, in finish "
                "order (a Relay extension).", default=False)
CURSOR = Param("cursor", "query", str, "The next_cursor of the page before, in finish "
               "order; none to start.")


def routes() -> list[Route]:
    """Relay's own batch routes, on any dialect's job."""
    custom_id = Param("custom_id", "path", str, "The row's custom_id.")
    return [
        Route("GET", BATCHES, list_jobs, Operation(
            "listBatches", "List jobs, newest first", "Batches", answer=BatchList,
            errors=(400, 404), params=(
                Param("dialect", "query", Literal[LIST_DIALECTS],
                      "Whose jobs to list; each reads in its own dialect's shape.",
                      default=LISTED_BY_DEFAULT),
                Param("limit", "query", Annotated[int, msgspec.Meta(ge=1, le=100)], default=20),
                Param("after", "query", str, "A job id."),
                Param("status", "query", Literal[tuple(STATUS_NAMES)],
                      "Any dialect's name."),
                Param("template_id", "query", str, "A cron template's runs.")))),
        Route("GET", ONE + "/results", results, Operation(
            "getBatchResults", "Each row's content or error", "Batches", answer=ResultList,
            errors=(400, *BY_JOB), params=(
                JOB_ID, Param("limit", "query", Annotated[int, msgspec.Meta(
                    ge=1, le=RESULTS_PAGE_MOST)],
                    "Page the rows; the answer adds has_more and last_id."),
                Param("after", "query", str, "The custom_id the page starts after (also "
                                             "adds has_more and last_id)."),
                PARTIAL, CURSOR),
            description="Empty until the job has ended, as the Relay Batches API has it. "
                        "With `partial=true` (a Relay extension), the rows finished so far, "
                        "oldest finish first, a page of `limit` (default 1000) after "
                        "`cursor`; the answer adds has_more and next_cursor. Polling with "
                        "each next_cursor meets every row once, while the job runs and "
                        "after it has ended.")),
        Route("GET", ONE + "/results/lines", result_lines, Operation(
            "getBatchResultLinesSoFar", "The result lines of the rows finished so far",
            "Batches", answer=ResultLineList, errors=(400, *BY_JOB), params=(
                JOB_ID, CURSOR, Param("limit", "query", Annotated[int, msgspec.Meta(
                    ge=1, le=RESULTS_PAGE_MOST)], default=PARTIAL_PAGE)),
            description="A Relay extension on any dialect's job (OpenAI's batch_… and "
                        "Anthropic's msgbatch_… ids too): each finished row's line as its "
                        "dialect writes its result files (OpenAI's output and error lines, "
                        "Anthropic's result lines), oldest finish first, while the job runs "
                        "and after. OpenAI's output_file_id and Anthropic's results_url stay "
                        "null until the job has ended.")),
        Route("POST", ONE + "/pause", pause, Operation(
            "pauseBatch", "Hold a job back from running", "Batches", answer=AnyJob,
            errors=(*BY_JOB, 409, *WRITES), params=(JOB_ID,),
            description="A Relay extension on any dialect's job (OpenAI's batch_… and "
                        "Anthropic's msgbatch_… ids too). Once answered, no row of it starts "
                        "(on another node, within a quarter second); rows in flight finish "
                        "and it gives up its running slot. Its status stays as it was, with "
                        "`paused: operator` in the Relay shape; it is stored, so a restart "
                        "keeps it paused. Its completion window keeps running, and cancel "
                        "works on it. A job that has ended (or is being cancelled) is 409.")),
        Route("POST", ONE + "/resume", resume, Operation(
            "resumeBatch", "Let a paused job run again", "Batches", answer=AnyJob,
            errors=(*BY_JOB, 409, *WRITES), params=(JOB_ID,),
            description="Takes an operator's pause away (resuming a job that is not paused "
                        "changes nothing); a free running slot takes it again, unless its "
                        "workspace's budget still holds it (`paused: budget`).")),
        Route("GET", ONE + "/dead_letter", dead_letter, Operation(
            "getDeadLetter", "Rows that failed transiently after every retry and fallback",
            "Batches", answer=DeadLetterList, errors=BY_JOB, params=(JOB_ID,))),
        Route("GET", ONE + "/rows/{custom_id:.+}", row, Operation(
            "getBatchRow", "One row: attempts, transcript, workflow state", "Batches",
            answer=RowDetail, errors=BY_JOB, params=(JOB_ID, custom_id))),
        Route("GET", ONE + "/workflows", workflows, Operation(
            "getBatchWorkflows", "A job's workflow records, summed", "Batches",
            answer=WorkflowCounters, errors=BY_JOB, params=(JOB_ID,))),
        Route("POST", ONE + "/dead_letter/retry", retry_dead_letter, Operation(
            "retryDeadLetter", "A new job from the dead-lettered rows", "Batches",
            answer=AnyJob, errors=(400, *BY_JOB, 413, 429, *WRITES), params=(JOB_ID,),
            body=DeadLetterRetry, body_required=False)),
        Route("POST", ONE + "/dead_letter/discard", discard_dead_letter, Operation(
            "discardDeadLetter", "Take open dead-lettered rows off the job's list",
            "Batches", answer=DeadLetterDiscarded, errors=(400, *BY_JOB, 413, 429, *WRITES),
            params=(JOB_ID,), body=DeadLetterDiscard, body_required=False)),
        Route("GET", "/v1/dead_letter", workspace_dead_letter, Operation(
            "listDeadLetter", "Dead-lettered rows of every job of the workspace", "Batches",
            answer=WorkspaceDeadLetterList, errors=(400, 404), params=(
                Param("state", "query", Literal[DEAD_LETTER_STATES],
                      default=DL_OPEN),
                Param("limit", "query", Annotated[int, msgspec.Meta(ge=1, le=1000)],
                      default=100)),
            description="Newest job first, each job's rows in input order.")),
    ]
