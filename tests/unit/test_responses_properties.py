"""Whatever a Responses row or a chat upstream holds, the Responses translation gives a
body or says why not (`Untranslatable`, `BadAnswer`), never another exception; and any
well-formed chat completion becomes a `Response` the openai SDK's own type accepts.
Bounded and derandomized: the same examples every run."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from openai.types.responses import Response

from daemon.domain.outcome import Usage
from daemon.upstream.responses_to_chat import chat_request, response_answer
from daemon.upstream.untranslatable import BadAnswer, Untranslatable
from tests.unit.test_translation_properties import BOUNDED, MODEL

KEYS = st.sampled_from(["type", "role", "content", "text", "image_url", "detail", "file_id",
                        "call_id", "name", "arguments", "output", "id", "status", "format",
                        "schema", "effort", "summary", "parameters", "annotations"])
VALUES = st.sampled_from(["message", "function_call", "function_call_output", "input_text",
                          "input_image", "output_text", "refusal", "user", "assistant",
                          "system", "developer", "function", "json_schema", "json_object",
                          "text", "auto", "required", "none", "low", "web_search", "{}", "x"])
json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | VALUES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12)
item = st.dictionaries(KEYS, json_value, max_size=5)
REQUEST_KEYS = st.sampled_from(["instructions", "tools", "tool_choice", "text", "reasoning",
                                "max_output_tokens", "temperature", "metadata", "stream",
                                "include", "truncation", "previous_response_id"])
requests = st.dictionaries(REQUEST_KEYS, json_value, max_size=4).flatmap(
    lambda body: st.one_of(st.text(max_size=5), st.lists(item, max_size=3), json_value).map(
        lambda given: body | {"model": "m", "input": given}))
answers = st.fixed_dictionaries({}, optional={
    "choices": st.lists(st.fixed_dictionaries({}, optional={
        "message": st.dictionaries(KEYS, json_value, max_size=3) | st.fixed_dictionaries(
            {}, optional={"tool_calls": st.lists(json_value, max_size=2)}),
        "finish_reason": json_value}), max_size=2),
    "id": json_value, "model": json_value, "created": json_value})

count = st.integers(0, 10**9)
def tool_call(i: int, name: str, arguments: str) -> dict[str, Any]:
    return {"id": f"call_{i}", "type": "function",
            "function": {"name": name, "arguments": arguments}}


calls = st.lists(st.builds(tool_call, st.integers(0, 99), st.sampled_from(["lookup", "f"]),
                           st.sampled_from(["{}", '{"q": 1}'])),
                 max_size=3, unique_by=lambda c: str(c["id"]))
completions = st.builds(
    lambda content, refusal, tool_calls, finish, model, created: {
        "id": "chatcmpl-1", "model": model, "created": created,
        "choices": [{"index": 0, "finish_reason": finish, "message": {
            "role": "assistant", "content": content, "refusal": refusal,
            **({"tool_calls": tool_calls} if tool_calls else {})}}]},
    st.none() | st.text(max_size=8) | st.lists(st.fixed_dictionaries(
        {"type": st.just("text"), "text": st.text(max_size=4)}), max_size=2),
    st.none() | st.text(max_size=5), calls,
    st.sampled_from(["stop", "length", "tool_calls", "content_filter", None, "odd"]),
    st.none() | st.text(min_size=1, max_size=6), st.none() | st.integers(0, 2**31))


@BOUNDED
@given(requests)
def test_a_responses_request_translates_or_is_refused(body: dict[str, Any]) -> None:
    with contextlib.suppress(Untranslatable):
        assert isinstance(chat_request(body, MODEL), dict)


@BOUNDED
@given(answers)
def test_any_chat_answer_becomes_a_response_or_is_invalid(answer: dict[str, Any]) -> None:
    with contextlib.suppress(BadAnswer):
        assert isinstance(response_answer(answer, usage=Usage(), sent={"model": "m"},
                                          asked={"model": "m", "input": "x"}, now=0.0), dict)


@BOUNDED
@given(completions, count, count, count, count)
def test_every_well_formed_answer_is_a_response_the_sdk_accepts(
        completion: dict[str, Any], prompt: int, output: int, cached: int,
        reasoning: int) -> None:
    usage = Usage(prompt, output, cached_tokens=cached, reasoning_tokens=reasoning)
    made = response_answer(completion, usage=usage, sent={"model": "m"},
                           asked={"model": "m", "input": "x"}, now=1.0)
    parsed = Response.model_validate(json.loads(json.dumps(made)))
    message = completion["choices"][0]["message"]
    content = message["content"]
    text = "".join(p["text"] for p in content) if isinstance(content, list) else content or ""
    assert parsed.output_text == text
    assert [i.call_id for i in parsed.output if i.type == "function_call"] == [
        c["id"] for c in message.get("tool_calls", [])]
    assert parsed.usage is not None and parsed.usage.total_tokens == prompt + output
