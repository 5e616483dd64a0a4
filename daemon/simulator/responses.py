"""OpenAI's Responses API, simulated: what `POST /v1/responses` reads and answers.
Pure: no I/O.

A request is checked (400 invalid_request_error, `param` naming the field) and read
into the same `Call` the chat route makes, so the reply, the `[sim:...]` directives,
tool calling and token counts are the chat route's:

- **Input**: `input` is a string (one user message) or a list of items: messages
  (`role` user, assistant, system or developer; a string, or `input_text`,
  `input_image`, `input_file`, `output_text` and `refusal` parts), `function_call`
  items (a round of calls the model made) and `function_call_output` items (their
  results). `instructions` and every text are the inputs; the prompt is the last user
  message.
- **Output**: one `message` item with one `output_text` part, cut after
  `max_output_tokens` words (`status: "incomplete"`, `incomplete_details.reason:
  "max_output_tokens"`). With `text.format` `json_schema` the text is JSON that fits the
  schema's properties (strings get the canned reply), with `json_object`
  `{"input": reply}`.
- **Tools**: with function `tools`, the answer is a round of `function_call` items
  (the chat route's `call_` ids as `call_id`, the same digits under `fc_` as `id`) for as
  many rounds and calls as `[sim:tool_rounds=N]` and `[sim:tool_calls=K]` say, then the
  final answer quoting every `function_call_output`. `tool_choice` and
  `parallel_tool_calls` act as on chat. An output that answers no earlier call, or a
  call no output answers, is refused as OpenAI refuses it.
- **The rest of the Response** repeats the request's parameters (`instructions`,
  `tools`, `tool_choice`, `text`, `temperature`, `top_p`, `reasoning`, `metadata`,
  `max_output_tokens`, `store`, ...), as OpenAI's does.
- **Refused**: `stream: true`, `background: true`, `previous_response_id` and
  `conversation`: the simulator stores nothing, so there is no conversation to continue
  (the whole of it goes in `input`). `store` is repeated and otherwise ignored.
- **Usage**: `input_tokens` and `output_tokens`, one a word, as on chat; no cached or
  reasoning tokens.
"""

from __future__ import annotations

import json
from typing import Any

from daemon.simulator.content import (
    BadRequest,
    Call,
    content_text,
    count_tokens,
    finish,
    next_reply,
    read_common,
    read_tool_choice,
    tool_context,
)
from daemon.simulator.structured import json_ask
from daemon.simulator.tools import ToolTurn, arguments_for, openai_tool_calls

ROLES = ("user", "assistant", "system", "developer")
PARTS = ("input_text", "input_image", "input_file", "output_text", "refusal")
TEXT_PARTS = ("input_text", "output_text")  # the parts that carry `text`
FORMATS = ("text", "json_schema", "json_object")
VERBOSITIES = ("low", "medium", "high")
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
SUMMARIES = ("auto", "concise", "detailed")
# What every simulated Response says the same way.
FIXED = {"background": False, "error": None, "max_tool_calls": None,
         "previous_response_id": None, "service_tier": "default", "top_logprobs": 0,
         "truncation": "disabled"}


def parse_responses(body: dict[str, Any]) -> Call:
    """A Responses API request as a `Call`; BadRequest names what is wrong."""
    model = read_common(body)
    _refuse_stateful(body)
    items = _items(body.get("input"))
    instructions = _optional(body, "instructions", str, "a string")
    texts = (instructions or "", *(_item_text(item) for item in items))
    users = [content_text(i["content"]) for i in items
             if i["type"] == "message" and i["role"] == "user"]
    tools = _read_tools(body.get("tools"))
    choice = read_tool_choice(body, tools, named=_choice_name)  # repeated: checked always
    tooling = tool_context(users[0] if users else "", tools=tools,
                           turns=_read_tool_turns(items), param="input", choice=lambda: choice)
    echo = _echo(body, instructions=instructions, tools=tools)
    return Call("responses", model, users[-1] if users else "", texts, tooling,
                max_tokens=_max_output_tokens(body.get("max_output_tokens")), echo=echo,
                json=json_ask(echo["text"]["format"],
                              [i for i in items if i["type"] == "message"],
                              users[0] if users else ""))


def response_body(call: Call, n: int, now: int) -> dict[str, Any]:
    """The `Response`: a round of `function_call` items or one `message` item."""
    reply = next_reply(call)
    cut = False
    if isinstance(reply, ToolTurn):
        output, outputs = _function_calls(reply), reply.texts
    else:
        marked = call.json is not None and call.json.marked
        text, reason, _ = finish(call.json.answer(reply) if call.json is not None and marked
                                 else _formatted(reply, call.echo["text"]["format"]),
                                 max_tokens=call.max_tokens)
        cut = reason == "max_tokens"
        output, outputs = [_message_item(n, text, cut=cut)], [text]
    input_tokens, output_tokens = count_tokens(call.inputs), count_tokens(outputs)
    return {
        "id": f"resp_sim{n:012d}", "object": "response", "created_at": now,
        "status": "incomplete" if cut else "completed", "completed_at": None if cut else now,
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "model": call.model, "output": output, **FIXED, **call.echo,
        "usage": {"input_tokens": input_tokens,
                  "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                  "output_tokens": output_tokens,
                  "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": input_tokens + output_tokens},
    }


def _formatted(reply: str, text_format: dict[str, Any]) -> str:
    """The reply as `text.format` asks: as is, or JSON that fits the schema."""
    if text_format["type"] == "text":
        return reply
    schema = text_format.get("schema") if text_format["type"] == "json_schema" else None
    return json.dumps(arguments_for(schema, reply, 1), ensure_ascii=False)


def _message_item(n: int, text: str, *, cut: bool) -> dict[str, Any]:
    return {"id": f"msg_sim{n:012d}", "type": "message", "role": "assistant",
            "status": "incomplete" if cut else "completed",
            "content": [{"type": "output_text", "text": text, "annotations": [],
                         "logprobs": []}]}


def _function_calls(turn: ToolTurn) -> list[dict[str, Any]]:
    """The turn's calls as `function_call` items (arguments as chat writes them)."""
    return [{"id": "fc_" + call["id"].removeprefix("call_"), "type": "function_call",
             "status": "completed", "call_id": call["id"], "name": call["function"]["name"],
             "arguments": call["function"]["arguments"]} for call in openai_tool_calls(turn)]


# --- reading the request ------------------------------------------------------------


def _refuse_stateful(body: dict[str, Any]) -> None:
    if _optional(body, "background", bool, "a boolean"):
        raise BadRequest("background: the Relay simulator answers at once; it runs no "
                         "response in the background.", param="background")
    for field in ("previous_response_id", "conversation"):
        if body.get(field) is not None:
            raise BadRequest(f"{field}: the Relay simulator stores no responses or "
                             "conversations; send the whole conversation in 'input'.",
                             param=field)


def _optional(body: dict[str, Any], field: str, kind: type, what: str) -> Any:
    """`body[field]` if it is a `kind`, None if absent; else BadRequest."""
    value = body.get(field)
    if value is not None and (not isinstance(value, kind)
                              or (kind is not bool and isinstance(value, bool))):
        raise BadRequest(f"Invalid type for '{field}': expected {what}.", param=field)
    return value


def _items(value: Any) -> list[dict[str, Any]]:
    """The input items, each with its `type` (a message's may be left out)."""
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if value is None:
        raise BadRequest("Missing required parameter: 'input'.", param="input")
    if not isinstance(value, list) or not value:
        raise BadRequest("Invalid 'input': expected a string or a non-empty array of "
                         "input items.", param="input")
    return [_item(f"input[{i}]", item) for i, item in enumerate(value)]


def _item(where: str, item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise BadRequest(f"Invalid '{where}': expected an input item object.", param=where)
    kind = item.get("type", "message")
    if kind == "message":
        if item.get("role") not in ROLES:
            raise BadRequest(f"Invalid '{where}.role': expected one of "
                             f"{', '.join(ROLES)}.", param=f"{where}.role")
        _content(item.get("content"), f"{where}.content")
    elif kind == "function_call":
        for field in ("call_id", "name", "arguments"):
            _string(item.get(field), f"{where}.{field}")
    elif kind == "function_call_output":
        _string(item.get("call_id"), f"{where}.call_id")
        _content(item.get("output"), f"{where}.output")
    else:
        raise BadRequest(f"Invalid '{where}.type': the Relay simulator reads 'message', "
                         "'function_call' and 'function_call_output' items.",
                         param=f"{where}.type")
    return item | {"type": kind}


def _string(value: Any, where: str) -> None:
    if not isinstance(value, str) or not value:
        raise BadRequest(f"Missing required parameter: '{where}' (a non-empty string).",
                         param=where)


def _content(value: Any, where: str) -> None:
    """A string, or a list of content parts whose text parts carry `text`."""
    if isinstance(value, str):
        return
    if not isinstance(value, list):
        raise BadRequest(f"Invalid type for '{where}': expected a string or an array of "
                         "content parts.", param=where)
    for j, part in enumerate(value):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in PARTS:
            raise BadRequest(f"Invalid '{where}[{j}].type': expected one of "
                             f"{', '.join(PARTS)}.", param=f"{where}[{j}].type")
        if kind in TEXT_PARTS and not isinstance(part.get("text"), str):
            raise BadRequest(f"Missing required parameter: '{where}[{j}].text'.",
                             param=f"{where}[{j}].text")


def _item_text(item: dict[str, Any]) -> str:
    """What an item sends as text: a message's, a function call output's (a call's
    arguments count as the answer that made them, not as input)."""
    if item["type"] == "message":
        return content_text(item["content"])
    return content_text(item["output"]) if item["type"] == "function_call_output" else ""


def _read_tool_turns(items: list[dict[str, Any]]) -> tuple[int, tuple[str, ...]]:
    """(runs of `function_call` items, every `function_call_output`'s text in order).

    As OpenAI does, refuses an output that answers no earlier call, and a call that no
    output answers."""
    rounds, results, previous = 0, [], None
    pending: dict[str, int] = {}  # call_id -> the item that made the call
    for i, item in enumerate(items):
        if item["type"] == "function_call":
            rounds += previous != "function_call"
            pending[item["call_id"]] = i
        elif item["type"] == "function_call_output":
            if pending.pop(item["call_id"], None) is None:
                raise BadRequest("No tool call found for function call output with call_id "
                                 f"{item['call_id']}.", param=f"input[{i}].call_id")
            results.append(_item_text(item))
        previous = item["type"]
    if pending:
        call_id, i = next(iter(pending.items()))
        raise BadRequest(f"No tool output found for function call {call_id}.",
                         param=f"input[{i}]")
    return rounds, tuple(results)


def _read_tools(value: Any) -> tuple[dict[str, Any], ...]:
    """Function tools as a Response repeats them (`name` and `parameters` are what the
    tool turns read)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise BadRequest("Invalid type for 'tools': expected an array of tools.",
                         param="tools")
    return tuple(_function_tool(f"tools[{i}]", tool) for i, tool in enumerate(value))


def _function_tool(where: str, tool: Any) -> dict[str, Any]:
    if (not isinstance(tool, dict) or tool.get("type") != "function"
            or not isinstance(tool.get("name"), str) or not tool["name"]
            or not isinstance(tool.get("parameters", {}), dict | None)):
        raise BadRequest(f"Invalid '{where}': the Relay simulator serves function tools, "
                         "each {\"type\": \"function\", \"name\", \"parameters\"}.", param=where)
    return {"type": "function", "name": tool["name"], "description": tool.get("description"),
            "parameters": tool.get("parameters"), "strict": tool.get("strict", True)}


def _choice_name(value: dict[str, Any]) -> Any:
    """The function a Response's `tool_choice` object names."""
    return value.get("name") if value.get("type") == "function" else None


def _max_output_tokens(value: Any) -> int | None:
    """OpenAI asks for at least 16; any positive budget is taken here, so a short one
    can cut the canned reply."""
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                              or value < 1):
        raise BadRequest("Invalid 'max_output_tokens': expected an integer of at least 1.",
                         param="max_output_tokens")
    return value


def _echo(body: dict[str, Any], *, instructions: str | None,
          tools: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """The request's parameters as its Response repeats them, defaults filled in."""
    return {
        "instructions": instructions, "max_output_tokens": body.get("max_output_tokens"),
        "metadata": _metadata(body), "parallel_tool_calls": _optional(
            body, "parallel_tool_calls", bool, "a boolean") is not False,
        "reasoning": _reasoning(body.get("reasoning")),
        "store": _optional(body, "store", bool, "a boolean") is not False,
        "temperature": _number(body, "temperature", 2), "text": _text(body.get("text")),
        "tool_choice": body.get("tool_choice", "auto"), "tools": list(tools),
        "top_p": _number(body, "top_p", 1),
        **{field: _optional(body, field, str, "a string")
           for field in ("safety_identifier", "prompt_cache_key")},
        # Only when given: OpenAI's description has no null `user`.
        **({"user": body["user"]} if _optional(body, "user", str, "a string") else {}),
    }


def _number(body: dict[str, Any], field: str, high: float) -> float:
    value = body.get(field)
    if value is None:
        return 1.0
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= high:
        raise BadRequest(f"Invalid '{field}': expected a number between 0 and {high}.",
                         param=field)
    return float(value)


def _metadata(body: dict[str, Any]) -> dict[str, str]:
    value = _optional(body, "metadata", dict, "an object of strings") or {}
    if len(value) > 16 or not all(isinstance(v, str) for v in value.values()):
        raise BadRequest("Invalid 'metadata': expected at most 16 string values.",
                         param="metadata")
    return dict(value)


def _reasoning(value: Any) -> dict[str, Any]:
    reasoning = value if isinstance(value, dict) else {}
    if ((value is not None and not isinstance(value, dict))
            or reasoning.get("effort") not in (None, *EFFORTS)
            or reasoning.get("summary") not in (None, *SUMMARIES)):
        raise BadRequest(f"Invalid 'reasoning': 'effort' is one of {', '.join(EFFORTS)} and "
                         f"'summary' one of {', '.join(SUMMARIES)}.", param="reasoning")
    return {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")}


def _text(value: Any) -> dict[str, Any]:
    """`text` with its `format` (default plain text) and `verbosity` (default medium)."""
    text = value if isinstance(value, dict) else {}
    text_format = text.get("format", {"type": "text"})
    if ((value is not None and not isinstance(value, dict))
            or not isinstance(text_format, dict) or text_format.get("type") not in FORMATS):
        raise BadRequest(f"Invalid 'text.format.type': expected one of {', '.join(FORMATS)}.",
                         param="text.format.type")
    if text_format["type"] == "json_schema" and (
            not isinstance(text_format.get("name"), str)
            or not isinstance(text_format.get("schema"), dict)):
        raise BadRequest("Invalid 'text.format': a json_schema format needs a string 'name' "
                         "and a 'schema' object.", param="text.format")
    verbosity = text.get("verbosity") or "medium"
    if verbosity not in VERBOSITIES:
        raise BadRequest(f"Invalid 'text.verbosity': expected one of {', '.join(VERBOSITIES)}.",
                         param="text.verbosity")
    return {"format": text_format, "verbosity": verbosity}
