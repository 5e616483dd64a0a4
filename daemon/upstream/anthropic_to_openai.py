"""Anthropic Messages requests on an OpenAI-compatible upstream, and the answer back.

`chat_request` turns a Messages API request (a `/v1/messages` row's `params`) into a
chat completions request; `message_answer` turns the chat completion into the
Anthropic `Message` the row stores. Pure (but for a fresh id when an answer has none).
What chat completions cannot say (`top_k`, `thinking`, documents, server tools, ...)
raises `Untranslatable`: never dropped, the row fails on this model without calling
it. Only `cache_control` marks are dropped: a caching hint, and OpenAI-compatible
servers cache by themselves.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any

from daemon.config import ModelConfig
from daemon.domain.extensions import EXTENSIONS
from daemon.domain.ids import stable
from daemon.domain.outcome import Usage
from daemon.upstream.untranslatable import (
    BadAnswer,
    as_list,
    as_object,
    as_text,
    malformed,
    no_counterpart,
    refuse_unknown,
)

TARGET = "OpenAI's chat completions"
# The Messages parameters chat completions can carry (`model` is the upstream's own).
KNOWN = {"model", "messages", "max_tokens", "system", "stop_sequences", "temperature",
         "top_p", "tools", "tool_choice", "metadata", "stream", EXTENSIONS}
SAME = (("max_tokens", "max_tokens"), ("temperature", "temperature"), ("top_p", "top_p"),
        ("stop_sequences", "stop"))
HINT = "cache_control"  # a prompt-caching mark: dropped, OpenAI-compatible servers cache alone
BLOCK_KEYS = {
    "text": {"type", "text", HINT},
    "image": {"type", "source", HINT},
    "tool_use": {"type", "id", "name", "input", HINT},
    "tool_result": {"type", "tool_use_id", "content", "is_error", HINT},
}
TOOL_KEYS = {"name", "description", "input_schema", "strict", "type", HINT}
CHOICES = {"auto": "auto", "any": "required", "none": "none"}
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
                "function_call": "tool_use", "content_filter": "refusal"}
TOOL_ERROR = "Error: "  # how a tool_result with is_error reads in a chat tool message


def chat_request(params: Mapping[str, Any], model: ModelConfig) -> dict[str, Any]:
    """The chat completions request for a Messages request, on `model`."""
    refuse_unknown(params, KNOWN, where="", target=TARGET)
    if params.get("stream"):
        raise no_counterpart("stream", "a batch row, which is answered whole", value=True)
    body: dict[str, Any] = {"model": model.model, "messages": [
        *_system(params.get("system")), *_messages(params.get("messages"))]}
    body.update({theirs: params[ours] for ours, theirs in SAME if params.get(ours) is not None})
    if params.get("tools") is not None:
        body["tools"] = [_tool(t, f"tools[{i}]")
                         for i, t in enumerate(as_list(params["tools"], "tools"))]
    if params.get("tool_choice") is not None:
        body.update(_tool_choice(as_object(params["tool_choice"], "tool_choice")))
    if params.get("metadata") is not None:
        body.update(_metadata(as_object(params["metadata"], "metadata")))
    return body


def _system(system: Any) -> list[dict[str, Any]]:
    if system is None:
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    texts = [_text_of(b, f"system[{i}]") for i, b in enumerate(as_list(system, "system"))]
    return [{"role": "system", "content": "\n\n".join(texts)}]


def _text_of(block: Any, where: str) -> str:
    """A text block's text; any other block is refused."""
    block = _block(block, where)
    if block["type"] != "text":
        raise no_counterpart(f"{where}.type", f"{TARGET} here", value=block["type"])
    return as_text(block.get("text"), f"{where}.text")


def _block(value: Any, where: str) -> dict[str, Any]:
    block = as_object(value, where)
    kind = block.get("type")
    if not isinstance(kind, str) or kind not in BLOCK_KEYS:
        raise no_counterpart(f"{where}.type", TARGET, value=kind)
    refuse_unknown(block, BLOCK_KEYS[kind], where=f"{where}.", target=TARGET)
    return block


def _messages(messages: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, message in enumerate(as_list(messages, "messages")):
        where = f"messages[{i}]"
        message = as_object(message, where)
        refuse_unknown(message, {"role", "content"}, where=f"{where}.", target=TARGET)
        role, content = message.get("role"), message.get("content")
        if role == "user":
            out.extend(_user(content, where))
        elif role == "assistant":
            out.append(_assistant(content, where))
        elif role == "system":
            out.extend(_system(content))
        else:
            raise malformed(f"{where}.role", '"user" or "assistant"')
    return out


def _user(content: Any, where: str) -> list[dict[str, Any]]:
    """A user turn: its tool results become tool messages (first, as chat wants them
    right after the assistant's calls), the rest one user message."""
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    blocks = [(f"{where}.content[{i}]", _block(b, f"{where}.content[{i}]"))
              for i, b in enumerate(as_list(content, f"{where}.content"))]
    tools = [_tool_message(b, at) for at, b in blocks if b["type"] == "tool_result"]
    parts = [_part(b, at) for at, b in blocks if b["type"] != "tool_result"]
    if not parts:
        return tools
    if len(parts) == 1 and parts[0]["type"] == "text":
        return [*tools, {"role": "user", "content": parts[0]["text"]}]
    return [*tools, {"role": "user", "content": parts}]


def _part(block: dict[str, Any], where: str) -> dict[str, Any]:
    if block["type"] == "text":
        return {"type": "text", "text": as_text(block.get("text"), f"{where}.text")}
    if block["type"] == "image":
        return {"type": "image_url", "image_url": {"url": _image_url(block, where)}}
    raise no_counterpart(f"{where}.type", f"{TARGET} in a user message", value=block["type"])


def _image_url(block: dict[str, Any], where: str) -> str:
    source = as_object(block.get("source"), f"{where}.source")
    if source.get("type") == "base64":
        media = as_text(source.get("media_type"), f"{where}.source.media_type")
        return f"data:{media};base64,{as_text(source.get('data'), f'{where}.source.data')}"
    if source.get("type") == "url":
        return as_text(source.get("url"), f"{where}.source.url")
    raise no_counterpart(f"{where}.source.type", TARGET, value=source.get("type"))


def _tool_message(block: dict[str, Any], where: str) -> dict[str, Any]:
    content = block.get("content", "")
    if not isinstance(content, str):
        content = "".join(_text_of(b, f"{where}.content[{i}]")
                          for i, b in enumerate(as_list(content, f"{where}.content")))
    if block.get("is_error"):
        content = TOOL_ERROR + content
    return {"role": "tool", "tool_call_id": as_text(block.get("tool_use_id"),
                                                   f"{where}.tool_use_id"), "content": content}


def _assistant(content: Any, where: str) -> dict[str, Any]:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for i, raw in enumerate(as_list(content, f"{where}.content")):
        at = f"{where}.content[{i}]"
        block = _block(raw, at)
        if block["type"] == "text":
            texts.append(as_text(block.get("text"), f"{at}.text"))
        elif block["type"] == "tool_use":
            calls.append(_tool_call(block, at))
        else:
            raise no_counterpart(f"{at}.type", f"{TARGET} in an assistant message",
                                 value=block["type"])
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    return message


def _tool_call(block: dict[str, Any], where: str) -> dict[str, Any]:
    arguments = json.dumps(as_object(block.get("input"), f"{where}.input"))
    return {"id": as_text(block.get("id"), f"{where}.id"), "type": "function",
            "function": {"name": as_text(block.get("name"), f"{where}.name"),
                         "arguments": arguments}}


def _tool(tool: Any, where: str) -> dict[str, Any]:
    tool = as_object(tool, where)
    if tool.get("type") not in (None, "custom"):  # Anthropic's server tools: bash, web search...
        raise no_counterpart(f"{where}.type", TARGET, value=tool["type"])
    refuse_unknown(tool, TOOL_KEYS, where=f"{where}.", target=TARGET)
    function: dict[str, Any] = {"name": as_text(tool.get("name"), f"{where}.name"),
                                "parameters": as_object(tool.get("input_schema"),
                                                        f"{where}.input_schema")}
    if tool.get("description") is not None:
        function["description"] = as_text(tool["description"], f"{where}.description")
    if tool.get("strict") is not None:
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def _tool_choice(choice: dict[str, Any]) -> dict[str, Any]:
    kind = choice.get("type")
    refuse_unknown(choice, {"type", "name", "disable_parallel_tool_use"},
                   where="tool_choice.", target=TARGET)
    if kind == "tool":
        name = as_text(choice.get("name"), "tool_choice.name")
        fields: dict[str, Any] = {"tool_choice": {"type": "function", "function": {"name": name}}}
    elif isinstance(kind, str) and kind in CHOICES:
        fields = {"tool_choice": CHOICES[kind]}
    else:
        raise malformed("tool_choice.type", '"auto", "any", "tool" or "none"')
    if choice.get("disable_parallel_tool_use"):
        fields["parallel_tool_calls"] = False
    return fields


def _metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    refuse_unknown(metadata, {"user_id"}, where="metadata.", target=TARGET)
    user = metadata.get("user_id")
    return {} if user is None else {"user": as_text(user, "metadata.user_id")}


# The answer: a chat completion becomes a Message.


def message_answer(completion: Mapping[str, Any], *, usage: Usage, sent: Mapping[str, Any],
                   now: float, asked: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The `Message` for a chat completion answering `sent`; `usage` is the answer's,
    already checked (`read_usage`)."""
    del now, asked  # a Message carries no time, and echoes nothing of the request
    choice = _first_choice(completion)
    message = choice.get("message") or {}
    if not isinstance(message, dict):
        raise BadAnswer("choices[0].message that is not an object")
    content = [*_text_blocks(message.get("content")), *map(_tool_use, _calls(message))]
    stop_reason, stop_sequence = _stop(choice, sent.get("stop"), called=bool(_calls(message)))
    return {
        "id": _message_id(completion.get("id")),
        "type": "message",
        "role": "assistant",
        "model": completion.get("model") or sent.get("model"),
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": message_usage(usage),
    }


def message_usage(usage: Usage) -> dict[str, int]:
    """A Message's usage: input not read from the cache, and what was."""
    return {"input_tokens": usage.prompt_tokens - usage.cached_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": usage.cached_tokens,
            "output_tokens": usage.completion_tokens}


def _first_choice(completion: Mapping[str, Any]) -> dict[str, Any]:
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadAnswer("no choices[0] to make a Message of")
    return choices[0]


def _text_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):  # content parts, as some servers answer
        content = "".join(p["text"] for p in content
                          if isinstance(p, dict) and isinstance(p.get("text"), str))
    if content is not None and not isinstance(content, str):
        raise BadAnswer("choices[0].message.content that is not text")
    return [{"type": "text", "text": content}] if content else []


def _calls(message: Mapping[str, Any]) -> list[Any]:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise BadAnswer("choices[0].message.tool_calls that is not an array")
    return calls


def _tool_use(call: Any) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(call.get("id"), str) or (
            not isinstance(function.get("name"), str)):
        raise BadAnswer("a tool call without an id or a function name")
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except (TypeError, ValueError):
        arguments = None
    if not isinstance(arguments, dict):
        raise BadAnswer(f"tool call {call['id']}'s arguments that are not a JSON object")
    return {"type": "tool_use", "id": call["id"], "name": function.get("name"),
            "input": arguments}


def _stop(choice: Mapping[str, Any], stops: Any, *, called: bool) -> tuple[str, str | None]:
    """The stop reason, and the stop sequence met when the server says which (vLLM's
    `stop_reason`); OpenAI's own `stop` does not tell a stop sequence from the end."""
    if called:
        return "tool_use", None
    matched = choice.get("stop_reason")
    if choice.get("finish_reason") == "stop" and isinstance(matched, str) and (
            isinstance(stops, list) and matched in stops):
        return "stop_sequence", matched
    return STOP_REASONS.get(str(choice.get("finish_reason")), "end_turn"), None


def _message_id(upstream_id: Any) -> str:
    """`msg_…`: the upstream's id, kept when it is already one, else derived from it
    (a fresh one when it sent none)."""
    if not isinstance(upstream_id, str) or not upstream_id:
        return "msg_" + secrets.token_hex(16)
    return upstream_id if upstream_id.startswith("msg_") else stable("msg", upstream_id)
