"""Anthropic's Messages API, simulated: what `POST /v1/messages` reads and answers.
Pure: no I/O.

A request is checked as Anthropic checks it (400 invalid_request_error, the message
naming the field) and read into the same `Call` the chat route makes, so the reply,
the `[sim:...]` directives, tool calling and token counts are the chat route's:

- **Text**: `system` (a string or text blocks) and every message's text blocks and
  tool results are the inputs; the prompt is the last user message that is not only
  tool results. The answer is one `text` block, cut before the first of
  `stop_sequences` it contains (`stop_reason: "stop_sequence"`) or after `max_tokens`
  words (`"max_tokens"`), else `"end_turn"`.
- **Tools**: with custom `tools` (`input_schema` as the parameters), the answer is a
  round of `tool_use` blocks (`toolu_` ids, `input` from the schema;
  `[sim:tool_bad_args]` gives `{}`, an input that fits no schema) with
  `stop_reason: "tool_use"`, until `[sim:tool_rounds=N]` rounds are answered by
  `tool_result` blocks; then the final answer quotes every result. `tool_choice`
  `auto`/`any`/`tool`/`none` and `disable_parallel_tool_use` act as OpenAI's
  `auto`/`required`/a named function/`none` and `parallel_tool_calls: false` do.
- **Usage**: `input_tokens` and `output_tokens`, one a word, as on chat.
"""

from __future__ import annotations

from typing import Any

from daemon.simulator.content import (
    BadRequest,
    Call,
    ToolChoice,
    count_tokens,
    finish,
    next_reply,
    refuse_unserved,
    tool_context,
)
from daemon.simulator.tools import ToolTurn

ROLES = ("user", "assistant")
TOOL_CHOICES = ("auto", "any", "tool", "none")


def parse_messages(body: dict[str, Any]) -> Call:
    """An Anthropic Messages request as a `Call`; BadRequest names what is wrong."""
    model = _required_text(body, "model")
    max_tokens = _max_tokens(body.get("max_tokens"))
    refuse_unserved(body, stream="stream: the Relay simulator does not stream.",
                    unknown="{key}: Extra inputs are not permitted")
    messages = _messages(body.get("messages"))
    _check_sampling(body)
    texts = (_system_text(body.get("system")), *(_message_text(m) for m in messages))
    users = [_block_text(m["content"]) for m in messages if _is_user_turn(m)]
    tools = _read_tools(body.get("tools"))
    tooling = tool_context(users[0] if users else "", tools=tools,
                           turns=_read_tool_turns(messages),
                           choice=lambda: _read_tool_choice(body.get("tool_choice"), tools))
    return Call("messages", model, users[-1] if users else "", texts, tooling,
                max_tokens=max_tokens, stop_sequences=_stop_sequences(body))


def message_body(call: Call, n: int, now: int) -> dict[str, Any]:
    """The `Message`: a round of `tool_use` blocks or one `text` block."""
    reply = next_reply(call)
    if isinstance(reply, ToolTurn):
        content, outputs = _tool_use_blocks(reply), reply.texts
        stop_reason, stop_sequence = "tool_use", None
    else:
        text, stop_reason, stop_sequence = finish(
            reply, max_tokens=call.max_tokens, stop_sequences=call.stop_sequences)
        content, outputs = [{"type": "text", "text": text}], [text]
    return {
        "id": f"msg_sim{n:012d}", "type": "message", "role": "assistant",
        "model": call.model, "content": content, "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": {"input_tokens": count_tokens(call.inputs),
                  "output_tokens": count_tokens(outputs),
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def _tool_use_blocks(turn: ToolTurn) -> list[dict[str, Any]]:
    arguments = {} if turn.bad_args else turn.arguments
    return [{"type": "tool_use", "id": call_id, "name": turn.name, "input": arguments}
            for call_id in turn.call_ids("toolu_")]


# --- reading the request ------------------------------------------------------------


def _required_text(body: dict[str, Any], field: str) -> str:
    value = body.get(field)
    if value is None:
        raise BadRequest(f"{field}: Field required", param=field)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{field}: Input should be a non-empty string", param=field)
    return value


def _max_tokens(value: Any) -> int:
    if value is None:
        raise BadRequest("max_tokens: Field required", param="max_tokens")
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BadRequest("max_tokens: Input should be an integer of at least 1",
                         param="max_tokens")
    return value


def _messages(value: Any) -> list[dict[str, Any]]:
    if value is None:
        raise BadRequest("messages: Field required", param="messages")
    if not isinstance(value, list) or not value:
        raise BadRequest("messages: Input should be a non-empty list", param="messages")
    for i, message in enumerate(value):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise BadRequest(f"messages.{i}.role: Input should be 'user' or 'assistant'",
                             param="messages")
        _content(message.get("content"), f"messages.{i}.content")
    return value


def _content(value: Any, where: str) -> None:
    """A string, or a list of blocks that each name their `type`."""
    if isinstance(value, str):
        return
    if not isinstance(value, list) or not all(
            isinstance(b, dict) and isinstance(b.get("type"), str) for b in value):
        raise BadRequest(f"{where}: Input should be a string or a list of content blocks",
                         param="messages")
    for j, block in enumerate(value):
        if block["type"] == "text" and not isinstance(block.get("text"), str):
            raise BadRequest(f"{where}.{j}.text: Field required", param="messages")


def _system_text(value: Any) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list) and all(
            isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
            for b in value):
        return _block_text(value)
    raise BadRequest("system: Input should be a string or a list of text blocks",
                     param="system")


def _check_sampling(body: dict[str, Any]) -> None:
    for field in ("temperature", "top_p"):
        value = body.get(field)
        if value is not None and (not isinstance(value, int | float)
                                  or isinstance(value, bool) or not 0 <= value <= 1):
            raise BadRequest(f"{field}: Input should be a number between 0 and 1",
                             param=field)


def _stop_sequences(body: dict[str, Any]) -> tuple[str, ...]:
    value = body.get("stop_sequences")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise BadRequest("stop_sequences: Input should be a list of strings",
                         param="stop_sequences")
    return tuple(value)


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _block_text(content: str | list[dict[str, Any]]) -> str:
    """The text blocks' text, joined by spaces."""
    return " ".join(b["text"] for b in _blocks(content) if b["type"] == "text")


def _result_text(block: dict[str, Any]) -> str:
    """A tool_result's content: a string, or its text blocks."""
    content = block.get("content", "")
    return _block_text(content) if isinstance(content, str | list) else ""


def _message_text(message: dict[str, Any]) -> str:
    blocks = _blocks(message["content"])
    parts = [_block_text(blocks)] + [_result_text(b) for b in blocks
                                     if b["type"] == "tool_result"]
    return " ".join(p for p in parts if p)


def _is_user_turn(message: dict[str, Any]) -> bool:
    """A user message that is more than tool results: what a prompt is read from."""
    blocks = _blocks(message["content"])
    return message["role"] == "user" and (
        not blocks or any(b["type"] != "tool_result" for b in blocks))


# --- tools ----------------------------------------------------------------------


def _read_tools(value: Any) -> tuple[dict[str, Any], ...]:
    """Custom tools as `{"name", "parameters"}` (their `input_schema`)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise BadRequest("tools: Input should be a list", param="tools")
    tools = []
    for i, tool in enumerate(value):
        if (not isinstance(tool, dict) or tool.get("type", "custom") != "custom"
                or not isinstance(tool.get("name"), str) or not tool["name"]
                or not isinstance(tool.get("input_schema"), dict)):
            raise BadRequest(f"tools.{i}: the Relay simulator serves custom tools, each "
                             "with a 'name' and an 'input_schema' object", param="tools")
        tools.append({"name": tool["name"], "parameters": tool["input_schema"]})
    return tuple(tools)


def _read_tool_choice(value: Any, tools: tuple[dict[str, Any], ...]) -> ToolChoice:
    """(the tool it forces, whether it is "none", whether calls may be parallel)."""
    if value is None:
        return None, False, True
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in TOOL_CHOICES:
        raise BadRequest("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'",
                         param="tool_choice")
    parallel = value.get("disable_parallel_tool_use") is not True
    if kind != "tool":
        return None, kind == "none", parallel
    name = value.get("name")
    if not isinstance(name, str) or name not in {t["name"] for t in tools}:
        raise BadRequest("tool_choice.name: must name one of 'tools'", param="tool_choice")
    return name, False, parallel


def _read_tool_turns(messages: list[dict[str, Any]]) -> tuple[int, tuple[str, ...]]:
    """(assistant messages carrying tool_use blocks, every tool_result's text in order).

    As Anthropic does, refuses a tool_result that answers no tool_use of the message
    before it, and tool_use blocks the next message does not all answer."""
    rounds, results = 0, []
    pending: set[str] = set()  # the previous message's tool_use ids
    for i, message in enumerate(messages):
        blocks = _blocks(message["content"])
        answered = [(j, b) for j, b in enumerate(blocks) if b["type"] == "tool_result"]
        for j, block in answered:
            if block.get("tool_use_id") not in pending:
                raise BadRequest(f"messages.{i}.content.{j}: unexpected `tool_use_id` found "
                                 f"in `tool_result` blocks: {block.get('tool_use_id')}. Each "
                                 "`tool_result` block must have a corresponding `tool_use` "
                                 "block in the previous message.", param="messages")
            results.append(_result_text(block))
        _all_answered(i, pending - {b["tool_use_id"] for _, b in answered})
        pending = {_tool_use_id(i, b) for b in blocks if b["type"] == "tool_use"}
        rounds += bool(pending) and message["role"] == "assistant"
    _all_answered(len(messages), pending)
    return rounds, tuple(results)


def _tool_use_id(i: int, block: dict[str, Any]) -> str:
    if (not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str)
            or not isinstance(block.get("input"), dict)):
        raise BadRequest(f"messages.{i}: a tool_use block needs a string 'id', a string "
                         "'name' and an 'input' object", param="messages")
    return str(block["id"])


def _all_answered(i: int, missing: set[str]) -> None:
    if missing:
        raise BadRequest(f"messages.{i - 1}: `tool_use` ids were found without "
                         f"`tool_result` blocks immediately after: {', '.join(sorted(missing))}"
                         ". Each `tool_use` block must have a corresponding `tool_result` "
                         "block in the next message.", param="messages")
