"""Fixtures for API tests: the real aiohttp app on a real Daemon (SQLite in tmp_path,
actors on threads), with the scripted upstream behind a FunctionTransport."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from daemon.api.app import create_app
from daemon.api.context import Services
from daemon.runtime import Daemon
from tests.actors.harness import (
    PRIMARY,
    FakeClock,
    Upstream,
    actor_state,
    make_config,
    make_daemon,
    stop_daemon,
    wait_for,
)

TERMINAL = ("completed", "failed", "canceled")


def assert_envelope(body: dict[str, Any], *, code: str | None = None) -> dict[str, Any]:
    """The error envelope every refusal uses; returns its `error` object."""
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    if code is not None:
        assert error["code"] == code
    return error


def rows(*prompts: str) -> list[dict[str, Any]]:
    return [{"custom_id": f"r-{i}", "messages": [{"role": "user", "content": p}]}
            for i, p in enumerate(prompts, 1)]


def batch(*prompts: str, **fields: Any) -> dict[str, Any]:
    """A Relay-dialect submit body with one row per prompt."""
    return {"model": PRIMARY, "requests": rows(*prompts), **fields}


def openai_batch(*prompts: str, **fields: Any) -> dict[str, Any]:
    """An OpenAI-dialect submit body (inline `requests`) with one record per prompt."""
    chat = "/v1/chat/completions"
    records = [{"custom_id": f"o-{i}", "method": "POST", "url": chat,
                "body": {"model": PRIMARY, "messages": [{"role": "user", "content": p}]}}
               for i, p in enumerate(prompts, 1)]
    return {"endpoint": chat, "completion_window": "24h", "requests": records, **fields}


@dataclass
class Relay:
    """The app under test, reached over HTTP with a workspace's key."""

    client: TestClient
    services: Services
    daemon: Daemon
    upstream: Upstream
    clock: FakeClock
    key: str

    def headers(self, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key or self.key}"}

    async def call(self, method: str, path: str, *, key: str | None = None,
                   **kwargs: Any) -> tuple[int, Any]:
        async with self.client.request(method, path, headers=self.headers(key),
                                       **kwargs) as resp:
            return resp.status, await resp.json()

    async def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        status, body = await self.call(method, path, **kwargs)
        assert status == 200, body
        return body

    async def submit(self, body: dict[str, Any], *, key: str | None = None) -> dict[str, Any]:
        status, job = await self.call("POST", "/v1/batches", json=body, key=key)
        assert status == 200, job
        return job

    async def job(self, job_id: str, *, key: str | None = None) -> dict[str, Any]:
        return await self.ok("GET", f"/v1/batches/{job_id}", key=key)

    async def wait_status(self, job_id: str, *statuses: str, timeout: float = 5.0,
                          key: str | None = None) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        async def reached() -> dict[str, Any] | None:
            job = seen["job"] = await self.job(job_id, key=key)
            return job if job["status"] in statuses else None
        try:
            return await wait_for(reached, timeout=timeout, what=f"{job_id} to be {statuses}")
        except TimeoutError as exc:  # say where it stood: a flake is found from that
            raise TimeoutError(f"{exc}; last seen: {seen.get('job')}") from None

    async def results(self, job_id: str) -> list[dict[str, Any]]:
        return (await self.ok("GET", f"/v1/batches/{job_id}/results"))["data"]

    async def listing(self, query: str = "", *, dialect: str | None = "all") -> dict[str, Any]:
        """`GET /v1/batches` + `query`, of every dialect's jobs unless `dialect` says
        otherwise (None: the default, OpenAI batches only)."""
        if dialect is not None:
            query += ("&" if query else "?") + f"dialect={dialect}"
        return await self.ok("GET", f"/v1/batches{query}")

    async def results_page(self, job_id: str, query: str) -> dict[str, Any]:
        return await self.ok("GET", f"/v1/batches/{job_id}/results{query}")

    async def supervisor_gone(self, job_id: str) -> None:
        """Wait until the scheduler has heard that the job's supervisor stopped. A
        supervisor ends only once every row it handed out has reported, so from here no
        row of the job can still go upstream: what did not happen by now never will."""
        job = await asyncio.to_thread(self.services.repo.get_job, job_id)
        assert job is not None

        def gone() -> bool:
            return job.seq not in actor_state(self.services.scheduler).running.get(timeout=5)
        await wait_for(lambda: asyncio.to_thread(gone), what=f"{job_id}'s supervisor to stop")

    async def webhooks_settled(self) -> None:
        """Return once every webhook the notifier was told to send before this call has
        been sent and its outcome handled: a message to the notifier (read after those)
        gives it a new thread pool, and the old one's shutdown waits for all it took."""
        notifier = actor_state(self.services.notifier)

        def settle() -> None:
            old = notifier.pool.get(timeout=5)
            notifier.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="relay-webhook")
            old.shutdown(wait=True)
        await asyncio.to_thread(settle)

    async def tick(self, now: float) -> None:
        """Run the scheduler's timer message at `now` and wait until it is handled."""
        await asyncio.to_thread(lambda: self.services.scheduler.tick(now).get(timeout=5))

    async def new_key(self, workspace: str) -> str:
        return await asyncio.to_thread(self.services.repo.create_key, workspace,
                                       now=self.clock())


MakeRelay = Callable[..., Awaitable[Relay]]


@pytest.fixture
async def make_relay(tmp_path: Path, aiohttp_client: Any) -> AsyncIterator[MakeRelay]:
    """`await make_relay(gateway={...}, ...)`: a started Daemon and a test client on its
    app; config sections override the harness defaults; `upstream` replaces the
    scripted upstream (a subclass that answers more). Stopped at teardown."""
    daemons: list[tuple[Daemon, Upstream]] = []

    async def make(upstream: Upstream | None = None, **sections: dict[str, Any]) -> Relay:
        upstream, clock = upstream or Upstream(), FakeClock()
        daemon = make_daemon(make_config(tmp_path, **sections), upstream, clock)
        services = await asyncio.to_thread(daemon.start)
        daemons.append((daemon, upstream))
        client = await aiohttp_client(create_app(services))
        key = await asyncio.to_thread(services.repo.create_key, "ws-a", now=clock())
        return Relay(client, services, daemon, upstream, clock, key)

    yield make
    for daemon, upstream in daemons:
        await asyncio.to_thread(stop_daemon, daemon, upstream)


@pytest.fixture
async def relay(make_relay: MakeRelay) -> Relay:
    return await make_relay()
