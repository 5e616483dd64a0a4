"""OpenAI Responses API requests on a chat completions upstream, and the answer back.

`chat_body` turns a Responses API request (a `/v1/responses` row's body) into a chat
completions request (`chat_request`: the same, on a model); `response_answer` turns the
chat completion into the `Response` the row stores. Pure (but for a fresh id when an
answer has none). What chat completions cannot say (hosted tools, server-side state,
reasoning summaries, file ids, ...) raises `Untranslatable`: never dropped, the row
fails on this model without calling it.

Three things are not sent, on purpose: `metadata` (echoed on the `Response`, which is
what the Responses API does with it; chat keeps it only with `store`), `store` (a
batch's answers are stored by Relay, whatever it says) and the `annotations`/`logprobs`
of an earlier answer's `output_text` given back as input (they describe that answer).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from daemon.config import ModelConfig
from daemon.domain.extensions import EXTENSIONS
from daemon.domain.ids import stable
from daemon.domain.outcome import Usage
from daemon.upstream.untranslatable import (
    BadAnswer,
    Untranslatable,
    as_list,
    as_object,
    as_text,
    malformed,
    no_counterpart,
    refuse_unknown,
)

TARGET = "OpenAI's chat completions"
SAME = ("temperature", "top_p", "parallel_tool_calls", "user", "safety_identifier",
        "prompt_cache_key", "service_tier")
UNSENT = ("metadata", "store")  # see the module's docstring
STATELESS = ("previous_response_id", "conversation", "background", "prompt")
KNOWN = {"model", "input", "instructions", "tools", "tool_choice", "text", "max_output_tokens",
         "reasoning", *SAME, *UNSENT, EXTENSIONS}
# Parameters chat lacks, accepted only at the value that asks for nothing.
NO_OPS: dict[str, tuple[Any, ...]] = {"stream": (False,), "truncation": ("disabled",),
                                      "include": ([],)}
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
CHOICES = ("auto", "none", "required")
ROLES = ("user", "system", "developer", "assistant")
ITEM_KEYS = {
    "message": {"type", "role", "content", "id", "status", "phase"},
    "function_call": {"type", "call_id", "name", "arguments", "id", "status"},
    "function_call_output": {"type", "call_id", "output", "id", "status"},
}
PART_KEYS = {
    "input_text": {"type", "text"},
    "input_image": {"type", "image_url", "detail", "file_id"},
    "output_text": {"type", "text", "annotations", "logprobs"},
    "refusal": {"type", "refusal"},
}
TOOL_KEYS = {"type", "name", "description", "parameters", "strict"}
INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def chat_request(body: Mapping[str, Any], model: ModelConfig) -> dict[str, Any]:
    """The chat completions request for a Responses request, on `model`."""
    return chat_body(body) | {"model": model.model}


def chat_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat completions request for a Responses request (its own `model`)."""
    _refuse_extras(body)
    sent: dict[str, Any] = {"model": body.get("model"), "messages": _conversation(body)}
    sent.update({key: body[key] for key in SAME if body.get(key) is not None})
    if body.get("max_output_tokens") is not None:
        sent["max_completion_tokens"] = body["max_output_tokens"]
    if body.get("tools") is not None:
        sent["tools"] = [_tool(t, f"tools[{i}]")
                         for i, t in enumerate(as_list(body["tools"], "tools"))]
    if body.get("tool_choice") is not None:
        sent["tool_choice"] = _tool_choice(body["tool_choice"])
    if body.get("text") is not None:
        sent.update(_text(as_object(body["text"], "text")))
    if body.get("reasoning") is not None:
        sent.update(_reasoning(as_object(body["reasoning"], "reasoning")))
    return sent


def _refuse_extras(body: Mapping[str, Any]) -> None:
    for key, value in body.items():
        if key in KNOWN or value is None or value in NO_OPS.get(key, ()):
            continue
        if key in STATELESS:
            raise Untranslatable("unsupported_parameter", f"{key} has no counterpart in "
                                 f"{TARGET}: a batch keeps no server-side state")
        raise no_counterpart(key, TARGET, value=value if key in NO_OPS else None)


def _conversation(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`instructions` as the system message, then `input`: a user message, or its items."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions") is not None:
        messages.append({"role": "system",
                         "content": as_text(body["instructions"], "instructions")})
    given = body.get("input")
    if isinstance(given, str):
        return [*messages, {"role": "user", "content": given}]
    for i, item in enumerate(as_list(given, "input")):
        _add_item(messages, as_object(item, f"input[{i}]"), f"input[{i}]")
    return messages


def _add_item(messages: list[dict[str, Any]], item: dict[str, Any], where: str) -> None:
    kind = item.get("type", "message" if "role" in item else None)
    if not isinstance(kind, str) or kind not in ITEM_KEYS:
        raise no_counterpart(f"{where}.type", TARGET, value=kind)
    refuse_unknown(item, ITEM_KEYS[kind], where=f"{where}.", target=TARGET)
    if kind == "message":
        messages.append(_message(item, where))
    elif kind == "function_call":
        _add_call(messages, item, where)
    else:
        messages.append({"role": "tool",
                         "tool_call_id": as_text(item.get("call_id"), f"{where}.call_id"),
                         "content": _output_text(item.get("output"), f"{where}.output")})


def _message(item: dict[str, Any], where: str) -> dict[str, Any]:
    role, content = item.get("role"), item.get("content")
    if not isinstance(role, str) or role not in ROLES:
        raise malformed(f"{where}.role", "one of " + ", ".join(ROLES))
    if isinstance(content, str):
        return {"role": role, "content": content}
    parts = [_part(p, f"{where}.content[{i}]")
             for i, p in enumerate(as_list(content, f"{where}.content"))]
    if role == "assistant":
        return _assistant(parts, where)
    for at, part in enumerate(parts):
        if part["type"] not in ("input_text", "input_image") or (
                role != "user" and part["type"] != "input_text"):
            raise no_counterpart(f"{where}.content[{at}].type", f"{TARGET} in a {role} "
                                 "message", value=part["type"])
    chat = [_chat_part(p, f"{where}.content[{i}]") for i, p in enumerate(parts)]
    if len(chat) == 1 and chat[0]["type"] == "text":
        return {"role": role, "content": chat[0]["text"]}
    return {"role": role, "content": chat}


def _part(value: Any, where: str) -> dict[str, Any]:
    part = as_object(value, where)
    kind = part.get("type")
    if not isinstance(kind, str) or kind not in PART_KEYS:
        raise no_counterpart(f"{where}.type", TARGET, value=kind)
    refuse_unknown(part, PART_KEYS[kind], where=f"{where}.", target=TARGET)
    return part


def _chat_part(part: dict[str, Any], where: str) -> dict[str, Any]:
    if part["type"] == "input_text":
        return {"type": "text", "text": as_text(part.get("text"), f"{where}.text")}
    if part.get("file_id") is not None:
        raise no_counterpart(f"{where}.file_id", f"{TARGET} (an OpenAI file id; send "
                             "image_url)")
    image: dict[str, Any] = {"url": as_text(part.get("image_url"), f"{where}.image_url")}
    if part.get("detail") is not None:
        image["detail"] = as_text(part["detail"], f"{where}.detail")
    return {"type": "image_url", "image_url": image}


def _assistant(parts: list[dict[str, Any]], where: str) -> dict[str, Any]:
    """An earlier answer given back: its text, and its refusal if it refused."""
    texts, refusals = [], []
    for i, part in enumerate(parts):
        if part["type"] == "output_text":
            texts.append(as_text(part.get("text"), f"{where}.content[{i}].text"))
        elif part["type"] == "refusal":
            refusals.append(as_text(part.get("refusal"), f"{where}.content[{i}].refusal"))
        else:
            raise no_counterpart(f"{where}.content[{i}].type", f"{TARGET} in an assistant "
                                 "message", value=part["type"])
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if refusals:
        message["refusal"] = "".join(refusals)
    return message


def _add_call(messages: list[dict[str, Any]], item: dict[str, Any], where: str) -> None:
    """A function call joins the assistant message just before it (one turn's text and
    calls, or several calls, are one chat message), else starts one."""
    call = {"id": as_text(item.get("call_id"), f"{where}.call_id"), "type": "function",
            "function": {"name": as_text(item.get("name"), f"{where}.name"),
                         "arguments": as_text(item.get("arguments"), f"{where}.arguments")}}
    last = messages[-1] if messages else None
    if last is not None and last["role"] == "assistant":
        last.setdefault("tool_calls", []).append(call)
    else:
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


def _output_text(output: Any, where: str) -> str:
    """A function call's output: text, or text parts (joined)."""
    if isinstance(output, str):
        return output
    texts = []
    for i, value in enumerate(as_list(output, where)):
        part = _part(value, f"{where}[{i}]")
        if part["type"] != "input_text":
            raise no_counterpart(f"{where}[{i}].type", f"{TARGET} in a tool message",
                                 value=part["type"])
        texts.append(as_text(part.get("text"), f"{where}[{i}].text"))
    return "".join(texts)


def _tool(value: Any, where: str) -> dict[str, Any]:
    tool = as_object(value, where)
    if tool.get("type") != "function":  # hosted tools: web_search, file_search, mcp, ...
        raise no_counterpart(f"{where}.type", TARGET, value=tool.get("type"))
    refuse_unknown(tool, TOOL_KEYS, where=f"{where}.", target=TARGET)
    function: dict[str, Any] = {"name": as_text(tool.get("name"), f"{where}.name")}
    for key in ("description", "parameters", "strict"):
        if tool.get(key) is not None:
            function[key] = tool[key]
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, str):
        if choice not in CHOICES:
            raise malformed("tool_choice", '"auto", "none", "required" or a function')
        return choice
    choice = as_object(choice, "tool_choice")
    if choice.get("type") != "function":
        raise no_counterpart("tool_choice.type", TARGET, value=choice.get("type"))
    refuse_unknown(choice, {"type", "name"}, where="tool_choice.", target=TARGET)
    return {"type": "function",
            "function": {"name": as_text(choice.get("name"), "tool_choice.name")}}


def _text(text: dict[str, Any]) -> dict[str, Any]:
    refuse_unknown(text, {"format", "verbosity"}, where="text.", target=TARGET)
    sent: dict[str, Any] = {}
    if text.get("verbosity") is not None:
        sent["verbosity"] = text["verbosity"]
    if text.get("format") is None:
        return sent
    form = as_object(text["format"], "text.format")
    kind = form.get("type")
    if kind == "json_schema":
        refuse_unknown(form, {"type", "name", "schema", "description", "strict"},
                       where="text.format.", target=TARGET)
        schema = {key: form[key] for key in ("name", "schema", "description", "strict")
                  if form.get(key) is not None}
        sent["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif kind == "json_object":
        refuse_unknown(form, {"type"}, where="text.format.", target=TARGET)
        sent["response_format"] = {"type": "json_object"}
    elif kind != "text":
        raise no_counterpart("text.format.type", TARGET, value=kind)
    return sent


def _reasoning(reasoning: dict[str, Any]) -> dict[str, Any]:
    """Only an effort maps (`reasoning_effort`); summaries have no chat counterpart."""
    refuse_unknown(reasoning, {"effort"}, where="reasoning.", target=TARGET)
    effort = reasoning.get("effort")
    if effort is None:
        return {}
    if effort not in EFFORTS:
        raise no_counterpart("reasoning.effort", TARGET, value=effort)
    return {"reasoning_effort": effort}


# The answer: a chat completion becomes a Response.


def response_answer(completion: Mapping[str, Any], *, usage: Usage, sent: Mapping[str, Any],
                    asked: Mapping[str, Any], now: float,
                    earlier: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The `Response` for a chat completion answering `sent`, made for the Responses
    request `asked` (whose parameters a Response echoes); `usage` is the answer's,
    already checked. `earlier`: chat messages of a tool loop's rounds (assistant turns
    with tool calls, tool results), which come first in the `output`."""
    choice = _first_choice(completion)
    message = choice.get("message") or {}
    if not isinstance(message, dict):
        raise BadAnswer("choices[0].message that is not an object")
    rid = _response_id(completion.get("id"))
    reason = INCOMPLETE.get(str(choice.get("finish_reason")))
    status = "incomplete" if reason else "completed"
    items = [item for i, m in enumerate(earlier) for item in (
        [_output_item(m, rid, i)] if m.get("role") == "tool" else _items(m, rid, i, "completed"))]
    created = completion.get("created")
    created_at = created if isinstance(created, int) and not isinstance(created, bool) else (
        int(now))
    return {
        "id": rid,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "completed_at": created_at if status == "completed" else None,
        "error": None,
        "incomplete_details": {"reason": reason} if reason else None,
        "model": next((m for m in (completion.get("model"), sent.get("model"),
                                   asked.get("model")) if isinstance(m, str) and m), ""),
        "output": [*items, *_items(message, rid, len(earlier), status)],
        "usage": response_usage(usage),
        **echoed(asked),
    }


def echoed(asked: Mapping[str, Any]) -> dict[str, Any]:
    """The request's parameters as a Response repeats them (their defaults when unset)."""
    return {
        "instructions": asked.get("instructions"),
        "metadata": asked.get("metadata") or {},
        "temperature": asked.get("temperature"),
        "top_p": asked.get("top_p"),
        "max_output_tokens": asked.get("max_output_tokens"),
        "tools": asked.get("tools") or [],
        "tool_choice": asked.get("tool_choice") or "auto",
        "parallel_tool_calls": asked.get("parallel_tool_calls") is not False,
        "text": asked.get("text") or {"format": {"type": "text"}},
        "reasoning": asked.get("reasoning"),
        "truncation": asked.get("truncation") or "disabled",
        "previous_response_id": None,
        "user": asked.get("user"),
    }


def response_usage(usage: Usage) -> dict[str, Any]:
    return {"input_tokens": usage.prompt_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens,
                                     "cache_write_tokens": 0},
            "output_tokens": usage.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
            "total_tokens": usage.prompt_tokens + usage.completion_tokens}


def responses_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A chat function tool in the Responses API's flat shape (as a Response lists it)."""
    function = tool.get("function")
    if tool.get("type") != "function" or not isinstance(function, dict):
        return dict(tool)
    return {"type": "function", **function}


def _first_choice(completion: Mapping[str, Any]) -> dict[str, Any]:
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadAnswer("no choices[0] to make a Response of")
    return choices[0]


def _items(message: Mapping[str, Any], rid: str, turn: int,
           status: str) -> list[dict[str, Any]]:
    """An assistant message as output items: its `message` (text or refusal), then one
    `function_call` per call."""
    content = _content(message)
    items = [{"id": stable("msg", rid, turn), "type": "message", "role": "assistant",
              "status": status, "content": content}] if content else []
    return items + [_function_call(call, rid, turn, i)
                    for i, call in enumerate(_calls(message))]


def _output_item(message: Mapping[str, Any], rid: str, turn: int) -> dict[str, Any]:
    """A tool loop's tool message as a `function_call_output` item."""
    return {"id": stable("fco", rid, turn), "type": "function_call_output",
            "call_id": str(message.get("tool_call_id")),
            "output": _text_of(message.get("content")), "status": "completed"}


def _content(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    text, refusal = _text_of(message.get("content")), message.get("refusal")
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
    if isinstance(refusal, str) and refusal:
        parts.append({"type": "refusal", "refusal": refusal})
    return parts


def _text_of(content: Any) -> str:
    if isinstance(content, list):  # content parts, as some servers answer
        content = "".join(p["text"] for p in content
                          if isinstance(p, dict) and isinstance(p.get("text"), str))
    if content is not None and not isinstance(content, str):
        raise BadAnswer("a message content that is not text")
    return content or ""


def _calls(message: Mapping[str, Any]) -> list[Any]:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise BadAnswer("choices[0].message.tool_calls that is not an array")
    return calls


def _function_call(call: Any, rid: str, turn: int, index: int) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(call.get("id"), str) or not (
            isinstance(function.get("name"), str)):
        raise BadAnswer("a tool call without an id or a function name")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        raise BadAnswer(f"tool call {call['id']}'s arguments that are not a string")
    return {"id": stable("fc", rid, turn, index), "type": "function_call",
            "call_id": call["id"], "name": function["name"], "arguments": arguments,
            "status": "completed"}


def _response_id(upstream_id: Any) -> str:
    """`resp_…`: the upstream's id, kept when it is already one, else derived from it
    (a fresh one when it sent none)."""
    if not isinstance(upstream_id, str) or not upstream_id:
        return "resp_" + secrets.token_hex(16)
    return upstream_id if upstream_id.startswith("resp_") else stable("resp", upstream_id)
