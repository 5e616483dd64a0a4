"""A scripted upstream that answers all five OpenAI batch endpoints as OpenAI does:
a `Response` for `/v1/responses`, a moderation object for `/v1/moderations`, and the
harness's chat answers (plus completions and embeddings). Each answer is a valid
object of OpenAI's published schema (`tests/api/openai_schemas`)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

from daemon.config import ModelConfig
from daemon.upstream.transport import Reply
from tests.actors.harness import JSON_HEADERS, PRIMARY, Upstream, answer

MODERATOR = "omni-moderation-latest"
CATEGORIES = ("harassment", "harassment/threatening", "hate", "hate/threatening", "illicit",
              "illicit/violent", "self-harm", "self-harm/instructions", "self-harm/intent",
              "sexual", "sexual/minors", "violence", "violence/graphic")
CREATED = 1_790_000_000


def input_text(value: Any) -> str:
    """The last text of a Responses `input` (a string, or message items)."""
    if isinstance(value, str):
        return value
    for item in reversed(value):
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        if item.get("type") == "function_call_output":
            return str(item.get("output"))
    return ""


def response_body(body: dict[str, Any], n: int) -> dict[str, Any]:
    """OpenAI's `Response` to a Responses request: one message of output text."""
    text = answer(input_text(body["input"]))
    return {
        "id": f"resp_{n:032x}", "object": "response", "created_at": CREATED,
        "completed_at": CREATED + 1, "status": "completed", "background": False,
        "error": None, "incomplete_details": None, "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"), "max_tool_calls": None,
        "model": body["model"], "parallel_tool_calls": True, "previous_response_id": None,
        "prompt_cache_key": None, "reasoning": {"effort": None, "summary": None},
        "safety_identifier": None, "service_tier": "default", "store": True,
        "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto", "tools": [], "top_logprobs": 0, "top_p": 1.0,
        "truncation": "disabled", "metadata": {},
        "output": [{"id": f"msg_{n:032x}", "type": "message", "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": [],
                                 "logprobs": []}]}],
        "usage": {"input_tokens": 3, "input_tokens_details": {"cached_tokens": 0,
                                                                "cache_write_tokens": 0},
                  "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": 5},
    }


def moderation_body(body: dict[str, Any], n: int) -> dict[str, Any]:
    """OpenAI's moderation object: one result per input, flagged when it says "hurt"."""
    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
    if inputs and not isinstance(inputs[0], str):  # multimodal items: one result in all
        inputs = [" ".join(str(i.get("text", "")) for i in inputs)]
    return {"id": f"modr-{n}", "model": body["model"],
            "results": [_verdict("hurt" in str(text)) for text in inputs]}


def _verdict(flagged: bool) -> dict[str, Any]:
    return {"flagged": flagged,
            "categories": {c: flagged and c == "violence" for c in CATEGORIES},
            "category_scores": {c: 0.9 if flagged and c == "violence" else 0.001
                                for c in CATEGORIES},
            "category_applied_input_types": {c: ["text"] for c in CATEGORIES}}


class FiveEndpoints(Upstream):
    """The harness's scripted upstream, answering every endpoint of OpenAI's Batch API."""

    def __init__(self) -> None:
        super().__init__()
        self.endpoints: list[str] = []

    async def __call__(self, model: ModelConfig, endpoint: str, payload: bytes) -> Reply:
        self.endpoints.append(endpoint)
        while b"BLOCK" in payload and not self.gate.is_set():  # as the harness's, any endpoint
            await asyncio.sleep(0.005)
        body, n = json.loads(payload), len(self.endpoints)
        if endpoint.endswith("/responses"):
            return _ok(response_body(body, n))
        if endpoint.endswith("/moderations"):
            return _ok(moderation_body(body, n))
        if endpoint.endswith("/embeddings"):
            return _ok({"object": "list", "model": body["model"], "usage": {
                "prompt_tokens": 1, "total_tokens": 1},
                "data": [{"object": "embedding", "index": 0, "embedding": [0.5, 0.25]}]})
        if endpoint.endswith("/completions") and "chat" not in endpoint:
            return _ok({"id": f"cmpl-{n}", "object": "text_completion", "created": CREATED,
                        "model": body["model"], "choices": [{
                            "index": 0, "text": answer(str(body["prompt"])),
                            "finish_reason": "stop", "logprobs": None}]})
        return await super().__call__(model, endpoint, payload)


def _ok(body: dict[str, Any]) -> Reply:
    return Reply(200, JSON_HEADERS, json.dumps(body).encode())


def five_endpoint_models() -> list[dict[str, Any]]:
    """The `[[models]]` of a relay whose upstream serves every endpoint. The per-model
    `endpoints` list (the upstream's side of issue 25) is set where the config has it,
    so Responses and moderation bodies pass through unchanged."""
    serves = {"endpoints": ["/v1/chat/completions", "/v1/completions", "/v1/embeddings",
                            "/v1/responses", "/v1/moderations"]}
    known = {f.name for f in dataclasses.fields(ModelConfig)}
    extra = serves if "endpoints" in known else {}
    return [{"alias": PRIMARY, "base_url": "http://upstream.test/v1", **extra},
            {"alias": MODERATOR, "base_url": "http://upstream.test/v1", **extra}]
