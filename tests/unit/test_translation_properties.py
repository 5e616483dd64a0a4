"""Whatever a row or an upstream holds, a translation either gives a body or says why not
(`Untranslatable`, `BadAnswer`): never another exception, which would end the row's
worker instead of the row. Bounded and derandomized: the same examples every run."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.config import ModelConfig
from daemon.domain.outcome import Usage
from daemon.upstream import anthropic_to_openai, openai_to_anthropic
from daemon.upstream.untranslatable import BadAnswer, Untranslatable

BOUNDED = settings(max_examples=200, derandomize=True, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow])
MODEL = ModelConfig(alias="m", base_url="http://upstream", model="m")
KEYS = st.sampled_from(["type", "text", "content", "role", "source", "media_type", "data",
                        "url", "image_url", "id", "name", "input", "tool_use_id",
                        "tool_calls", "function", "arguments", "tool_call_id", "is_error",
                        "choices", "message", "finish_reason", "stop_reason", "usage"])
VALUES = st.sampled_from(["text", "image", "tool_use", "tool_result", "base64", "url",
                          "image_url", "user", "assistant", "tool", "system", "function",
                          "auto", "any", "none", "tool_calls", "stop", "{}", "[]", "x"])
json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | VALUES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12)
REQUEST_KEYS = st.sampled_from(["messages", "system", "tools", "tool_choice", "metadata",
                                "stop", "stop_sequences", "max_tokens", "temperature", "user",
                                "parallel_tool_calls", "n"])
block = st.fixed_dictionaries({"type": json_value}, optional={
    "text": json_value, "source": json_value, "content": json_value, "input": json_value,
    "image_url": json_value, "tool_use_id": json_value, "id": json_value})
message = st.fixed_dictionaries({"role": json_value}, optional={
    "content": st.one_of(json_value, st.lists(block, max_size=3)),
    "tool_calls": st.lists(json_value, max_size=2), "tool_call_id": json_value})
# Objects with the keys a translation reads, each of any JSON value (a `type` that is a
# list or an object included: a set or dict lookup of it would raise TypeError).
choice = st.fixed_dictionaries({"type": json_value}, optional={
    "name": json_value, "disable_parallel_tool_use": json_value, "function": json_value})
tool = st.fixed_dictionaries({"type": json_value}, optional={
    "name": json_value, "input_schema": json_value, "function": json_value})
requests = st.dictionaries(REQUEST_KEYS, json_value, max_size=4).flatmap(
    lambda body: st.fixed_dictionaries({"messages": st.lists(message, max_size=3)}, optional={
        "tool_choice": st.one_of(choice, json_value),
        "tools": st.lists(tool, max_size=2)}).map(lambda shaped: body | shaped))
answers = st.fixed_dictionaries({}, optional={
    "choices": st.lists(st.fixed_dictionaries({}, optional={
        "message": st.dictionaries(KEYS, json_value, max_size=3), "finish_reason": json_value,
        "stop_reason": json_value}), max_size=2),
    "content": st.one_of(json_value, st.lists(block, max_size=3)),
    "id": json_value, "model": json_value, "stop_reason": json_value})


def settles(translate: Any, body: Any, refusal: type[Exception]) -> None:
    with contextlib.suppress(refusal):
        assert isinstance(translate(body), dict)


@BOUNDED
@given(requests)
def test_a_messages_request_translates_or_is_refused(params: dict[str, Any]) -> None:
    settles(lambda b: anthropic_to_openai.chat_request(b, MODEL), params, Untranslatable)


@BOUNDED
@given(requests)
def test_a_chat_request_translates_or_is_refused(body: dict[str, Any]) -> None:
    settles(lambda b: openai_to_anthropic.messages_request(b, MODEL), body, Untranslatable)


@BOUNDED
@given(answers)
def test_a_chat_completion_becomes_a_message_or_is_bad(answer: dict[str, Any]) -> None:
    settles(lambda a: anthropic_to_openai.message_answer(a, usage=Usage(), sent={}, now=0.0),
            answer, BadAnswer)


@BOUNDED
@given(answers)
def test_a_message_becomes_a_chat_completion_or_is_bad(answer: dict[str, Any]) -> None:
    settles(lambda a: openai_to_anthropic.chat_answer(a, usage=Usage(), sent={}, now=0.0),
            answer, BadAnswer)
