"""`relaytui.rows`: a row's tool rounds told as text, from both dialects' shapes."""

from __future__ import annotations

from typing import Any

import pytest
from textual.content import Content

from relaytui.rows import (
    attempt_lines,
    attempts_cell,
    attempts_text,
    call_text,
    clipped,
    content_text,
    error_text,
    executor_text,
    final_message,
    needs_a_look,
    rounds_cell,
    summary_text,
    tool_config,
    tool_names,
    tool_summary,
    usage_text,
)

SUMMARY = {"tool_rounds": 2, "model_calls": 3}


def test_the_summary_is_found_in_both_dialects_result_shapes() -> None:
    relay = {"custom_id": "r-1", "content": "hi", "openrelay": SUMMARY}
    openai = {"id": "batch_req_1", "custom_id": "r-1", "error": None,
              "response": {"status_code": 200, "body": {"choices": [], "openrelay": SUMMARY}}}
    assert tool_summary(relay) == tool_summary(openai) == SUMMARY
    assert tool_summary({"custom_id": "r-2", "content": "plain"}) is None
    assert tool_summary({"custom_id": "r-3", "error": "upstream_error: 503"}) is None
    assert tool_summary({"custom_id": "r-4", "response": None, "error": {"code": "x"}}) is None
    assert tool_summary({"custom_id": "r-5", "openrelay": {"other": 1}}) is None


@pytest.mark.parametrize(("summary", "cell", "text", "look"), [
    (None, "", "", False),
    ({"tool_rounds": 0, "model_calls": 1}, "⟳0", "0 tool rounds · 1 model call", False),
    (SUMMARY, "⟳2", "2 tool rounds · 3 model calls", False),
    ({"tool_rounds": 8, "model_calls": 9, "tool_rounds_exhausted": True}, "⟳8 max",
     "8 tool rounds · 9 model calls · stopped at the round limit", True),
    ({"tool_rounds": 1, "model_calls": 2, "tool_errors": ["c1", "c2"]}, "⟳1 ✗2",
     "1 tool round · 2 model calls · 2 tool errors (c1, c2)", True),
])
def test_rounds_cell_and_summary_text(summary: dict[str, Any] | None, cell: str, text: str,
                                      look: bool) -> None:
    assert rounds_cell(summary) == cell
    assert summary_text(summary) == text
    assert needs_a_look(summary) is look


def test_tool_calls_are_name_and_compact_arguments() -> None:
    call = {"id": "c1", "type": "function",
            "function": {"name": "lookup", "arguments": '{\n  "q": 1,  "city": "Zürich"}'}}
    assert call_text(call) == 'lookup({"q": 1, "city": "Zürich"})'
    assert call_text({"function": {"name": "f", "arguments": "not json"}}) == "f(not json)"
    assert call_text({"function": {"name": "f", "arguments": {"a": 1}}}) == 'f({"a": 1})'
    assert call_text({"id": "c2"}) == "?()"


def test_contents_finals_usage_and_errors() -> None:
    assert content_text(None) == "" and content_text("hi") == "hi"
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {}}]
    assert content_text(parts) == "look [image_url]"
    assert content_text({"a": 1}) == '{"a": 1}'
    assert clipped("x" * 10, most=4) == "xxxx… (6 more characters)"
    message = {"role": "assistant", "content": "done"}
    assert final_message({"choices": [{"message": message}]}) == message
    assert final_message({"data": [{"embedding": [0.1]}]}) is None
    assert final_message(None) is None
    assert usage_text({"prompt_tokens": 10, "completion_tokens": 5}) == \
        "10 prompt + 5 completion tokens"
    assert usage_text(None) == ""
    assert error_text({"error": "tool_executor_error: round 2: boom",
                       "error_code": "tool_executor_error"}) == \
        "tool_executor_error: round 2: boom"
    assert error_text({"error": "boom", "error_code": "upstream_error"}) == \
        "upstream_error: boom"
    assert error_text({"error": None}) == ""


def test_the_request_names_its_tools_and_executor_never_the_secret() -> None:
    body = {"tools": [{"type": "function", "function": {"name": "lookup"}}, {"bad": 1}],
            "openrelay": {"tool_config": {"url": "https://t.example/run", "type": "mcp",
                                          "authorization": "***", "max_rounds": 3}}}
    assert tool_names(body) == ["lookup"] and tool_names({}) == []
    config = tool_config(body)
    assert config is not None and tool_config({"openrelay": {}}) is None
    assert executor_text(config) == ("https://t.example/run (mcp, authorization ***, "
                                     "at most 3 rounds)")
    assert executor_text({"url": "https://t.example/run"}) == "https://t.example/run (http)"


TOOL_ROW = {
    "attempts": 1, "attempt_log": [{"model": "gpt-4o-mini", "status_code": 200, "error": None,
                                    "duration_ms": 410,
                                    "started_at": "2026-10-04T09:12:44.000Z"}],
    "executor_calls": [
        {"round": 0, "executor": "mcp", "status_code": None, "error": None,
         "duration_ms": 30, "started_at": "2026-10-04T09:12:43.500Z"},
        *({"round": 1, "executor": "http", "status_code": 503,
           "error": "the executor answered 503", "duration_ms": 12,
           "started_at": f"2026-10-04T09:12:45.{n}00Z"} for n in range(3))]}


def test_a_tool_rows_calls_are_its_model_attempts_and_its_executor_calls_in_order() -> None:
    lines = attempt_lines(TOOL_ROW)
    assert [(line["call"], line["status"], line["error"]) for line in lines] == [
        ("executor mcp · tools/list", "ok", None),
        ("gpt-4o-mini", 200, None),
        *[("executor http · round 1", 503, "the executor answered 503")] * 3]
    assert attempts_text(TOOL_ROW) == "1 model attempt · 4 executor calls, 3 failed"
    assert attempts_cell(TOOL_ROW) == "1+4"


def test_calls_started_in_the_same_millisecond_keep_the_order_they_were_made_in() -> None:
    """On a fast executor, a model answer, the round's executor call and the next model
    attempt can all start in one millisecond: the call goes after the answer that asked
    for it and before the attempt it feeds, and the tools' discovery first of all."""
    at = "2026-10-04T09:12:44.125Z"

    def attempt(status: int, error: str | None = None) -> dict[str, Any]:
        return {"model": "gpt-4o-mini", "status_code": status, "error": error,
                "duration_ms": 0, "started_at": at}

    def call(number: int) -> dict[str, Any]:
        return {"round": number, "executor": "mcp", "status_code": None, "error": None,
                "duration_ms": 0, "started_at": at}

    row = {"attempt_log": [attempt(503, "upstream_error: 503"), attempt(200), attempt(200),
                           attempt(200)],
           "executor_calls": [call(0), call(1), call(2)]}
    assert [line["call"] for line in attempt_lines(row)] == [
        "executor mcp · tools/list", "gpt-4o-mini", "gpt-4o-mini", "executor mcp · round 1",
        "gpt-4o-mini", "executor mcp · round 2", "gpt-4o-mini"]


def test_a_row_without_executor_calls_counts_its_attempts() -> None:
    row = {"attempts": 1, "attempt_log": TOOL_ROW["attempt_log"]}  # an older relayd too
    assert attempts_text(row) == "1 attempt" and attempts_cell(row) == "1"
    assert attempts_text({"attempts": 6, "executor_calls": []}) == "6 attempts"
    assert [line["call"] for line in attempt_lines(row)] == ["gpt-4o-mini"]


def test_a_wrapped_line_hangs_under_its_first() -> None:
    from relaytui.widgets.hanging import hang

    text = hang(["  [b]system[/b]: You write the morning digest of a support team.",
                 "short"], 30).plain.split("\n")
    assert text == ["  system: You write the", "    morning digest of a", "    support team.",
                    "short"]
    keys = hang(["  ?  Show every key of every screen"], 20, at=lambda _: 5).plain
    assert keys.split("\n") == ["  ?  Show every key", "     of every screen"]


def test_the_detail_pane_wraps_between_facts_never_inside_one() -> None:
    from relaytui.widgets.job_detail import DOT, GAP, flow

    lines = [(["[dim]id[/dim] 0123456789", "[dim]dialect[/dim] openai",
               "[dim]priority[/dim] std"], GAP),
             (["rows 9 total", "8 completed", "1 failed"], DOT),
             (["[dim]webhook[/dim] none set"], GAP)]
    plain = [Content.from_markup(line).plain for line in flow(lines, 30).split("\n")]
    assert plain == ["id 0123456789   dialect openai", "  priority std",
                     "rows 9 total · 8 completed", "  1 failed",
                     "webhook none set"]
    assert flow(lines, 200).count("\n") == 2  # room enough: a line each
