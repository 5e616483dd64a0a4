"""OpenRelay's workflow extension, `body.openrelay.workflow`: its fields and their rules,
and the callback's answers. Pure: the URL policy and the workspace's switch are the
caller's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from daemon.domain.extensions import (
    EXTENSIONS,
    ExtensionError,
    fields_of,
    header_value,
    https_url,
    json_object,
    raw_extension,
)

WORKFLOW = "workflow"
DEFAULT_CALLBACK_MS, CALLBACK_MS = 120_000, (1_000, 600_000)
LEGACY_TIMEOUT_MS = (1_000, 1_800_000)  # `timeout_ms`, the deprecated alias
DEFAULT_STEPS, STEPS = 128, (1, 128)
DEFAULT_REQUESTS, REQUESTS = 512, (1, 4_096)
DEFAULT_TOKENS, TOKENS = 10_000_000, (1, 100_000_000)
_KEYS = frozenset({"url", "authorization", "context", "callback_timeout_ms", "timeout_ms",
                   "max_steps", "max_requests", "max_tokens"})
MOST_STEP_REQUESTS = 256  # requests one `continue` may ask for
WAIT_MS = (1_000, 3_600_000)


@dataclass(frozen=True)
class WorkflowConfig:
    url: str
    authorization: str  # sent verbatim as Authorization; never shown
    context: Any = None
    callback_timeout_ms: int = DEFAULT_CALLBACK_MS
    max_steps: int = DEFAULT_STEPS
    max_requests: int = DEFAULT_REQUESTS
    max_tokens: int = DEFAULT_TOKENS

    def __repr__(self) -> str:  # never put the secret in a log line
        return (f"WorkflowConfig(url={self.url!r}, authorization='***', "
                f"max_steps={self.max_steps}, max_requests={self.max_requests}, "
                f"max_tokens={self.max_tokens})")


class WorkflowConfigError(ExtensionError):
    """A malformed `workflow`, naming the field."""

    extension = WORKFLOW


def raw_workflow(body: Any) -> Any:
    """The record's `openrelay.workflow` as sent, or None when it has none."""
    return raw_extension(body, WORKFLOW)


def parse_workflow(value: Any) -> WorkflowConfig:
    """Check every field; raise `WorkflowConfigError` naming the field."""
    value = fields_of(value, _KEYS, WorkflowConfigError, "'url' and 'authorization'")
    return WorkflowConfig(
        url=https_url(value.get("url"), WorkflowConfigError, "the callback"),
        authorization=str(header_value(value.get("authorization"), WorkflowConfigError,
                                       required=True)),
        context=json_object(value.get("context"), WorkflowConfigError, "context"),
        callback_timeout_ms=_callback_timeout(value),
        max_steps=_bounded(value, "max_steps", DEFAULT_STEPS, STEPS),
        max_requests=_bounded(value, "max_requests", DEFAULT_REQUESTS, REQUESTS),
        max_tokens=_bounded(value, "max_tokens", DEFAULT_TOKENS, TOKENS),
    )


def _integer(value: dict[str, Any], key: str) -> int | None:
    number = value.get(key)
    if number is None:
        return None
    if isinstance(number, bool) or not isinstance(number, int):
        raise WorkflowConfigError(key, f"must be an integer; got {number!r}.")
    return number


def _bounded(value: dict[str, Any], key: str, default: int, bounds: tuple[int, int]) -> int:
    number = _integer(value, key)
    if number is None:
        return default
    low, high = bounds
    if not low <= number <= high:
        raise WorkflowConfigError(key, f"must be from {low} to {high}; got {number}.")
    return number


def _callback_timeout(value: dict[str, Any]) -> int:
    """`callback_timeout_ms`, or its deprecated alias `timeout_ms` (1000–1800000, applied
    as at most 600000); both, with different values, is a mistake."""
    current = _integer(value, "callback_timeout_ms")
    legacy = _integer(value, "timeout_ms")
    if current is not None and legacy is not None and current != legacy:
        raise WorkflowConfigError("timeout_ms", "is the deprecated alias of "
                                  "callback_timeout_ms; send one, or both with one value.")
    if current is not None:
        return _bounded(value, "callback_timeout_ms", DEFAULT_CALLBACK_MS, CALLBACK_MS)
    if legacy is not None:
        return min(_bounded(value, "timeout_ms", DEFAULT_CALLBACK_MS, LEGACY_TIMEOUT_MS),
                   CALLBACK_MS[1])
    return DEFAULT_CALLBACK_MS


# -- the callback's answers -------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What the callback said: `continue` (with requests), `wait`, `completed`, `failed`."""

    action: str
    requests: tuple[dict[str, Any], ...] = ()  # continue: {url, body}
    delay_ms: int = 0  # wait
    output: Any = None  # completed
    error: dict[str, str] | None = None  # failed: {code, message}


class InvalidAnswer(ValueError):
    """A 2xx answer that is not one of the four: the record fails, not retried."""


def parse_answer(value: Any, *, endpoint: str, models: frozenset[str]) -> Answer:
    """Check a callback's answer; raise `InvalidAnswer` saying what is wrong."""
    if not isinstance(value, dict):
        raise InvalidAnswer("the answer must be a JSON object with 'action'.")
    action = value.get("action")
    if action == "continue":
        return Answer("continue", requests=_requests(value.get("requests"),
                                                      endpoint=endpoint, models=models))
    if action == "wait":
        delay = value.get("delay_ms")
        if isinstance(delay, bool) or not isinstance(delay, int) or not (
                WAIT_MS[0] <= delay <= WAIT_MS[1]):
            raise InvalidAnswer(f"'delay_ms' must be an integer from {WAIT_MS[0]} to "
                                f"{WAIT_MS[1]}; got {delay!r}.")
        return Answer("wait", delay_ms=delay)
    if action == "completed":
        if "output" not in value:
            raise InvalidAnswer("a 'completed' answer needs 'output'.")
        return Answer("completed", output=value["output"])
    if action == "failed":
        return Answer("failed", error=_error(value.get("error")))
    raise InvalidAnswer(f"'action' must be continue, wait, completed or failed; got "
                        f"{action!r}.")


def _requests(requests: Any, *, endpoint: str,
              models: frozenset[str]) -> tuple[dict[str, Any], ...]:
    if not isinstance(requests, list) or not 1 <= len(requests) <= MOST_STEP_REQUESTS:
        raise InvalidAnswer(f"'requests' must be an array of 1 to {MOST_STEP_REQUESTS} "
                            "requests.")
    for i, request in enumerate(requests):
        where = f"requests[{i}]"
        if not isinstance(request, dict) or not isinstance(request.get("body"), dict):
            raise InvalidAnswer(f"{where} must be {{\"url\", \"body\"}} with an object body.")
        if request.get("url", endpoint) != endpoint:
            raise InvalidAnswer(f"{where}.url must be this batch's endpoint {endpoint}; got "
                                f"{request.get('url')!r}.")
        body = request["body"]
        if body.get("stream") is True:
            raise InvalidAnswer(f"{where}.body: streaming is not supported in batches.")
        if EXTENSIONS in body:
            raise InvalidAnswer(f"{where}.body: a follow-up request cannot carry "
                                f"'{EXTENSIONS}'.")
        if body.get("model") not in models:
            raise InvalidAnswer(f"{where}.body.model {body.get('model')!r} is not "
                                "configured on this server.")
    return tuple({"url": endpoint, "body": r["body"]} for r in requests)


def _error(error: Any) -> dict[str, str]:
    if (not isinstance(error, dict) or not isinstance(error.get("code"), str)
            or not isinstance(error.get("message"), str)):
        raise InvalidAnswer("a 'failed' answer needs 'error': {\"code\", \"message\"} "
                            "strings.")
    return {"code": error["code"], "message": error["message"]}
