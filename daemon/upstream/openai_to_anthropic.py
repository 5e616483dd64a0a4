"""OpenAI and Relay chat rows on an Anthropic Messages upstream, and the answer back.

`messages_request` turns a chat completions request into a Messages API request
(`POST {base_url}/v1/messages`); `chat_answer` turns the `Message` into the chat
completion the row stores. Pure. A `json_schema` or `json_object` `response_format`
becomes a system instruction (Anthropic has no response format; Relay checks the answer
itself, `output_check`). What Anthropic's Messages API cannot say (`n` > 1,
`logprobs`, another `response_format`, `seed`, penalties, audio, ...) raises `Untranslatable`:
never dropped, the row fails on this model without calling it. A parameter at its
no-op value (`n: 1`, `logprobs: false`, a zero penalty) is not a refusal. Only an
image's `detail` hint is dropped: Anthropic sizes images by itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from daemon.config import ModelConfig
from daemon.domain.extensions import EXTENSIONS
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

TARGET = "Anthropic's Messages API"
KNOWN = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p",
         "stop", "tools", "tool_choice", "parallel_tool_calls", "user", EXTENSIONS}
# Parameters Anthropic lacks, accepted only at the value that asks for nothing.
NO_OPS: dict[str, tuple[Any, ...]] = {
    "n": (1,), "logprobs": (False,), "stream": (False,), "presence_penalty": (0,),
    "frequency_penalty": (0,), "response_format": ({"type": "text"},),
}
MAX_TEMPERATURE = 1.0  # Anthropic's range is 0–1, OpenAI's 0–2
MESSAGE_KEYS = {
    "system": {"role", "content"},
    "developer": {"role", "content"},
    "user": {"role", "content"},
    "assistant": {"role", "content", "tool_calls", "refusal"},
    "tool": {"role", "content", "tool_call_id"},
}
CHOICES = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                  "tool_use": "tool_calls", "refusal": "content_filter",
                  "model_context_window_exceeded": "length", "pause_turn": "stop"}
UNSHOWN = {"thinking", "redacted_thinking"}  # reasoning blocks: not part of a chat answer


def messages_request(body: Mapping[str, Any], model: ModelConfig) -> dict[str, Any]:
    """The Messages request for a chat completions request, on `model`; a row without
    `max_tokens` takes the model's `default_max_tokens` (Anthropic requires one)."""
    body, asked = _json_format(body)
    _refuse_extras(body)
    system, messages = _conversation(body.get("messages"))
    if asked is not None:
        system = [*system, {"type": "text", "text": asked}]
    sent: dict[str, Any] = {"model": model.model, "max_tokens": _max_tokens(body, model),
                            "messages": messages}
    if system:
        sent["system"] = system[0]["text"] if len(system) == 1 else system
    sent.update(_sampling(body))
    if body.get("tools") is not None:
        sent["tools"] = [_tool(t, f"tools[{i}]")
                         for i, t in enumerate(as_list(body["tools"], "tools"))]
    choice = _tool_choice(body.get("tool_choice"), body.get("parallel_tool_calls"))
    if choice is not None:
        sent["tool_choice"] = choice
    if body.get("user") is not None:
        sent["metadata"] = {"user_id": as_text(body["user"], "user")}
    return sent


def _json_format(body: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """Anthropic takes no `response_format`: a `json_schema` or `json_object` one is said
    in the system prompt instead (Relay checks the answer itself: `output_check`)."""
    form = body.get("response_format")
    kind = form.get("type") if isinstance(form, dict) else None
    if kind not in ("json_schema", "json_object"):
        return body, None
    assert isinstance(form, dict)
    rest = {k: v for k, v in body.items() if k != "response_format"}
    spec = form.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if kind == "json_schema" and isinstance(schema, dict):
        return rest, ("Answer with only a JSON value, no other text, that is valid against "
                      f"this JSON Schema: {json.dumps(schema, separators=(',', ':'))}")
    return rest, "Answer with only a JSON object, and no other text."


def _refuse_extras(body: Mapping[str, Any]) -> None:
    for key, value in body.items():
        if key in KNOWN or value is None or value in NO_OPS.get(key, ()):
            continue
        raise no_counterpart(key, TARGET, value=value if key in NO_OPS else None)


def _max_tokens(body: Mapping[str, Any], model: ModelConfig) -> Any:
    for key in ("max_completion_tokens", "max_tokens"):
        if body.get(key) is not None:
            return body[key]
    return model.default_max_tokens


def _sampling(body: Mapping[str, Any]) -> dict[str, Any]:
    sent: dict[str, Any] = {}
    temperature = body.get("temperature")
    if isinstance(temperature, int | float) and temperature > MAX_TEMPERATURE:
        raise no_counterpart("temperature", f"{TARGET}, whose range is 0–1", value=temperature)
    for key in ("temperature", "top_p"):
        if body.get(key) is not None:
            sent[key] = body[key]
    stop = body.get("stop")
    if stop is not None:
        sent["stop_sequences"] = [stop] if isinstance(stop, str) else as_list(stop, "stop")
    return sent


def _conversation(messages: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The system prompt (system and developer messages, as text blocks) and the turns.
    A run of tool messages becomes one user turn of tool results, as Anthropic wants."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for i, message in enumerate(as_list(messages, "messages")):
        where = f"messages[{i}]"
        message = as_object(message, where)
        role = message.get("role")
        if not isinstance(role, str) or role not in MESSAGE_KEYS:
            raise no_counterpart(f"{where}.role", TARGET, value=role)
        refuse_unknown(message, MESSAGE_KEYS[role], where=f"{where}.", target=TARGET)
        if role in ("system", "developer"):
            system.extend(_text_blocks(message.get("content"), f"{where}.content"))
        elif role == "tool":
            _add_tool_result(turns, message, where)
        else:
            turns.append(_turn(role, message, where))
    return system, turns


def _text_blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = []
    for i, part in enumerate(as_list(content, where)):
        part = as_object(part, f"{where}[{i}]")
        if part.get("type") != "text":
            raise no_counterpart(f"{where}[{i}].type", f"{TARGET} here", value=part.get("type"))
        blocks.append({"type": "text", "text": as_text(part.get("text"), f"{where}[{i}].text")})
    return blocks


def _add_tool_result(turns: list[dict[str, Any]], message: dict[str, Any], where: str) -> None:
    content = message.get("content")
    result = {"type": "tool_result",
              "tool_use_id": as_text(message.get("tool_call_id"), f"{where}.tool_call_id"),
              "content": content if isinstance(content, str) else _text_blocks(
                  content, f"{where}.content")}
    last = turns[-1] if turns else None
    if last is not None and last["role"] == "user" and _all_tool_results(last["content"]):
        last["content"].append(result)
    else:
        turns.append({"role": "user", "content": [result]})


def _all_tool_results(content: Any) -> bool:
    return isinstance(content, list) and all(b.get("type") == "tool_result" for b in content)


def _turn(role: str, message: dict[str, Any], where: str) -> dict[str, Any]:
    content = message.get("content")
    if role == "user":
        return {"role": "user", "content": content if isinstance(content, str) else [
            _user_block(p, f"{where}.content[{i}]")
            for i, p in enumerate(as_list(content, f"{where}.content"))]}
    blocks = [] if content in (None, "") else _text_blocks(content, f"{where}.content")
    calls = message.get("tool_calls") or []
    blocks += [_tool_use(c, f"{where}.tool_calls[{i}]")
               for i, c in enumerate(as_list(calls, f"{where}.tool_calls"))]
    if isinstance(content, str) and not calls:
        return {"role": "assistant", "content": content}
    return {"role": "assistant", "content": blocks}


def _user_block(part: Any, where: str) -> dict[str, Any]:
    part = as_object(part, where)
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": as_text(part.get("text"), f"{where}.text")}
    if kind == "image_url":
        image = as_object(part.get("image_url"), f"{where}.image_url")
        return {"type": "image", "source": _image_source(
            as_text(image.get("url"), f"{where}.image_url.url"), f"{where}.image_url.url")}
    raise no_counterpart(f"{where}.type", TARGET, value=kind)


def _image_source(url: str, where: str) -> dict[str, Any]:
    """A data URL becomes a base64 source, any other URL a url source."""
    if not url.startswith("data:"):
        return {"type": "url", "url": url}
    head, sep, data = url[len("data:"):].partition(",")
    media, _, encoding = head.partition(";")
    if not sep or encoding != "base64":
        raise malformed(where, "a base64 data URL (data:image/png;base64,...) or a URL")
    return {"type": "base64", "media_type": media, "data": data}


def _tool_use(call: Any, where: str) -> dict[str, Any]:
    call = as_object(call, where)
    function = as_object(call.get("function"), f"{where}.function")
    try:
        arguments = json.loads(as_text(function.get("arguments"), f"{where}.function.arguments"))
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        raise malformed(f"{where}.function.arguments", "a JSON object (Anthropic's tool input)")
    return {"type": "tool_use", "id": as_text(call.get("id"), f"{where}.id"),
            "name": as_text(function.get("name"), f"{where}.function.name"), "input": arguments}


def _tool(tool: Any, where: str) -> dict[str, Any]:
    tool = as_object(tool, where)
    if tool.get("type") != "function":
        raise no_counterpart(f"{where}.type", TARGET, value=tool.get("type"))
    refuse_unknown(tool, {"type", "function"}, where=f"{where}.", target=TARGET)
    function = as_object(tool.get("function"), f"{where}.function")
    refuse_unknown(function, {"name", "description", "parameters", "strict"},
                   where=f"{where}.function.", target=TARGET)
    sent: dict[str, Any] = {
        "name": as_text(function.get("name"), f"{where}.function.name"),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
    for key in ("description", "strict"):
        if function.get(key) is not None:
            sent[key] = function[key]
    return sent


def _tool_choice(choice: Any, parallel: Any) -> dict[str, Any] | None:
    if choice is None and parallel is not False:
        return None
    if choice is None or isinstance(choice, str):
        if choice is not None and choice not in CHOICES:
            raise malformed("tool_choice", '"auto", "required", "none" or a function')
        sent: dict[str, Any] = dict(CHOICES[choice or "auto"])
    else:
        function = as_object(as_object(choice, "tool_choice").get("function"),
                             "tool_choice.function")
        sent = {"type": "tool", "name": as_text(function.get("name"), "tool_choice.function.name")}
    if parallel is False and sent["type"] != "none":
        sent["disable_parallel_tool_use"] = True
    return sent


# The answer: a Message becomes a chat completion.


def chat_answer(message: Mapping[str, Any], *, usage: Usage, sent: Mapping[str, Any],
                now: float, asked: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The chat completion for a Message answering `sent`; `usage` is the answer's,
    already checked (`read_message_usage`); `now` is its `created`."""
    del asked  # the row's own request: nothing of it is echoed
    content = message.get("content")
    if not isinstance(content, list):
        raise BadAnswer("a Message whose content is not an array")
    texts, calls = _answer_parts(content)
    answer: dict[str, Any] = {"role": "assistant",
                              "content": "".join(texts) if texts or not calls else None}
    if calls:
        answer["tool_calls"] = calls
    finish = FINISH_REASONS.get(str(message.get("stop_reason")), "stop")
    return {
        "id": f"chatcmpl-{message.get('id')}",
        "object": "chat.completion",
        "created": int(now),
        "model": message.get("model") or sent.get("model"),
        "choices": [{"index": 0, "message": answer, "finish_reason": finish,
                     "logprobs": None}],
        "usage": chat_usage(usage),
    }


def chat_usage(usage: Usage) -> dict[str, Any]:
    body: dict[str, Any] = {"prompt_tokens": usage.prompt_tokens,
                            "completion_tokens": usage.completion_tokens,
                            "total_tokens": usage.prompt_tokens + usage.completion_tokens}
    if usage.cached_tokens:
        body["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
    return body


def _answer_parts(content: list[Any]) -> tuple[list[str], list[dict[str, Any]]]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            calls.append(_tool_call(block))
        elif not (isinstance(kind, str) and kind in UNSHOWN):
            raise BadAnswer(f"a content block of type {kind!r}, which a chat completion "
                            f"cannot hold")
    return texts, calls


def _tool_call(block: dict[str, Any]) -> dict[str, Any]:
    if not (isinstance(block.get("id"), str) and isinstance(block.get("name"), str)
            and isinstance(block.get("input"), dict)):
        raise BadAnswer("a tool_use block without an id, a name or an input object")
    return {"id": block["id"], "type": "function",
            "function": {"name": block["name"], "arguments": json.dumps(block["input"])}}
