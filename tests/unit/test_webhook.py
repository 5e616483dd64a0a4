"""Completion webhooks: seed 000's payload, the signature, and one POST through the
outbound client to a real receiver on 127.0.0.1."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web

from daemon.dialects.relay.render import webhook_payload as payload
from daemon.domain.jobs import Job
from daemon.outbound import webhook
from daemon.outbound.http import OutboundClient, OutboundReply
from daemon.outbound.webhook import TIMEOUT_S, deliver, sign

FINISHED = 1_791_105_601.0  # 2026-10-04T09:20:01Z
NOW = FINISHED + 2
SECRET = "whsec_test"
PUBLIC_URL = "https://93.184.216.34/relay-webhook"


def make_job(**overrides: Any) -> Job:
    fields: dict[str, Any] = {
        "id": "9f2c1b7e4a8d4e51b0c6d3f2a1e5c7b9", "seq": 3, "workspace_id": 1,
        "dialect": "relay", "name": "Review sentiment — October", "model": "gpt-4o-mini",
        "endpoint": "/v1/chat/completions", "status": "completed", "priority": 5,
        "created_at": FINISHED - 437, "total": 2, "completed": 2, "failed": 0,
        "dead_letter": 0, "finished_at": FINISHED, "webhook_url": PUBLIC_URL,
    }
    return Job(**(fields | overrides))


class Receiver:
    """A webhook endpoint on loopback that records every request and answers as told."""

    def __init__(self) -> None:
        self.requests: list[web.Request] = []
        self.bodies: list[bytes] = []
        self.status = 200
        self.body = b""
        self.location: str | None = None
        self.release = asyncio.Event()
        self.stall = False
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(request)
        self.bodies.append(await request.read())
        if self.stall:
            await asyncio.wait_for(self.release.wait(), 5)
        headers = {"Location": self.location} if self.location else None
        return web.Response(status=self.status, body=self.body, headers=headers)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        app.router.add_post("/elsewhere", self.handle)
        return app

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"


@pytest.fixture
async def receiver(aiohttp_server: Any) -> AsyncIterator[Receiver]:
    rec = Receiver()
    server = await aiohttp_server(rec.app())
    rec.port = server.port
    yield rec
    rec.release.set()


@pytest.fixture
async def clients() -> AsyncIterator[Callable[..., OutboundClient]]:
    made: list[OutboundClient] = []

    def make(**kwargs: Any) -> OutboundClient:
        client = OutboundClient(**({"allow_private": True} | kwargs))
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


async def send(job: Job, client: OutboundClient, **kwargs: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"secret": SECRET, "now": NOW, "client": client}
    return await deliver(job, **({"payload": payload(job)} | options | kwargs))


def verify(header: str, body: bytes, secret: str = SECRET) -> int:
    parts = dict(item.split("=", 1) for item in header.split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body,
                        hashlib.sha256).hexdigest()
    assert hmac.compare_digest(parts["v1"], expected)
    return int(parts["t"])


def test_payload_is_seed_000_summary() -> None:
    assert payload(make_job(dead_letter=1, failed=1, completed=1)) == {
        "id": "9f2c1b7e4a8d4e51b0c6d3f2a1e5c7b9",
        "name": "Review sentiment — October",
        "status": "completed",
        "total": 2,
        "completed": 1,
        "failed": 1,
        "dead_letter": 1,
        "completed_at": "2026-10-04T09:20:01Z",
    }


@pytest.mark.parametrize(("internal", "shown"), [("cancelled", "canceled"),
                                                 ("failed", "failed"),
                                                 ("expired", "completed")])
def test_payload_uses_relay_status_names(internal: str, shown: str) -> None:
    assert payload(make_job(status=internal))["status"] == shown


def test_sign_matches_hand_computed_hmac() -> None:
    body = b'{"id": "abc"}'
    mac = hmac.new(b"whsec_test", b'1700000000.{"id": "abc"}', hashlib.sha256).hexdigest()
    assert sign("whsec_test", body, timestamp=1_700_000_000) == f"t=1700000000,v1={mac}"


def test_sign_depends_on_secret_timestamp_and_body() -> None:
    base = sign("s1", b"{}", timestamp=1)
    assert sign("s2", b"{}", timestamp=1) != base
    assert sign("s1", b"{}", timestamp=2).split(",")[1] != base.split(",")[1]
    assert sign("s1", b"{ }", timestamp=1) != base


async def test_deliver_posts_the_exact_signed_body(receiver: Receiver,
                                                   clients: Callable[..., OutboundClient]) -> None:
    job = make_job(webhook_url=receiver.url)
    outcome = await send(job, clients())
    (request,) = receiver.requests
    (body,) = receiver.bodies
    assert request.method == "POST"
    assert request.path == "/hook"
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["User-Agent"] == "relayd-webhook/1"
    assert json.loads(body) == payload(job)
    assert verify(request.headers["Relay-Signature"], body) == int(NOW)
    assert outcome == {"url": receiver.url, "attempted_at": "2026-10-04T09:20:03Z",
                       "status_code": 200, "error": None}


async def test_signature_fails_with_another_secret(receiver: Receiver,
                                                   clients: Callable[..., OutboundClient]) -> None:
    await send(make_job(webhook_url=receiver.url), clients())
    with pytest.raises(AssertionError):
        verify(receiver.requests[0].headers["Relay-Signature"], receiver.bodies[0],
               secret="whsec_other")


class Recording(OutboundClient):
    """Records what `deliver` asks of the client; sends nothing."""

    def __init__(self) -> None:
        super().__init__(allow_private=False)
        self.calls: list[tuple[str, bytes, dict[str, Any]]] = []

    async def post_json(self, url: str, payload: Any, **kwargs: Any) -> OutboundReply:
        self.calls.append((url, payload, kwargs))
        return OutboundReply(status=200, headers={}, body=b"")


async def test_deliver_uses_the_10_second_timeout_and_names_the_field() -> None:
    client = Recording()
    outcome = await send(make_job(), client)
    ((url, body, options),) = client.calls
    assert TIMEOUT_S == 10.0
    assert options["timeout_s"] == 10.0
    assert options["param"] == "webhookUrl"
    assert url == PUBLIC_URL
    assert json.loads(body) == payload(make_job())
    assert outcome["status_code"] == 200


@pytest.mark.parametrize("code", [500, 404, 400, 503])
async def test_error_status_is_recorded(receiver: Receiver, clients: Callable[..., OutboundClient],
                                        code: int) -> None:
    receiver.status = code
    outcome = await send(make_job(webhook_url=receiver.url), clients())
    assert outcome["status_code"] == code
    assert outcome["error"] == f"receiver answered {code}"


async def test_any_2xx_is_success(receiver: Receiver,
                                  clients: Callable[..., OutboundClient]) -> None:
    receiver.status = 204
    outcome = await send(make_job(webhook_url=receiver.url), clients())
    assert (outcome["status_code"], outcome["error"]) == (204, None)


async def test_a_long_answer_to_a_delivered_webhook_is_still_a_success(
        receiver: Receiver, clients: Callable[..., OutboundClient]) -> None:
    receiver.body = b"z" * (webhook.MAX_REPLY_BYTES + 1)
    outcome = await send(make_job(webhook_url=receiver.url), clients())
    assert (outcome["status_code"], outcome["error"]) == (200, None)


async def test_redirect_is_not_followed(receiver: Receiver,
                                        clients: Callable[..., OutboundClient]) -> None:
    receiver.status = 302
    receiver.location = "/elsewhere"
    outcome = await send(make_job(webhook_url=receiver.url), clients())
    assert [r.path for r in receiver.requests] == ["/hook"]
    assert outcome["status_code"] == 302
    assert outcome["error"] == "receiver answered 302"


async def test_timeout_is_recorded(receiver: Receiver, clients: Callable[..., OutboundClient],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhook, "TIMEOUT_S", 0.1)
    receiver.stall = True
    outcome = await send(make_job(webhook_url=receiver.url), clients())
    receiver.release.set()
    assert outcome["status_code"] is None
    assert "no complete answer" in outcome["error"]


async def test_connection_refused_is_recorded(clients: Callable[..., OutboundClient]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    outcome = await send(make_job(webhook_url=f"http://127.0.0.1:{port}/hook"), clients())
    assert outcome["status_code"] is None
    assert outcome["error"]


async def test_url_refused_by_policy_is_not_sent(receiver: Receiver,
                                                 clients: Callable[..., OutboundClient]) -> None:
    strict = clients(allow_private=False)
    for url in (receiver.url, f"https://127.0.0.1:{receiver.port}/hook"):
        outcome = await send(make_job(webhook_url=url), strict)
        assert outcome["status_code"] is None
        assert "'webhookUrl'" in outcome["error"]
    assert receiver.requests == []


async def test_hostname_resolving_to_loopback_is_not_sent(
        receiver: Receiver, clients: Callable[..., OutboundClient]) -> None:
    strict = clients(allow_private=False, resolve=lambda host: ["127.0.0.1"])
    url = f"https://hooks.example.com:{receiver.port}/hook"
    outcome = await send(make_job(webhook_url=url), strict)
    assert receiver.requests == []
    assert outcome["status_code"] is None
    assert "non-public" in outcome["error"]


async def test_allow_private_sends_to_loopback_over_http(
        receiver: Receiver, clients: Callable[..., OutboundClient]) -> None:
    outcome = await send(make_job(webhook_url=receiver.url), clients(allow_private=True))
    assert len(receiver.requests) == 1
    assert outcome["status_code"] == 200


async def test_invalid_port_gives_an_outcome_not_an_exception(
        clients: Callable[..., OutboundClient]) -> None:
    outcome = await send(make_job(webhook_url="https://93.184.216.34:abc/hook"),
                         clients(allow_private=False))
    assert outcome["status_code"] is None
    assert outcome["error"]


async def test_delivery_connects_to_the_looked_up_address_keeping_the_name(
        receiver: Receiver, clients: Callable[..., OutboundClient]) -> None:
    """One lookup, at connect time: a second answer (DNS rebinding) is never asked for;
    the POST goes to the first answer and the Host header keeps the name."""
    answers = iter([["127.0.0.1"], ["192.0.2.1"]])
    client = clients(allow_private=True, resolve=lambda host: next(answers))
    url = f"http://hooks.example.com:{receiver.port}/hook?x=1"
    outcome = await send(make_job(webhook_url=url), client)
    assert outcome["status_code"] == 200
    (request,) = receiver.requests
    assert request.headers["Host"] == f"hooks.example.com:{receiver.port}"
    assert request.query_string == "x=1"
    assert next(answers) == ["192.0.2.1"]  # never consumed
