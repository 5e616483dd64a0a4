"""Completion webhooks: seed 000's payload, signed, POSTed once with a 10 s timeout.

Signature header: `Relay-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
"<t>.<raw body>">` keyed by the workspace's webhook secret.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

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


def pinned(url: str, addresses: list[str]) -> tuple[str, dict[str, Any]]:
    """Connect to the address the policy checked, not to whatever the name resolves to
    a moment later: the URL gets that address, TLS keeps the name (SNI and certificate
    check) and so does the Host header."""
    parts = urlsplit(url)
    if not addresses or parts.hostname is None or _is_ip(parts.hostname):
        return url, {}
    address = addresses[0]
    host = f"[{address}]" if ":" in address else address
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc)), {"sni_hostname": parts.hostname}


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


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
        checked = check_url(job.webhook_url, param="webhookUrl", allow_private=allow_private,
                            resolve=resolve)
    except InvalidRequest as exc:
        return {**outcome, "status_code": None, "error": exc.message}
    body = json.dumps(payload(job)).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "relayd-webhook/1",
               "Relay-Signature": sign(secret, body, timestamp=int(now))}
    url, extensions = pinned(job.webhook_url, checked)
    if extensions:
        headers["Host"] = urlsplit(job.webhook_url).netloc
    try:
        with httpx.Client(timeout=TIMEOUT_S, follow_redirects=False,
                          transport=transport) as client:
            reply = client.post(url, content=body, headers=headers, extensions=extensions)
    except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
        return {**outcome, "status_code": None, "error": f"{type(exc).__name__}: {exc}"}
    ok = 200 <= reply.status_code < 300
    return {**outcome, "status_code": reply.status_code,
            "error": None if ok else f"receiver answered {reply.status_code}"}
