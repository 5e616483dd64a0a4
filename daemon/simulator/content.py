"""What the simulator reads from requests and answers with: OpenAI request shapes in,
canned deterministic bodies (sentiment labels, echoes, embeddings, token counts) out."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from daemon.simulator.faults import (
    DIRECTIVE_PATTERN,
)


class BadRequest(ValueError):
    """A request OpenAI would refuse with 400 invalid_request_error."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param

_ECHO_WORDS = 8


@dataclass(frozen=True)
class Call:
    """One parsed generation request."""

    endpoint: str  # "chat", "completions" or "embeddings"
    model: str
    prompt: str  # what directives and the request log read
    inputs: tuple[str, ...]  # every text sent: message contents, prompts or inputs


async def json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.read())
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    return body


def _common(body: dict[str, Any]) -> str:
    """Check what every endpoint requires; return the requested model."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("you must provide a model parameter", param="model")
    if body.get("stream") is True:
        raise BadRequest("stream=true is not supported by the Relay simulator.", param="stream")
    return model


def parse_chat(body: dict[str, Any]) -> Call:
    model = _common(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) for m in messages):
        raise BadRequest("'messages' must be a non-empty array of message objects.",
                         param="messages")
    texts = tuple(content_text(m.get("content")) for m in messages)
    users = [t for m, t in zip(messages, texts, strict=True) if m.get("role") == "user"]
    return Call("chat", model, users[-1] if users else "", texts)


def parse_completion(body: dict[str, Any]) -> Call:
    model = _common(body)
    prompts = _texts(body.get("prompt"), "prompt")
    return Call("completions", model, prompts[0], prompts)


def parse_embedding(body: dict[str, Any]) -> Call:
    model = _common(body)
    inputs = _texts(body.get("input"), "input")
    return Call("embeddings", model, inputs[0], inputs)


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content array."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _texts(value: Any, param: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return (" ".join(map(str, value)),)  # one pre-tokenized input
    raise BadRequest(f"'{param}' must be a string or a non-empty array of strings.",
                     param=param)





def _wordset(*lines: str) -> frozenset[str]:
    return frozenset(" ".join(lines).split())


_POSITIVE = _wordset(
    "love loved loves great excellent amazing perfect perfectly happy recommend best "
    "fantastic awesome good nice comfortable reliable sturdy worth wonderful superb "
    "impressed pleased delighted flawless brilliant solid easy beautiful glad favorite "
    "favourite quick fast quiet crisp happier")
_NEGATIVE = _wordset(
    "terrible awful broke broken worst disappointed disappointing refund returned poor "
    "bad waste flimsy hate hated useless defective junk annoying leaks leaked cracked "
    "died stopped unusable overpriced horrible rude late missing faulty regret "
    "frustrating complaints problems issues slow loud noisy loose")
_NEGATORS = _wordset("not never no isn't wasn't doesn't didn't don't hardly barely")


def classify_sentiment(text: str) -> str:
    """'positive', 'negative' or 'neutral' from keyword cues; a negator flips a cue."""
    words = re.findall(r"[a-z']+", text.lower())
    score = 0
    for i, word in enumerate(words):
        cue = (word in _POSITIVE) - (word in _NEGATIVE)
        score += -cue if _NEGATORS.intersection(words[max(0, i - 2):i]) else cue
    return "positive" if score > 0 else "negative" if score < 0 else "neutral"


def compose_reply(model: str, prompt: str, *, context: tuple[str, ...] = ()) -> str:
    """A sentiment label when the request asks to classify, else a labelled echo."""
    if any(re.search(r"classify|sentiment", t, re.IGNORECASE) for t in (prompt, *context)):
        return classify_sentiment(DIRECTIVE_PATTERN.sub(" ", prompt))
    words = DIRECTIVE_PATTERN.sub(" ", prompt).split()
    echo = " ".join(words[:_ECHO_WORDS]) + ("…" if len(words) > _ECHO_WORDS else "")
    return f"Simulated reply ({model}): {echo or '(empty prompt)'}"


def embed(text: str) -> list[float]:
    """8 floats of unit length, derived from a hash of the text."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    raw = [int.from_bytes(digest[i:i + 4], "big") / 2**31 - 1 for i in range(0, 32, 4)]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [round(x / norm, 6) for x in raw]


def count_tokens(texts: tuple[str, ...] | list[str]) -> int:
    """A cheap estimate: one token per word."""
    return sum(len(t.split()) for t in texts)


def chat_body(call: Call, n: int, now: int) -> dict[str, Any]:
    reply = compose_reply(call.model, call.prompt, context=call.inputs)
    return {
        "id": f"chatcmpl-sim{n:012d}", "object": "chat.completion", "created": now,
        "model": call.model, "system_fingerprint": "relay-simulator",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": _usage(call.inputs, [reply]),
    }


def completion_body(call: Call, n: int, now: int) -> dict[str, Any]:
    replies = [compose_reply(call.model, p) for p in call.inputs]
    return {
        "id": f"cmpl-sim{n:012d}", "object": "text_completion", "created": now,
        "model": call.model, "system_fingerprint": "relay-simulator",
        "choices": [{"index": i, "text": r, "logprobs": None, "finish_reason": "stop"}
                    for i, r in enumerate(replies)],
        "usage": _usage(call.inputs, replies),
    }


def embedding_body(call: Call, n: int, now: int) -> dict[str, Any]:
    tokens = count_tokens(call.inputs)
    return {
        "object": "list", "model": call.model,
        "data": [{"object": "embedding", "index": i, "embedding": embed(t)}
                 for i, t in enumerate(call.inputs)],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _usage(inputs: tuple[str, ...], replies: list[str]) -> dict[str, int]:
    prompt, completion = count_tokens(inputs), count_tokens(replies)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


BODIES = {"chat": chat_body, "completions": completion_body, "embeddings": embedding_body}
PARSERS = {"chat": parse_chat, "completions": parse_completion, "embeddings": parse_embedding}
