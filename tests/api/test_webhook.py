"""Completion webhooks: seed 000's payload, signed with the workspace secret, POSTed to a
receiver on loopback (allowed by `security.allow_private_targets`), outcome recorded."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from typing import Any

import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpServer

from tests.actors.harness import wait_for
from tests.api.conftest import MakeRelay, Relay, batch


class Receiver:
    """A webhook endpoint that keeps what it was sent."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.received: list[tuple[dict[str, str], bytes]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.received.append((dict(request.headers), await request.read()))
        return web.Response(status=self.status, text="thanks")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        return app


def verify(signature: str, body: bytes, secret: str) -> bool:
    parts = dict(p.split("=", 1) for p in signature.split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256)
    return hmac.compare_digest(parts["v1"], expected.hexdigest())


async def job_with_webhook(relay: Relay, receiver: Receiver, aiohttp_server: Any,
                           *prompts: str) -> tuple[dict, str]:
    server = await aiohttp_server(receiver.app())
    url = str(server.make_url("/hook"))
    job = await relay.submit(batch(*prompts, name="Review sentiment — October",
                                   webhookUrl=url))
    return job, url


async def test_webhook_gets_the_signed_summary_and_the_outcome_is_recorded(
        make_relay: MakeRelay, aiohttp_server: AiohttpServer) -> None:
    relay = await make_relay(security={"allow_private_targets": True})
    receiver = Receiver()
    job, url = await job_with_webhook(relay, receiver, aiohttp_server, "ok", "OUTAGE", "REFUSE")

    await relay.wait_status(job["id"], "completed")
    await wait_for(lambda: receiver.received, what="the webhook")
    shown = await wait_for(lambda: _webhook_recorded(relay, job["id"]), what="the outcome")

    assert len(receiver.received) == 1
    headers, body = receiver.received[0]
    payload = json.loads(body)
    final = await relay.job(job["id"])
    assert payload == {
        "id": job["id"], "name": "Review sentiment — October", "status": "completed",
        "total": 3, "completed": 1, "failed": 2, "dead_letter": 1,
        "completed_at": final["completed_at"],
    }
    repo = relay.services.repo

    def read_secret() -> str:
        workspace = repo.authenticate(relay.key)
        assert workspace is not None
        return repo.webhook_secret(workspace.id)
    secret = await asyncio.to_thread(read_secret)
    assert verify(headers["Relay-Signature"], body, secret)
    assert not verify(headers["Relay-Signature"], body + b" ", secret)
    assert shown["webhook"]["status_code"] == 200
    assert shown["webhook"]["url"] == url
    assert shown["webhook"]["error"] is None
    assert shown["webhookUrl"] == url


async def test_a_failing_receiver_is_recorded_and_not_retried(
        make_relay: MakeRelay, aiohttp_server: AiohttpServer) -> None:
    relay = await make_relay(security={"allow_private_targets": True})
    receiver = Receiver(status=500)
    job, _ = await job_with_webhook(relay, receiver, aiohttp_server, "ok")

    shown = await wait_for(lambda: _webhook_recorded(relay, job["id"]), what="the outcome")

    assert shown["webhook"]["status_code"] == 500
    assert "500" in shown["webhook"]["error"]
    await relay.tick(relay.clock.advance(10))  # the watchdog: it sends what is unsent
    await relay.webhooks_settled()
    assert len(receiver.received) == 1


async def test_a_canceled_job_sends_its_webhook_too(make_relay: MakeRelay,
                                                    aiohttp_server: AiohttpServer) -> None:
    relay = await make_relay(security={"allow_private_targets": True},
                             gateway={"max_running_jobs": 1})
    await relay.submit(batch("hold BLOCK"))
    receiver = Receiver()
    job, _ = await job_with_webhook(relay, receiver, aiohttp_server, "never runs")

    await relay.ok("POST", f"/v1/batches/{job['id']}/cancel")

    await wait_for(lambda: receiver.received, what="the webhook")
    payload = json.loads(receiver.received[0][1])
    assert (payload["status"], payload["failed"], payload["completed"]) == ("canceled", 1, 0)


async def _webhook_recorded(relay: Relay, job_id: str) -> dict | None:
    job = await relay.job(job_id)
    webhook = job["webhook"]
    return job if webhook and "status_code" in webhook else None


async def test_a_claim_the_store_refuses_is_sent_later_once(
        make_relay: MakeRelay, aiohttp_server: AiohttpServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    relay = await make_relay(security={"allow_private_targets": True})
    repo = relay.services.repo
    claim, refused = repo.claim_webhook, list[bool]()

    def full_disk(*args: Any, **kwargs: Any) -> bool:
        if not refused:
            refused.append(True)
            raise OSError(28, "No space left on device")
        return claim(*args, **kwargs)

    monkeypatch.setattr(repo, "claim_webhook", full_disk)
    receiver = Receiver()
    job, _ = await job_with_webhook(relay, receiver, aiohttp_server, "ok")
    await relay.wait_status(job["id"], "completed")
    await wait_for(lambda: refused, what="the refused claim")
    assert receiver.received == []

    await relay.tick(relay.clock.advance(10))  # the watchdog finds it queued
    await wait_for(lambda: _webhook_recorded(relay, job["id"]), what="the outcome")
    await relay.tick(relay.clock.advance(10))  # done: not sent again
    await relay.webhooks_settled()
    assert len(receiver.received) == 1


async def test_an_outcome_the_store_refuses_is_stored_on_a_later_try(
        make_relay: MakeRelay, aiohttp_server: AiohttpServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    relay = await make_relay(security={"allow_private_targets": True})
    repo = relay.services.repo
    save, refused = repo.save_webhook, list[bool]()

    def full_disk(*args: Any, **kwargs: Any) -> None:
        if len(refused) < 2:
            refused.append(True)
            raise OSError(28, "No space left on device")
        return save(*args, **kwargs)

    monkeypatch.setattr(repo, "save_webhook", full_disk)
    relay.daemon.notifier.save_waits = (0.01, 0.01, 0.01)
    receiver = Receiver()
    job, _ = await job_with_webhook(relay, receiver, aiohttp_server, "ok")

    shown = await wait_for(lambda: _webhook_recorded(relay, job["id"]), what="the outcome")
    assert shown["webhook"]["status_code"] == 200
    assert len(refused) == 2 and len(receiver.received) == 1
