"""Public identifiers: 32 hex characters, with OpenAI's prefixes where OpenAI has them."""

from __future__ import annotations

import hashlib
import secrets


def relay_job_id() -> str:
    return secrets.token_hex(16)


def openai_batch_id() -> str:
    return "batch_" + secrets.token_hex(16)


def file_id() -> str:
    return "file-" + secrets.token_hex(16)


def api_key() -> str:
    return "rk_" + secrets.token_urlsafe(32)


def stable(prefix: str, *parts: object) -> str:
    """An id derived from `parts`: the same parts give the same id across retries and
    restarts (for receivers that drop repeats), different parts a different one."""
    digest = hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()
    return f"{prefix}_{digest[:32]}"
