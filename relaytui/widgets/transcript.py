"""A row's conversation, top to bottom: the request's messages (and, for a tool-calling
record, its tools and executor), each tool round (the model's tool calls with their
arguments, the tool results, the round's usage), then the final answer, or the error
that ended the row. A workflow record shows its request (and callback), where it
stands with its totals and the callback's answers step by step, then its output or
the error that ended it."""

from __future__ import annotations

import json
from typing import Any

from textual.markup import escape

from relaytui.rows import (
    call_text,
    clipped,
    content_text,
    error_text,
    executor_text,
    exhausted,
    final_message,
    tool_config,
    tool_errors,
    tool_names,
    tool_summary,
    usage_text,
)
from relaytui.widgets.hanging import HangingText
from relaytui.workflows import (
    callback_text,
    history,
    is_workflow,
    output_text,
    phase_text,
    totals_text,
    workflow_config,
    workflow_state,
)

INDENT = "  "


def _title(text: str, note: str = "") -> str:
    line = f"[b $text-primary]{escape(text)}[/]"
    return line + (f"  [dim]{escape(note)}[/dim]" if note else "")


def _block(label: str, text: str, *, style: str = "b") -> list[str]:
    """`label: text`, the text's own lines indented under it."""
    first, *rest = (clipped(text) or "(empty)").split("\n")
    return [f"{INDENT}[{style}]{escape(label)}[/]: {escape(first)}",
            *(f"{INDENT}  {escape(line)}" for line in rest)]


def _message(message: dict[str, Any], failed_calls: set[str]) -> list[str]:
    role = str(message.get("role") or "?")
    lines: list[str] = []
    content = content_text(message.get("content"))
    calls = message.get("tool_calls")
    if role == "tool":
        call_id = str(message.get("tool_call_id") or "?")
        if call_id in failed_calls:
            return _block(f"tool {call_id} ✗ error", content, style="b $text-error")
        return _block(f"tool {call_id}", content)
    if content or not calls:
        lines += _block(role, content)
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict):
            lines.append(f"{INDENT}[b]{escape(role)}[/] → [b $text-accent]"
                         f"{escape(call_text(call))}[/]  [dim]{escape(str(call.get('id')))}"
                         "[/dim]")
    return lines


def _request(body: dict[str, Any]) -> list[str]:
    notes = []
    if model := body.get("model"):
        notes.append(str(model))
    if names := tool_names(body):
        notes.append("tools: " + ", ".join(names))
    workflow = workflow_config(body)
    if workflow is not None:
        notes.append("workflow")
    lines = [_title("Request", " · ".join(notes))]
    config = tool_config(body)
    if config is not None:
        lines.append(f"{INDENT}[dim]executor {escape(executor_text(config))}[/dim]")
    if workflow is not None:
        lines.append(f"{INDENT}[dim]callback {escape(callback_text(workflow))}[/dim]")
    messages = body.get("messages")
    if isinstance(body.get("instructions"), str):  # a Responses request
        lines += _block("instructions", body["instructions"])
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, dict):
                lines += _message(message, set())
    elif _input_messages(body.get("input")):  # a Responses request's input items
        for item in body["input"]:
            lines += _message(item, set()) if "role" in item else _block(
                str(item.get("type") or "item"), json.dumps(item, ensure_ascii=False))
    elif body.get("input") is not None:  # an embedding, a completion, a moderation
        lines += _block("input", content_text(body.get("input")))
    else:
        lines += _block("body", json.dumps(body, ensure_ascii=False))
    return lines


def _input_messages(value: Any) -> bool:
    """A Responses `input` of items (messages, function calls and their outputs)."""
    return isinstance(value, list) and bool(value) and all(
        isinstance(item, dict) for item in value)


_NO_RESULTS = {"pending": "(waiting for the tool results of this round)",
               "": "(no tool results: the row ended before the executor answered)"}


def _rounds(detail: dict[str, Any], failed_calls: set[str]) -> list[str]:
    status = str(detail.get("status") or "")
    lines: list[str] = []
    for turn in detail.get("transcript") or []:
        if not isinstance(turn, dict):
            continue
        notes = [str(turn["model"])] if turn.get("model") else []
        if usage := usage_text(turn.get("usage")):
            notes.append(usage)
        lines += ["", _title(f"Round {turn.get('round', '?')}", " · ".join(notes))]
        messages = [m for m in turn.get("messages") or [] if isinstance(m, dict)]
        for message in messages:
            lines += _message(message, failed_calls)
        if len(messages) == 1 and messages[0].get("tool_calls"):
            lines.append(f"{INDENT}[dim]{escape(_NO_RESULTS.get(status, _NO_RESULTS['']))}"
                         "[/dim]")
    return lines


def _ending(detail: dict[str, Any], summary: dict[str, Any] | None) -> list[str]:
    status = detail.get("status")
    response = detail.get("response")
    if status == "pending":
        return ["", _title("Answer", "not yet: the row has not finished")]
    if status != "completed":
        lines = ["", _title("Error")]
        lines += _block("error", error_text(detail) or "failed", style="b $text-error")
        if response is not None:
            lines += _block("last response", json.dumps(response, ensure_ascii=False))
        return lines
    message = final_message(response)
    usage = usage_text(response.get("usage")) if isinstance(response, dict) else ""
    lines = ["", _title("Answer", f"in all {usage}" if usage and summary else usage)]
    if message is None:
        return lines + _block("response", json.dumps(response, ensure_ascii=False))
    if exhausted(summary):
        lines.append(f"{INDENT}[$text-warning]The round limit ended the loop: the model "
                     "still asked for tools, which were not run.[/]")
    return lines + _message(message, set())


_PHASE_STYLES = {"completed": ("$text-success", "✓ "), "failed": ("$text-error", "✗ ")}


def _workflow(detail: dict[str, Any]) -> list[str]:
    """Where the record stands, its totals and the callback's answers step by step."""
    colour, mark = _PHASE_STYLES.get(str(detail.get("status")), ("$text-warning", "◌ "))
    lines = ["", f"[b $text-primary]Workflow[/]  [{colour}]{mark}"
             f"{escape(phase_text(detail))}[/]"]
    state = workflow_state(detail)
    if state is None:
        return lines
    lines.append(f"{INDENT}[b]totals[/]: {escape(totals_text(state.get('totals')))}")
    steps = history(detail)
    if not steps:
        lines.append(f"{INDENT}[dim](no answer from the callback yet)[/dim]")
    width = max((len(step) for step, _, _ in steps), default=0)
    for step, answer, note in steps:
        style = "b $text-error" if step == "end" and answer != "completed" else "b"
        line = f"{INDENT}[dim]{escape(step.ljust(width))}[/dim]  [{style}]{escape(answer)}[/]"
        if note:
            line += f"  [dim]{escape(note)}[/dim]"
        lines.append(line)
    return lines


def _output(detail: dict[str, Any]) -> list[str]:
    status = detail.get("status")
    response = detail.get("response")
    if status == "pending":
        return ["", _title("Output", "not yet: the workflow has not finished")]
    if status != "completed":
        return _ending(detail, None)
    output = response.get("output") if isinstance(response, dict) else response
    return ["", _title("Output", "the callback's last answer"),
            *_block("output", output_text(output))]


class RowTranscript(HangingText):
    """Shows one `batch.row` (see `relaytui.client.RelayClient.row`); a wrapped line
    hangs under its own (a message's text under its role)."""

    def show(self, detail: dict[str, Any]) -> None:
        body = detail.get("body") if isinstance(detail.get("body"), dict) else {}
        if is_workflow(detail):
            self.show_lines(_request(body or {}) + _workflow(detail) + _output(detail))
            return
        response = detail.get("response")
        summary = tool_summary({"response": {"body": response}})
        failed_calls = set(tool_errors(summary))
        lines = _request(body or {})
        rounds = _rounds(detail, failed_calls)
        if rounds:
            lines += rounds
        elif tool_config(body) is not None and detail.get("status") == "completed":
            lines += ["", f"{INDENT}[dim](no tool rounds: the model answered without "
                      "tools)[/dim]"]
        lines += _ending(detail, summary)
        self.show_lines(lines)
