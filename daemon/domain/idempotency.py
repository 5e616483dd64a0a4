"""Idempotent submits: what a request carrying an `Idempotency-Key` gets when the key
was seen before. Pure rules; the store keeps the keys (`store/idempotency.py`) and the
API applies them around a create (`api/idempotency.py`).

A key is a workspace's. The first request with it reserves it (insert first, so of
concurrent retries exactly one goes on); its answer, once a 2xx, is stored and every
later request with the same key and the same body (the SHA-256 of its raw bytes, and
the same route) within `KEEP_S` gets that answer verbatim. A different body is
refused (409 `idempotency_key_reused`). A request that fails creates nothing, so its
key is released and a retry runs anew.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from daemon.domain.errors import Conflict, InvalidRequest

HEADER = "Idempotency-Key"
KEEP_S = 24 * 3600.0  # how long a key answers; the sweeper deletes it after
MOST_CHARS = 255  # a key's longest length


@dataclass(frozen=True)
class StoredKey:
    """A key as the store has it: the request it came with and, once answered, the
    answer (None while its first request is in progress)."""

    key: str
    route: str
    body_sha256: str
    created_at: float
    status: int | None = None
    content_type: str | None = None
    answer: bytes | None = None


Verdict = Literal["replay", "in_progress"]


def fingerprint(raw: bytes | bytearray) -> str:
    return hashlib.sha256(raw).hexdigest()


def checked_key(value: str | None) -> str | None:
    """The header's key, or None without one; 400 naming the header when malformed."""
    if value is None:
        return None
    key = value.strip()
    if not key or len(key) > MOST_CHARS or not key.isprintable() or not key.isascii():
        raise InvalidRequest(f"The {HEADER} header must be 1 to {MOST_CHARS} printable ASCII "
                             "characters.", param=HEADER, code="invalid_idempotency_key")
    return key


def live(stored: StoredKey, *, now: float) -> bool:
    """Whether a stored key still answers at `now` (else it is as good as swept)."""
    return now - stored.created_at < KEEP_S


def verdict(stored: StoredKey, *, route: str, body_sha256: str) -> Verdict:
    """What a request meeting a live stored key gets: its stored answer (`replay`), or,
    its first request still running, `in_progress`; a different request is refused."""
    if stored.route != route or stored.body_sha256 != body_sha256:
        raise Conflict(f"The {HEADER} {stored.key!r} was used within the last 24 hours with "
                       "a different request body; use a new key for a new request.",
                       param=HEADER, code="idempotency_key_reused")
    return "in_progress" if stored.answer is None else "replay"


def in_progress(key: str) -> Conflict:
    return Conflict(f"A request with the {HEADER} {key!r} is still in progress; retry "
                    "shortly.", param=HEADER, code="idempotency_key_in_use")
