"""A core actor that dies (an unhandled exception in a message, the way Pykka kills an
actor) makes `/healthz` degraded, naming it, and tells the process to stop
(actors/vitals.py). `relayd serve`'s exit status is tests/e2e/test_core_actor_death.py."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pykka
import pytest

from tests.actors.harness import wait_for
from tests.api.conftest import Relay
from tests.api.openapi_contract import Contract

CORE_ACTORS = {"scheduler": "scheduler", "validator": "validator", "notifier": "notifier",
               "prober": "health probe", "sweeper": "sweeper"}


def crash(actor: pykka.ActorRef[Any]) -> None:
    """Tell the actor a message it fails on, unhandled: Pykka stops it (`on_failure`)."""
    actor.tell(pykka.messages.ProxyCall(attr_path=("no_such_message",), args=(), kwargs={}))


@pytest.mark.parametrize("attribute", sorted(CORE_ACTORS))
async def test_a_dead_core_actor_makes_healthz_degraded_naming_it(relay: Relay,
                                                                  attribute: str) -> None:
    told = threading.Event()
    relay.daemon.vitals.on_death = told.set
    status, body = await relay.call("GET", "/healthz")
    assert (status, body) == (200, {"status": "ok"})

    crash(getattr(relay.daemon, attribute).actor_ref)

    async def degraded() -> dict[str, Any] | None:
        status, body = await Contract(relay).call("GET", "/healthz", auth=False)
        return body if status == 503 else None  # and as the OpenAPI document says

    body = await wait_for(degraded, what="/healthz to turn degraded")
    name = CORE_ACTORS[attribute]
    assert body["status"] == "degraded" and body["reason"] == "actor_dead"
    assert body["actors"] == [name]
    assert body["detail"].startswith(f"{name} died") and "status 70" in body["detail"]
    assert isinstance(body["since"], float)
    assert told.is_set()


async def test_degraded_outlasts_the_drain_that_follows(relay: Relay) -> None:
    """While the process drains (no longer accepting), `/healthz` still says why."""
    crash(relay.daemon.scheduler.actor_ref)
    await wait_for(lambda: relay.daemon.health.death is not None, what="the death noticed")
    relay.services.accepting = False
    status, body = await relay.call("GET", "/healthz")
    assert status == 503 and body["actors"] == ["scheduler"]


async def test_a_drain_after_the_scheduler_died_reaches_the_jobs_supervisor(relay: Relay) -> None:
    """The stop that follows drains each supervisor itself when the scheduler cannot
    pass the drain on: what finished is stored, the job stays running for the next
    start."""
    job = await relay.submit({"model": "gpt-4o-mini", "requests": [
        {"custom_id": f"r-{i}", "messages": [{"role": "user", "content": prompt}]}
        for i, prompt in enumerate(["fine 0", "fine 1", "BLOCK 2", "BLOCK 3"])]})
    await wait_for(lambda: relay.upstream.in_flight() == 2 and len(relay.upstream.calls) == 4,
                   what="two rows answered, two waiting in the upstream")
    crash(relay.daemon.scheduler.actor_ref)
    await wait_for(lambda: relay.daemon.health.death is not None, what="the death noticed")

    drained = await asyncio.to_thread(relay.daemon._drain_jobs, timeout=5)

    assert len(drained) == 1  # the job's supervisor, found without the scheduler
    await asyncio.to_thread(lambda: [d.get(timeout=5) for d in drained])
    stored = relay.daemon.repo.get_job(job["id"])
    assert stored is not None and stored.status == "running"
    counts = await asyncio.to_thread(relay.daemon.repo.row_counts, stored.seq)
    assert (counts["completed"], counts["pending"]) == (2, 2)
