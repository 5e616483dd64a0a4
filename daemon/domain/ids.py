"""Public identifiers: 32 hex characters, with OpenAI's prefixes where OpenAI has them."""

from __future__ import annotations

import secrets


def relay_job_id() -> str:
    return secrets.token_hex(16)


def openai_batch_id() -> str:
    return "batch_" + secrets.token_hex(16)


def file_id() -> str:
    return "file-" + secrets.token_hex(16)


def api_key() -> str:
    return "rk_" + secrets.token_urlsafe(32)
