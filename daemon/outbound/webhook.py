"""Completion webhooks: seed 000's payload, signed, POSTed once with a 10 s timeout.

Signature header: `Relay-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
"<t>.<raw body>">` keyed by the workspace's webhook secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import httpx

from daemon.domain.errors import InvalidRequest
from daemon.domain.jobs import Job, relay_status
from daemon.domain.render import iso
from daemon.outbound.policy import Resolver, check_url, system_resolver

TIMEOUT_S = 10.0


def payload(job: Job) -> dict[str, Any]:
    """Seed 000's completion summary."""
    return {
        "id": job.id,
        "name": job.name,
        "status": relay_status(job.status),
        "total": job.total,
        "completed": job.completed,
        "failed": job.failed,
        "dead_letter": job.dead_letter,
        "completed_at": iso(job.finished_at),
    }


def sign(secret: str, body: bytes, *, timestamp: int) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def deliver(
    job: Job,
    *,
    secret: str,
    now: float,
    allow_private: bool,
    transport: httpx.BaseTransport | None = None,
    resolve: Resolver = system_resolver,
) -> dict[str, Any]:
    """POST the payload once; return the outcome to store on the job as `webhook`."""
    assert job.webhook_url is not None
    outcome: dict[str, Any] = {"url": job.webhook_url, "attempted_at": iso(now)}
    try:
        check_url(job.webhook_url, param="webhookUrl", allow_private=allow_private,
                  resolve=resolve)
    except InvalidRequest as exc:
        return {**outcome, "status_code": None, "error": exc.message}
    body = json.dumps(payload(job)).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "relayd-webhook/1",
               "Relay-Signature": sign(secret, body, timestamp=int(now))}
    try:
        with httpx.Client(timeout=TIMEOUT_S, follow_redirects=False,
                          transport=transport) as client:
            reply = client.post(job.webhook_url, content=body, headers=headers)
    except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
        return {**outcome, "status_code": None, "error": f"{type(exc).__name__}: {exc}"}
    ok = 200 <= reply.status_code < 300
    return {**outcome, "status_code": reply.status_code,
            "error": None if ok else f"receiver answered {reply.status_code}"}
