"""The TUI reads a Response (a `/v1/responses` record's answer) as it reads a chat
completion: its output text is the answer, its function calls are tool calls, its usage
is input and output tokens; and a Responses request shows its instructions and input
items. The results view's content is relayd's (`GET /results`: the output text)."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult

from relaytui.export import result_text
from relaytui.rows import content_text, final_message, tool_names, usage_text
from relaytui.widgets.transcript import RowTranscript

RESPONSE = {
    "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-4o-mini",
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "The kettle is ", "annotations": []},
            {"type": "output_text", "text": "dishwasher safe.", "annotations": []}]}],
    "usage": {"input_tokens": 12, "output_tokens": 5, "total_tokens": 17},
}
CALLING = {**RESPONSE, "output": [{"type": "function_call", "call_id": "call_1",
                                   "name": "lookup", "arguments": '{"q": "K2"}'}]}
REQUEST: dict[str, Any] = {
    "model": "gpt-4o-mini", "instructions": "Answer briefly.",
    "tools": [{"type": "function", "name": "lookup", "parameters": {}}],
    "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "Is the K2 dishwasher safe?"},
        {"type": "input_image", "image_url": "https://example.com/k2.png"}]}]}


def test_a_responses_output_is_one_assistant_message() -> None:
    assert final_message(RESPONSE) == {"role": "assistant",
                                       "content": "The kettle is dishwasher safe."}
    assert final_message(CALLING) == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "lookup", "arguments": '{"q": "K2"}'}}]}


def test_a_responses_usage_tools_and_input_parts_read_as_text() -> None:
    assert usage_text(RESPONSE["usage"]) == "12 input + 5 output tokens"
    assert usage_text({"prompt_tokens": 1, "completion_tokens": 2}) == (
        "1 prompt + 2 completion tokens")
    assert tool_names(REQUEST) == ["lookup"]
    assert content_text(REQUEST["input"][0]["content"]) == (
        "Is the K2 dishwasher safe? [input_image]")


def test_the_results_view_shows_the_content_relayd_extracted() -> None:
    assert result_text({"custom_id": "resp-1", "content": "The kettle is safe."}) == (
        "The kettle is safe.")


class Shown(App[None]):
    def __init__(self, detail: dict[str, Any]) -> None:
        super().__init__()
        self.detail = detail

    def compose(self) -> ComposeResult:
        yield RowTranscript(id="t")

    def on_mount(self) -> None:
        self.query_one(RowTranscript).show(self.detail)


async def test_a_responses_row_in_full_shows_its_request_and_answer() -> None:
    detail = {"custom_id": "resp-1", "status": "completed", "body": REQUEST,
              "response": RESPONSE, "transcript": [], "attempt_log": []}
    app = Shown(detail)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        shown = str(app.query_one(RowTranscript).render())
    for part in ("Answer briefly.", "Is the K2 dishwasher safe? [input_image]",
                 "tools: lookup", "The kettle is dishwasher safe.",
                 "12 input + 5 output tokens"):
        assert part in shown, (part, shown)
