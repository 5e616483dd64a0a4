"""The APIs the simulator speaks, OpenAI's (chat, completions, embeddings, moderations;
the Responses API counts usage under its own names) and Anthropic's (`/v1/messages`):
what differs between them once a request is parsed, that is the error envelope, the
rate-limit headers, the headers a request must carry and how usage is counted.
Everything else (faults, limits, replies) is shared. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from daemon.domain.ratelimit import format_duration
from daemon.simulator.limits import Quota

# Anthropic's error types by status; other 4xx are invalid_request_error, other 5xx api_error.
ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error",
                    402: "billing_error", 403: "permission_error", 404: "not_found_error",
                    413: "request_too_large", 429: "rate_limit_error", 504: "timeout_error",
                    529: "overloaded_error"}


@dataclass(frozen=True)
class Api:
    """One API's envelopes and counts."""

    name: str
    # (status, message, param, code) -> the error body
    error_body: Callable[[int, str, str | None, str | None], dict[str, Any]]
    # (the model's quotas, the wall-clock time) -> the rate-limit headers
    rate_headers: Callable[[list[Quota], float], dict[str, str]]
    usage_keys: tuple[str, str]  # (prompt, completion) token counts in `usage`
    required_headers: tuple[str, ...] = ()

    def used(self, usage: dict[str, int]) -> int:
        """The tokens an answer used: what a --tpm charge is corrected to."""
        return sum(usage.get(key, 0) for key in self.usage_keys)

    def with_usage(self, usage: dict[str, int], reported: dict[str, int]) -> dict[str, int]:
        """`usage` with the counts a `[sim:prompt_tokens=N completion_tokens=N]` gives,
        under this API's names (OpenAI's total_tokens their sum)."""
        names = dict(zip(("prompt_tokens", "completion_tokens"), self.usage_keys, strict=True))
        usage = usage | {names[key]: value for key, value in reported.items()}
        if "total_tokens" in usage:
            usage["total_tokens"] = self.used(usage)
        return usage


def openai_error(status: int, message: str, param: str | None,
                 code: str | None) -> dict[str, Any]:
    kind = ("requests" if status == 429 else "server_error" if status >= 500
            else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def anthropic_error(status: int, message: str, param: str | None,
                    code: str | None) -> dict[str, Any]:
    """Anthropic's envelope, which names no param or code (the message names the field)."""
    kind = ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500
                                else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_rate_headers(quotas: list[Quota], wall: float) -> dict[str, str]:
    """`x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, reset as `1.5s`."""
    headers: dict[str, str] = {}
    for quota in quotas:
        headers[f"x-ratelimit-limit-{quota.name}"] = str(quota.limit)
        headers[f"x-ratelimit-remaining-{quota.name}"] = str(quota.remaining)
        headers[f"x-ratelimit-reset-{quota.name}"] = format_duration(quota.reset_s)
    return headers


def anthropic_rate_headers(quotas: list[Quota], wall: float) -> dict[str, str]:
    """`anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`, reset as the
    RFC 3339 instant the bucket is full again."""
    headers: dict[str, str] = {}
    for quota in quotas:
        prefix = f"anthropic-ratelimit-{quota.name}"
        headers[f"{prefix}-limit"] = str(quota.limit)
        headers[f"{prefix}-remaining"] = str(quota.remaining)
        headers[f"{prefix}-reset"] = rfc3339(wall + quota.reset_s)
    return headers


def rfc3339(at: float) -> str:
    """`2026-12-01T18:00:00.250Z`: milliseconds, rounded up (never before the instant)."""
    instant = datetime.fromtimestamp(math.ceil(at * 1000) / 1000, UTC)
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


OPENAI = Api("openai", openai_error, openai_rate_headers,
             usage_keys=("prompt_tokens", "completion_tokens"))
RESPONSES = Api("openai-responses", openai_error, openai_rate_headers,
                usage_keys=("input_tokens", "output_tokens"))
ANTHROPIC = Api("anthropic", anthropic_error, anthropic_rate_headers,
                usage_keys=("input_tokens", "output_tokens"),
                required_headers=("anthropic-version",))
