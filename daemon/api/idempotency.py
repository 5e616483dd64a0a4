"""`Idempotency-Key` around a create (`POST /v1/batches`, `POST /v1/messages/batches`,
`POST /v1/files`): the rules are domain/idempotency.py's, the keys the store's. The key
is reserved before the create runs, so of concurrent retries exactly one creates; the
others wait for its answer and get it verbatim."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import web

from daemon.api.context import Services
from daemon.domain.idempotency import HEADER, checked_key, in_progress, live, verdict
from daemon.store.interface import WorkspaceRecord

WAIT_S = 30.0  # how long a retry waits for the first request's answer
POLL_S = 0.05
REPLAYED = "Idempotent-Replayed"  # a header on an answer that is a stored one


def key_of(request: web.Request) -> str | None:
    return checked_key(request.headers.get(HEADER))


async def once(request: web.Request, services: Services, workspace: WorkspaceRecord, *,
               key: str | None, body_sha256: str,
               create: Callable[[], Awaitable[web.Response]]) -> web.Response:
    """`create()`'s answer, or with `key` seen before, the stored answer of its first
    request (409 when that request's body differed)."""
    if key is None:
        return await create()
    route = f"{request.method} {request.path}"
    repo = services.repo
    waited = 0.0
    while True:
        stored = await asyncio.to_thread(repo.reserve_key, workspace.id, key, route=route,
                                         body_sha256=body_sha256, now=services.clock())
        if stored is None:
            break
        if live(stored, now=services.clock()) and verdict(
                stored, route=route, body_sha256=body_sha256) == "replay":
            assert stored.answer is not None and stored.status is not None
            return web.Response(body=stored.answer, status=stored.status, headers={
                "Content-Type": stored.content_type or "application/json", REPLAYED: "true"})
        if waited >= WAIT_S:
            raise in_progress(key)
        await asyncio.sleep(POLL_S)
        waited += POLL_S
    try:
        answer = await create()
    except BaseException:
        await asyncio.shield(asyncio.to_thread(repo.release_key, workspace.id, key))
        raise
    if 200 <= answer.status < 300 and isinstance(answer.body, bytes | bytearray):
        await asyncio.to_thread(repo.answer_key, workspace.id, key, status=answer.status,
                                content_type=answer.headers.get("Content-Type",
                                                                "application/json"),
                                answer=bytes(answer.body))
    else:
        await asyncio.to_thread(repo.release_key, workspace.id, key)
    return answer
