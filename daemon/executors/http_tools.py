"""The `http` tool-executor protocol: one POST per round, through the outbound client
(URL policy and DNS pinning at connect time).

Request: `POST url` with `{"custom_id", "context", "tool_calls": [...]}` and the
headers `Authorization` (verbatim), `Relay-Batch-Id`, `Relay-Round`, `Relay-Call-Id`.
Answer: `{"results": [{"tool_call_id", "content"}]}`; a `content` that is not a
string is serialised. A timeout, a connection error, 408, 429 or 5xx may pass on a
retry; any other answer that is not such results is the executor's error.
"""

from __future__ import annotations

import json
from typing import Any

from daemon.domain.retry import is_retryable_answer
from daemon.domain.tool_config import ToolConfig
from daemon.executors.tool_hosts import HostLimits
from daemon.executors.tool_loop import ToolCallFailed, ToolRequest, ToolResult
from daemon.outbound.http import OutboundClient, OutboundError, OutboundReply

PARAM = "openrelay.tool_config.url"


class HttpToolCaller:
    def __init__(self, client: OutboundClient, limits: HostLimits) -> None:
        self.client = client
        self.limits = limits

    async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
        headers = {"Relay-Batch-Id": request.batch_id, "Relay-Round": str(request.round),
                   "Relay-Call-Id": request.call_id}
        if config.authorization is not None:
            headers["Authorization"] = config.authorization
        payload = {"custom_id": request.custom_id, "context": config.context,
                   "tool_calls": list(request.tool_calls)}
        async with self.limits.slot(config.url):
            request.guard()  # last before it goes out: a cancel, or a lease lost meanwhile
            try:
                reply = await self.client.post_json(config.url, payload, headers=headers,
                                                     timeout_s=config.timeout_ms / 1000,
                                                     param=PARAM)
            except OutboundError as exc:
                raise ToolCallFailed(f"{exc.kind}: {exc.message}",
                                     transient=exc.kind in ("timeout", "connection")) from exc
        return results_of(reply)

    async def tools(self, config: ToolConfig, *, job_seq: int) -> list[dict[str, Any]] | None:
        return None  # the http protocol has no discovery: the record names its tools

    async def release(self, job_seq: int) -> None:
        return None


def results_of(reply: OutboundReply) -> list[ToolResult]:
    """The results of a 2xx answer; `ToolCallFailed` for anything else."""
    if not reply.ok:
        raise ToolCallFailed(f"the executor answered {reply.status}{_said(reply.body)}",
                             transient=is_retryable_answer(reply.status),
                             retry_after=reply.headers.get("Retry-After"),
                             status_code=reply.status)
    try:
        body = json.loads(reply.body)
    except (ValueError, RecursionError):
        raise ToolCallFailed(f"the executor answered {reply.status} with a body that is not "
                             "JSON", transient=False, status_code=reply.status) from None
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list) or not all(_is_result(r) for r in results):
        raise ToolCallFailed("the executor's answer is not {\"results\": [{\"tool_call_id\", "
                             "\"content\"}]}", transient=False, status_code=reply.status)
    return [ToolResult(r["tool_call_id"], _text(r["content"])) for r in results]


def _is_result(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("tool_call_id"), str)
            and "content" in value)


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content)


def _said(body: bytes) -> str:
    text = body[:200].decode("utf-8", "replace").strip()
    return f" ({text})" if text else ""
