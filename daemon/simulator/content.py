"""What the simulator reads from requests and answers with: OpenAI request shapes in,
canned deterministic bodies (sentiment labels, echoes, embeddings, token counts) out,
and what every route shares: the `Call` a request is read into, the next reply of a
conversation (tool turn, final answer or canned text) and where a budget cuts it."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from daemon.simulator.faults import (
    DIRECTIVE_PATTERN,
    parse_directive,
)
from daemon.simulator.structured import JsonAsk, json_ask
from daemon.simulator.tools import (
    ToolContext,
    ToolTurn,
    final_answer,
    next_turn,
    openai_tool_calls,
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

    endpoint: str  # a key of app.ENDPOINTS: "chat", "messages", "responses"...
    model: str
    prompt: str  # what directives and the request log read
    inputs: tuple[str, ...]  # every text sent: message contents, prompts or inputs
    tooling: ToolContext | None = None  # chat with `tools` or tool messages
    max_tokens: int | None = None  # messages, responses: the answer stops after this many words
    stop_sequences: tuple[str, ...] = ()  # messages: the answer stops before the first
    # What the answer repeats of the request: a Response's parameters, a moderation
    # input's kinds.
    echo: Mapping[str, Any] = field(default_factory=dict)
    json: JsonAsk | None = None  # the request asks for a JSON answer (structured.py)


async def json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.read())
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    return body


_NOT_UPSTREAM = ("openrelay", "tool_config")  # Relay's own keys, never for a model


def read_common(body: dict[str, Any]) -> str:
    """Check what every OpenAI endpoint requires; return the requested model."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("you must provide a model parameter", param="model")
    refuse_unserved(body, stream="stream=true is not supported by the Relay simulator.",
                    unknown="Unrecognized request argument supplied: {key}")
    return model


def refuse_unserved(body: dict[str, Any], *, stream: str, unknown: str) -> None:
    """Refuse `stream: true` and Relay's own keys (as a real provider would: Relay must
    strip them), with each API's wording (`unknown` names the key as `{key}`)."""
    if body.get("stream") is True:
        raise BadRequest(stream, param="stream")
    for key in _NOT_UPSTREAM:
        if key in body:
            raise BadRequest(unknown.format(key=key), param=key)


def parse_chat(body: dict[str, Any]) -> Call:
    model = read_common(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) for m in messages):
        raise BadRequest("'messages' must be a non-empty array of message objects.",
                         param="messages")
    texts = tuple(content_text(m.get("content")) for m in messages)
    users = [t for m, t in zip(messages, texts, strict=True) if m.get("role") == "user"]
    tools = _read_tools(body.get("tools"))
    tooling = tool_context(users[0] if users else "", tools=tools,
                           turns=_read_tool_turns(messages, texts),
                           choice=lambda: read_tool_choice(body, tools,
                                                           named=_chat_choice_name))
    return Call("chat", model, users[-1] if users else "", texts, tooling,
                json=json_ask(body.get("response_format"), messages,
                              users[0] if users else ""))


ToolChoice = tuple[str | None, bool, bool]  # (the tool forced, "none", calls in parallel)


def tool_context(prompt: str, *, tools: tuple[dict[str, Any], ...],
                 turns: tuple[int, tuple[str, ...]],
                 choice: Callable[[], ToolChoice], param: str = "messages"
                 ) -> ToolContext | None:
    """What a chat, messages or responses request says about tool calling, from its
    `tools`, its (tool rounds done, tool results) and its tool choice (read only when
    needed); None when it neither offers tools nor carries tool calls. A bad directive
    in `prompt` is refused naming `param`."""
    rounds_done, results = turns
    if not tools and not rounds_done:
        return None
    try:
        directive = parse_directive(prompt)
    except ValueError as exc:
        raise BadRequest(str(exc), param=param) from None
    forced, choice_none, parallel = choice()
    return ToolContext(tools=tools, prompt=prompt, directive=directive,
                       rounds_done=rounds_done, results=results, forced=forced,
                       choice_none=choice_none, parallel=parallel)


def _read_tools(value: Any) -> tuple[dict[str, Any], ...]:
    """The `function` objects of OpenAI function tools."""
    if value is None:
        return ()
    problem = "'tools' must be an array of {\"type\": \"function\", \"function\": {\"name\"...}}."
    if not isinstance(value, list):
        raise BadRequest(problem, param="tools")
    functions = []
    for tool in value:
        function = tool.get("function") if isinstance(tool, dict) else None
        if (not isinstance(tool, dict) or tool.get("type") != "function"
                or not isinstance(function, dict)
                or not isinstance(function.get("name"), str) or not function["name"]
                or not isinstance(function.get("parameters", {}), dict)):
            raise BadRequest(problem, param="tools")
        functions.append(function)
    return tuple(functions)


def read_tool_choice(body: dict[str, Any], tools: tuple[dict[str, Any], ...], *,
                     named: Callable[[dict[str, Any]], Any]) -> ToolChoice:
    """OpenAI's `tool_choice` and `parallel_tool_calls`; `named` reads the function a
    `tool_choice` object names (chat's `{"function": {"name"}}`, a Response's `{"name"}`)."""
    value, parallel = body.get("tool_choice"), body.get("parallel_tool_calls") is not False
    if value is None or value in ("auto", "required"):
        return None, False, parallel
    if value == "none":
        return None, True, parallel
    name = named(value) if isinstance(value, dict) else None
    if isinstance(name, str) and name in {t["name"] for t in tools}:
        return name, False, parallel
    raise BadRequest("'tool_choice' must be none, auto, required or name one of 'tools'.",
                     param="tool_choice")


def _chat_choice_name(value: dict[str, Any]) -> Any:
    function = value.get("function")
    return function.get("name") if isinstance(function, dict) else None


def _read_tool_turns(messages: list[dict[str, Any]], texts: tuple[str, ...]
                     ) -> tuple[int, tuple[str, ...]]:
    """(assistant messages carrying tool_calls, every tool message's content in order).

    As OpenAI does, refuses a tool message that answers no call of the assistant message
    before it, and an assistant message whose calls are not all answered."""
    rounds, results = 0, []
    pending: set[str] | None = None  # the calls still unanswered, after tool_calls
    for i, (message, text) in enumerate(zip(messages, texts, strict=True)):
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if pending is None or not isinstance(call_id, str) or call_id not in pending:
                raise BadRequest(f"messages[{i}]: a message with role 'tool' must answer a "
                                 "tool call of the assistant message before it "
                                 f"(tool_call_id {call_id!r}).", param="messages")
            pending.discard(call_id)
            results.append(text)
            continue
        _all_answered(pending)
        pending = None
        if message.get("role") == "assistant" and message.get("tool_calls"):
            rounds += 1
            pending = set(_call_ids(i, message["tool_calls"]))
    _all_answered(pending)
    return rounds, tuple(results)


def _call_ids(i: int, calls: Any) -> list[str]:
    ids = []
    for call in calls if isinstance(calls, list) else [None]:
        function = call.get("function") if isinstance(call, dict) else None
        if (not isinstance(call, dict) or not isinstance(call.get("id"), str)
                or not isinstance(function, dict) or not isinstance(function.get("name"), str)):
            raise BadRequest(f"messages[{i}].tool_calls must be an array of "
                             "{\"id\", \"type\": \"function\", \"function\": {\"name\", "
                             "\"arguments\"}}.", param="messages")
        ids.append(call["id"])
    return ids


def _all_answered(pending: set[str] | None) -> None:
    if pending:
        missing = ", ".join(sorted(pending))
        raise BadRequest("An assistant message with 'tool_calls' must be followed by tool "
                         "messages responding to each 'tool_call_id'. The following "
                         f"tool_call_ids did not have response messages: {missing}",
                         param="messages")


def parse_completion(body: dict[str, Any]) -> Call:
    model = read_common(body)
    prompts = _texts(body.get("prompt"), "prompt")
    return Call("completions", model, prompts[0], prompts)


def parse_embedding(body: dict[str, Any]) -> Call:
    model = read_common(body)
    inputs = _texts(body.get("input"), "input")
    return Call("embeddings", model, inputs[0], inputs)


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content array."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p["text"] for p in content
                        if isinstance(p, dict) and isinstance(p.get("text"), str))
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
        if cue:  # the negator look (a slice and a set a word) only where it can count
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


def next_reply(call: Call) -> ToolTurn | str:
    """The next assistant turn of a chat or messages call: a round of tool calls, the
    final answer quoting the tool results, or the canned reply."""
    tooling = call.tooling
    turn = next_turn(tooling) if tooling is not None else None
    if turn is not None:
        return turn
    if tooling is not None and tooling.results:
        return final_answer(tooling.results)
    return compose_reply(call.model, call.prompt, context=call.inputs)


def finish(text: str, *, max_tokens: int | None,
           stop_sequences: tuple[str, ...] = ()) -> tuple[str, str, str | None]:
    """(the text generated, stop_reason, stop_sequence): cut before the earliest stop
    sequence, or after `max_tokens` words if that comes first. `stop_reason` is
    Anthropic's word: "end_turn", "stop_sequence" or "max_tokens"."""
    found = [(text.find(s), s) for s in stop_sequences if s and s in text]
    at, sequence = min(found) if found else (len(text), None)
    kept = text[:at]
    if max_tokens is not None and count_tokens([kept]) > max_tokens:
        return _first_words(kept, max_tokens), "max_tokens", None
    return kept, ("end_turn" if sequence is None else "stop_sequence"), sequence


def _first_words(text: str, count: int) -> str:
    match = re.match(rf"\s*(?:\S+\s*){{{count}}}", text)
    return match.group(0).rstrip() if match and count else ""


def chat_body(call: Call, n: int, now: int) -> dict[str, Any]:
    """The canned answer; with tools, a round of tool calls or the final answer that
    quotes the tool results."""
    reply = next_reply(call)
    message: dict[str, Any]
    if isinstance(reply, ToolTurn):
        message = {"role": "assistant", "content": None, "refusal": None,
                   "tool_calls": openai_tool_calls(reply)}
        replies = reply.texts
    else:
        if call.json is not None:
            reply = call.json.answer(reply)
        message = {"role": "assistant", "content": reply, "refusal": None}
        replies = [reply]
    return {
        "id": f"chatcmpl-sim{n:012d}", "object": "chat.completion", "created": now,
        "model": call.model, "system_fingerprint": "relay-simulator",
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if isinstance(reply, ToolTurn) else "stop"}],
        "usage": _usage(call.inputs, replies),
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
