"""Completion webhooks: the job's summary, signed, POSTed once with a 10 s timeout
through the shared `OutboundClient` (URL policy and DNS pinning at connect time).

Signature header: `Relay-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
"<t>.<raw body>">` keyed by the workspace's webhook secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

from daemon.domain.jobs import Job
from daemon.domain.stamps import iso
from daemon.outbound.http import OutboundClient, OutboundError

TIMEOUT_S = 10.0
MAX_REPLY_BYTES = 64 * 1024  # the receiver's answer is never used: read a little, at most
USER_AGENT = "relayd-webhook/1"


def sign(secret: str, body: bytes, *, timestamp: int) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


async def deliver(job: Job, *, payload: Mapping[str, Any], secret: str, now: float,
                  client: OutboundClient) -> dict[str, Any]:
    """POST `payload` (the job's dialect's summary) once; return the outcome to store
    on the job as `webhook`: `{url, attempted_at, status_code, error}` (`error` is
    None only for a 2xx)."""
    assert job.webhook_url is not None
    outcome: dict[str, Any] = {"url": job.webhook_url, "attempted_at": iso(now)}
    body = json.dumps(payload).encode()
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT,
               "Relay-Signature": sign(secret, body, timestamp=int(now))}
    try:
        reply = await client.post_json(job.webhook_url, body, headers=headers,
                                       timeout_s=TIMEOUT_S, param="webhookUrl",
                                       max_bytes=MAX_REPLY_BYTES)
        status = reply.status
    except OutboundError as exc:
        if exc.kind != "too_large" or exc.status is None:
            return {**outcome, "status_code": None, "error": exc.message}
        status = exc.status  # delivered; only the (unused) answer was too long
    ok = 200 <= status < 300
    return {**outcome, "status_code": status,
            "error": None if ok else f"receiver answered {status}"}
