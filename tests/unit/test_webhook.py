"""Completion webhooks: seed 000's payload, the signature, and one POST through a mock
transport (no network)."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import httpx
import pytest

from daemon.domain.jobs import Job
from daemon.outbound.webhook import TIMEOUT_S, deliver, payload, pinned, sign

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
    """A MockTransport handler that records every request and answers as told."""

    def __init__(self, reply: httpx.Response | Exception | None = None) -> None:
        self.reply = reply if reply is not None else httpx.Response(200)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


def send(job: Job, receiver: Receiver, **kwargs: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"secret": SECRET, "now": NOW, "allow_private": False,
                               "transport": receiver.transport}
    return deliver(job, **(options | kwargs))


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
                                                 ("expired", "failed")])
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


def test_deliver_posts_the_exact_signed_body() -> None:
    receiver = Receiver()
    job = make_job()
    outcome = send(job, receiver)
    (request,) = receiver.requests
    assert request.method == "POST"
    assert str(request.url) == PUBLIC_URL
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content) == payload(job)
    assert verify(request.headers["relay-signature"], request.content) == int(NOW)
    assert outcome["status_code"] == 200
    assert outcome["error"] is None
    assert outcome["url"] == PUBLIC_URL
    assert outcome["attempted_at"] == "2026-10-04T09:20:03Z"


def test_signature_fails_with_another_secret() -> None:
    receiver = Receiver()
    send(make_job(), receiver)
    (request,) = receiver.requests
    with pytest.raises(AssertionError):
        verify(request.headers["relay-signature"], request.content, secret="whsec_other")


def test_deliver_uses_the_10_second_timeout() -> None:
    receiver = Receiver()
    send(make_job(), receiver)
    assert TIMEOUT_S == 10.0
    timeout = receiver.requests[0].extensions["timeout"]
    assert timeout == {"connect": 10.0, "read": 10.0, "write": 10.0, "pool": 10.0}


@pytest.mark.parametrize("code", [500, 404, 400, 503])
def test_error_status_is_recorded(code: int) -> None:
    outcome = send(make_job(), Receiver(httpx.Response(code)))
    assert outcome["status_code"] == code
    assert outcome["error"] is not None
    assert str(code) in outcome["error"]


def test_any_2xx_is_success() -> None:
    outcome = send(make_job(), Receiver(httpx.Response(204)))
    assert (outcome["status_code"], outcome["error"]) == (204, None)


def test_redirect_is_not_followed() -> None:
    receiver = Receiver(httpx.Response(302, headers={"Location": "https://10.0.0.1/steal"}))
    outcome = send(make_job(), receiver)
    assert len(receiver.requests) == 1
    assert outcome["status_code"] == 302
    assert outcome["error"] is not None


@pytest.mark.parametrize("exc", [httpx.ConnectError("refused"),
                                 httpx.ReadTimeout("slow"),
                                 httpx.RemoteProtocolError("reset")])
def test_transport_exception_is_recorded(exc: Exception) -> None:
    outcome = send(make_job(), Receiver(exc))
    assert outcome["status_code"] is None
    assert type(exc).__name__ in outcome["error"]


def test_url_refused_by_policy_is_not_sent() -> None:
    receiver = Receiver()
    outcome = send(make_job(webhook_url="http://127.0.0.1:9000/hook"), receiver)
    assert receiver.requests == []
    assert outcome["status_code"] is None
    assert outcome["error"]


def test_hostname_resolving_to_loopback_is_not_sent() -> None:
    receiver = Receiver()
    outcome = send(make_job(webhook_url="https://hooks.example.com/relay"), receiver,
                   resolve=lambda host: ["127.0.0.1"])
    assert receiver.requests == []
    assert "non-public" in outcome["error"]


def test_hostname_resolving_to_public_is_sent() -> None:
    receiver = Receiver()
    outcome = send(make_job(webhook_url="https://hooks.example.com/relay"), receiver,
                   resolve=lambda host: ["93.184.216.34"])
    assert len(receiver.requests) == 1
    assert outcome["status_code"] == 200


def test_allow_private_sends_to_loopback_over_http() -> None:
    receiver = Receiver()
    outcome = send(make_job(webhook_url="http://127.0.0.1:9000/hook"), receiver,
                   allow_private=True)
    assert len(receiver.requests) == 1
    assert outcome["status_code"] == 200


def test_invalid_port_gives_an_outcome_not_an_exception() -> None:
    # httpx.InvalidURL is not an httpx.HTTPError: deliver lets it escape today, so the
    # notifier never stores an outcome and the claim stays "sending".
    receiver = Receiver()
    outcome = send(make_job(webhook_url="https://93.184.216.34:abc/hook"), receiver)
    assert receiver.requests == []
    assert outcome["status_code"] is None
    assert outcome["error"]


def test_delivery_connects_to_the_address_the_policy_checked() -> None:
    """DNS can change between the check and the connect: the POST goes to the checked
    address, with the name kept for the Host header and TLS (SNI, certificate)."""
    receiver = Receiver()
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])  # a second lookup would rebind
    outcome = send(make_job(webhook_url="https://hooks.example.com:8443/relay?x=1"), receiver,
                   resolve=lambda host: next(answers))
    assert outcome["status_code"] == 200
    (request,) = receiver.requests
    assert str(request.url) == "https://93.184.216.34:8443/relay?x=1"
    assert request.headers["Host"] == "hooks.example.com:8443"
    assert request.extensions["sni_hostname"] == "hooks.example.com"


@pytest.mark.parametrize(("url", "addresses", "expected"), [
    ("https://93.184.216.34/h", ["93.184.216.34"], "https://93.184.216.34/h"),
    ("https://[2606:2800::1]/h", ["2606:2800::1"], "https://[2606:2800::1]/h"),
    ("https://h.example.com/h", ["2606:2800::1"], "https://[2606:2800::1]/h"),
    ("http://h.example.com/h", [], "http://h.example.com/h"),  # private targets allowed
])
def test_pinned_urls(url: str, addresses: list[str], expected: str) -> None:
    assert pinned(url, addresses)[0] == expected
