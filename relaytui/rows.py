"""One row's tool rounds, told as text: the summary a tool-calling record's result
carries (`openrelay: {tool_rounds, model_calls, ...}`) and the pieces of a row's detail
(`GET /v1/batches/{id}/rows/{custom_id}`): tool calls, message contents, usage and the
final answer.

Pure: no Textual, no HTTP."""

from __future__ import annotations

import contextlib
import json
from typing import Any

EXTENSIONS = "openrelay"  # the result / response key the summary lives under
CLIP = 4000  # characters of one message shown before "… N more characters"


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def tool_summary(item: dict[str, Any]) -> dict[str, Any] | None:
    """The tool-rounds summary of one result: beside the content in a Relay results row,
    in `response.body` of an OpenAI output line. None when the row ran no tool loop
    (or failed: a failed row's summary is in its detail, not its result)."""
    found = item.get(EXTENSIONS)
    if not isinstance(found, dict):
        response = item.get("response")
        body = response.get("body") if isinstance(response, dict) else None
        found = body.get(EXTENSIONS) if isinstance(body, dict) else None
    return found if isinstance(found, dict) and "tool_rounds" in found else None


def tool_errors(summary: dict[str, Any] | None) -> list[str]:
    """The tool_call_ids whose tool result was an error (MCP `isError`)."""
    errors = (summary or {}).get("tool_errors")
    return [str(e) for e in errors] if isinstance(errors, list) else []


def exhausted(summary: dict[str, Any] | None) -> bool:
    """The round limit ended the loop: the model still wanted tools."""
    return bool((summary or {}).get("tool_rounds_exhausted"))


def needs_a_look(summary: dict[str, Any] | None) -> bool:
    return exhausted(summary) or bool(tool_errors(summary))


def rounds_cell(summary: dict[str, Any] | None) -> str:
    """The results table's cell: `⟳2`; `⟳8 max` when the round limit ended the loop;
    ` ✗1` added for tool results that were errors; "" for a row without a loop."""
    if summary is None:
        return ""
    text = f"⟳{_int(summary.get('tool_rounds'))}"
    if exhausted(summary):
        text += " max"
    if errors := tool_errors(summary):
        text += f" ✗{len(errors)}"
    return text


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_text(summary: dict[str, Any] | None) -> str:
    """`2 tool rounds · 3 model calls · stopped at the round limit · 1 tool error (c1)`."""
    if summary is None:
        return ""
    parts = [_plural(_int(summary.get("tool_rounds")), "tool round")]
    if "model_calls" in summary:
        parts.append(_plural(_int(summary.get("model_calls")), "model call"))
    if exhausted(summary):
        parts.append("stopped at the round limit")
    if errors := tool_errors(summary):
        parts.append(f"{_plural(len(errors), 'tool error')} ({', '.join(errors)})")
    return " · ".join(parts)


def call_text(call: dict[str, Any]) -> str:
    """`lookup({"q": 1})`: one tool call as the model made it (its arguments are a JSON
    string; shown compact, or as sent when they are not JSON)."""
    function = call.get("function")
    if not isinstance(function, dict):
        function = {}
    name = str(function.get("name") or "?")
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):  # not JSON: shown as sent
            arguments = json.dumps(json.loads(arguments), ensure_ascii=False)
    elif arguments is not None:
        arguments = json.dumps(arguments, ensure_ascii=False)
    return f"{name}({arguments or ''})"


TEXT_PARTS = ("text", "input_text", "output_text")  # chat's, and the Responses API's


def content_text(content: Any) -> str:
    """A message's content as text: a string as is; content parts joined (a text part's
    text, any other part by its type); anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        return " ".join(str(p.get("text", "")) if p.get("type") in TEXT_PARTS
                        else f"[{p.get('type', 'part')}]" for p in content)
    return json.dumps(content, ensure_ascii=False)


def clipped(text: str, most: int = CLIP) -> str:
    if len(text) <= most:
        return text
    return f"{text[:most]}… ({len(text) - most} more characters)"


def final_message(response: Any) -> dict[str, Any] | None:
    """The assistant message of a chat completion, or of a Response (its output text,
    its function calls as tool calls), or None for any other body."""
    if isinstance(response, dict) and response.get("object") == "response":
        return response_message(response)
    choices = response.get("choices") if isinstance(response, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        return message if isinstance(message, dict) else None
    return None


def response_message(response: dict[str, Any]) -> dict[str, Any]:
    """A Response's `output` as one assistant message: the `output_text` of its message
    items, and its `function_call` items as chat tool calls."""
    output = [i for i in response.get("output") or [] if isinstance(i, dict)]
    texts = [str(part.get("text", "")) for item in output if item.get("type") == "message"
             for part in item.get("content") or []
             if isinstance(part, dict) and part.get("type") == "output_text"]
    calls = [{"id": item.get("call_id"), "type": "function",
              "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
             for item in output if item.get("type") == "function_call"]
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def usage_text(usage: Any) -> str:
    """`10 prompt + 5 completion tokens` (a Response's: `10 input + 5 output tokens`), or
    "" when the round has no usage."""
    if not isinstance(usage, dict) or not usage:
        return ""
    if "input_tokens" in usage and "prompt_tokens" not in usage:
        return (f"{_int(usage.get('input_tokens'))} input + "
                f"{_int(usage.get('output_tokens'))} output tokens")
    return (f"{_int(usage.get('prompt_tokens'))} prompt + "
            f"{_int(usage.get('completion_tokens'))} completion tokens")


def tool_config(body: Any) -> dict[str, Any] | None:
    """The request's `openrelay.tool_config` (as the daemon shows it: redacted)."""
    extensions = body.get(EXTENSIONS) if isinstance(body, dict) else None
    config = extensions.get("tool_config") if isinstance(extensions, dict) else None
    return config if isinstance(config, dict) else None


def tool_names(body: Any) -> list[str]:
    """The functions the request offers the model (`tools`)."""
    tools = body.get("tools") if isinstance(body, dict) else None
    if not isinstance(tools, list):
        return []
    names = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name"):
            names.append(str(function["name"]))
        elif isinstance(tool, dict) and tool.get("type") == "function" and tool.get("name"):
            names.append(str(tool["name"]))  # a Responses request's function tool
    return names


def executor_text(config: dict[str, Any]) -> str:
    """`https://tools.example.com/run (http, authorization ***, at most 4 rounds)`."""
    notes = [str(config.get("type") or "http")]
    if config.get("authorization") is not None:
        notes.append(f"authorization {config['authorization']}")
    if config.get("max_rounds"):
        notes.append(f"at most {_int(config['max_rounds'])} rounds")
    return f"{config.get('url', '?')} ({', '.join(notes)})"


def error_text(detail: dict[str, Any]) -> str:
    """A row's error, led by its code unless the message already starts with it."""
    error, code = str(detail.get("error") or ""), str(detail.get("error_code") or "")
    if not error:
        return ""
    return error if not code or error.startswith(code) else f"{code}: {error}"


def executor_calls(detail: dict[str, Any]) -> list[dict[str, Any]]:
    """A tool-calling row's calls to its executor (an older relayd names none)."""
    calls = detail.get("executor_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _plural_of(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def attempts_text(detail: dict[str, Any]) -> str:
    """What a row tried: `3 attempts`; for a tool-calling row, its model attempts and
    its executor calls apart, and how many of those failed (`1 model attempt · 4
    executor calls, 3 failed`), so a row's error `(after 3 attempts)` reads true."""
    attempts = _int(detail.get("attempts"))
    calls = executor_calls(detail)
    if not calls:
        return _plural_of(attempts, "attempt")
    failed = sum(1 for c in calls if c.get("error"))
    return (f"{_plural_of(attempts, 'model attempt')} · "
            f"{_plural_of(len(calls), 'executor call')}" + (f", {failed} failed" if failed
                                                            else ""))


def attempts_cell(entry: dict[str, Any]) -> str:
    """The dead-letter table's Attempts cell: `6`, or `1+3` (model attempts + executor
    calls) for a tool-calling row."""
    calls = executor_calls(entry)
    attempts = _int(entry.get("attempts"))
    return f"{attempts}+{len(calls)}" if calls else str(attempts)


def attempt_lines(detail: dict[str, Any]) -> list[dict[str, Any]]:
    """Every call a row made, in the order made: its model attempts (`attempt_log`) and
    its executor calls, each with what it called (`gpt-4o-mini`; `executor http ·
    round 2`, `executor mcp · tools/list`), its status (an HTTP status; `ok` for an
    executor call that gave results), duration, start and error."""
    attempts = [{"call": a.get("model"), "status": a.get("status_code"),
                 "duration_ms": a.get("duration_ms"), "started_at": a.get("started_at"),
                 "error": a.get("error"), "executor": False}
                for a in detail.get("attempt_log") or [] if isinstance(a, dict)]
    calls = []
    for call in executor_calls(detail):
        number = _int(call.get("round"))
        where = f"round {number}" if number else "tools/list"
        status = call.get("status_code")
        calls.append({"call": f"executor {call.get('executor') or '?'} · {where}",
                      "status": status if status is not None
                      else ("ok" if not call.get("error") else None),
                      "duration_ms": call.get("duration_ms"),
                      "started_at": call.get("started_at"), "error": call.get("error"),
                      "executor": True, "round": number})
    return _in_order(attempts, calls)


def _in_order(attempts: list[dict[str, Any]],
              calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The two logs, each in the order made, merged by start. Starts are to the
    millisecond, so on a fast executor a call and the model attempt after it can start
    in the same one. A tie is then broken by what made the call: round N's executor
    call comes after the model's Nth answer and before the attempt that follows it
    (round 0, the discovery of the tools, before every attempt)."""
    merged: list[dict[str, Any]] = []
    answered = a = c = 0
    while a < len(attempts) or c < len(calls):
        if c < len(calls) and a < len(attempts):
            call_at, attempt_at = _start(calls[c]), _start(attempts[a])
            call_first = call_at < attempt_at or (call_at == attempt_at
                                                  and answered >= calls[c]["round"])
        else:
            call_first = c < len(calls)
        if call_first:
            merged.append(calls[c])
            c += 1
        else:
            answered += _answered(attempts[a])
            merged.append(attempts[a])
            a += 1
    return merged


def _start(line: dict[str, Any]) -> str:
    return str(line["started_at"] or "")  # ISO 8601 in UTC: ordered as text


def _answered(attempt: dict[str, Any]) -> bool:
    status = attempt["status"]
    return isinstance(status, int) and 200 <= status < 300 and not attempt["error"]
