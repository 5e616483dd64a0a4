"""Anthropic Messages requests on an OpenAI-compatible upstream: the request table, what
is refused, and the chat completion's way back into a `Message` (checked against the
official SDKs' types)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest

from daemon.config import ModelConfig
from daemon.domain.outcome import Usage
from daemon.upstream.anthropic_to_openai import chat_request, message_answer
from daemon.upstream.untranslatable import MALFORMED, UNSUPPORTED, BadAnswer, Untranslatable

MODEL = ModelConfig(alias="gpt", base_url="http://upstream/v1", model="gpt-4o-mini")
USER = {"role": "user", "content": "Hello"}
PNG = "iVBORw0KGgo="
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
RECORDED = Usage(30, 7)  # the recorded answer's usage, as read


def request(**params: Any) -> dict[str, Any]:
    return {"model": "claude-alias", "max_tokens": 256, "messages": [USER]} | params


def translate(**params: Any) -> dict[str, Any]:
    return chat_request(request(**params), MODEL)


def test_a_plain_request() -> None:
    assert translate() == {"model": "gpt-4o-mini", "max_tokens": 256,
                           "messages": [{"role": "user", "content": "Hello"}]}


@pytest.mark.parametrize(("params", "expected"), [
    ({"stop_sequences": ["END"], "temperature": 0.2, "top_p": 0.9},
     {"stop": ["END"], "temperature": 0.2, "top_p": 0.9}),
    ({"metadata": {"user_id": "u-42"}}, {"user": "u-42"}),
    ({"metadata": {"user_id": None}}, {}),
    ({"stream": False}, {}),
    ({"top_k": None}, {}),  # null is absent
    ({"tool_choice": {"type": "auto"}}, {"tool_choice": "auto"}),
    ({"tool_choice": {"type": "any"}}, {"tool_choice": "required"}),
    ({"tool_choice": {"type": "none"}}, {"tool_choice": "none"}),
    ({"tool_choice": {"type": "tool", "name": "weather"}},
     {"tool_choice": {"type": "function", "function": {"name": "weather"}}}),
    ({"tool_choice": {"type": "any", "disable_parallel_tool_use": True}},
     {"tool_choice": "required", "parallel_tool_calls": False}),
])
def test_parameters_map_across(params: dict[str, Any], expected: dict[str, Any]) -> None:
    sent = translate(**params)
    assert {k: v for k, v in sent.items() if k not in ("model", "max_tokens", "messages")} \
        == expected


@pytest.mark.parametrize(("system", "content"), [
    ("Be brief.", "Be brief."),
    ([{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind.",
                                              "cache_control": {"type": "ephemeral"}}],
     "Be brief.\n\nBe kind."),
])
def test_system_becomes_the_first_message(system: Any, content: str) -> None:
    assert translate(system=system)["messages"][0] == {"role": "system", "content": content}


def test_tools_become_function_tools() -> None:
    sent = translate(tools=[{"name": "weather", "description": "Weather in a city",
                             "input_schema": WEATHER},
                            {"type": "custom", "name": "now", "input_schema": {"type": "object"},
                             "strict": True}])
    assert sent["tools"] == [
        {"type": "function", "function": {"name": "weather", "parameters": WEATHER,
                                          "description": "Weather in a city"}},
        {"type": "function", "function": {"name": "now", "parameters": {"type": "object"},
                                          "strict": True}},
    ]


def test_content_blocks_become_parts_tool_calls_and_tool_messages() -> None:
    """A recorded tool-use conversation with images, as Anthropic's docs write one."""
    messages = [
        {"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": PNG}},
            {"type": "image", "source": {"type": "url", "url": "https://x.test/cat.jpg"}},
            {"type": "text", "text": "Weather where these were taken?"},
        ]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "toolu_02", "name": "weather", "input": {"city": "Rome"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "-3 C"},
            {"type": "tool_result", "tool_use_id": "toolu_02", "is_error": True,
             "content": [{"type": "text", "text": "no station"}]},
            {"type": "text", "text": "And so?"},
        ]},
        {"role": "assistant", "content": "Cold, "},
    ]
    assert translate(messages=messages)["messages"] == [
        {"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            {"type": "image_url", "image_url": {"url": "https://x.test/cat.jpg"}},
            {"type": "text", "text": "Weather where these were taken?"},
        ]},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "toolu_01", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}},
            {"id": "toolu_02", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Rome"}'}},
        ]},
        {"role": "tool", "tool_call_id": "toolu_01", "content": "-3 C"},
        {"role": "tool", "tool_call_id": "toolu_02", "content": "Error: no station"},
        {"role": "user", "content": "And so?"},
        {"role": "assistant", "content": "Cold, "},
    ]


def test_an_assistant_turn_of_tool_calls_only_has_no_content() -> None:
    turn = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_01", "name": "now", "input": {}}]}
    assert translate(messages=[USER, turn])["messages"][1]["content"] is None


@pytest.mark.parametrize(("params", "field"), [
    ({"top_k": 5}, "top_k"),
    ({"thinking": {"type": "enabled", "budget_tokens": 2048}}, "thinking"),
    ({"service_tier": "auto"}, "service_tier"),
    ({"stream": True}, "stream"),
    ({"metadata": {"user_id": "u", "team": "x"}}, "metadata.team"),
    ({"messages": [{"role": "user", "content": [
        {"type": "document", "source": {"type": "text", "data": "x",
                                        "media_type": "text/plain"}}]}]},
     "messages[0].content[0].type"),
    ({"messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "file", "file_id": "file_1"}}]}]},
     "messages[0].content[0].source.type"),
    ({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "x", "citations": [{"type": "char_location"}]}]}]},
     "messages[0].content[0].citations"),
    ({"messages": [{"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hm", "signature": "s"}]}]},
     "messages[0].content[0].type"),
    ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools[0].type"),
    ({"tools": [{"name": "w", "input_schema": WEATHER, "input_examples": [{}]}]},
     "tools[0].input_examples"),
    ({"system": [{"type": "image", "source": {"type": "url", "url": "u"}}]}, "system[0].type"),
])
def test_parameters_without_a_counterpart_are_refused(params: dict[str, Any],
                                                      field: str) -> None:
    with pytest.raises(Untranslatable) as info:
        translate(**params)
    assert info.value.code == UNSUPPORTED
    assert info.value.message.startswith(field)
    assert "has no counterpart in" in info.value.message


@pytest.mark.parametrize(("params", "message"), [
    ({"messages": "hi"}, "messages: must be an array"),
    ({"messages": [{"role": "tool", "content": "x"}]},
     'messages[0].role: must be "user" or "assistant"'),
    ({"tool_choice": {"type": "some"}}, 'tool_choice.type: must be "auto", "any", "tool" or'),
    ({"tool_choice": {"type": ["any"]}}, 'tool_choice.type: must be "auto", "any", "tool" or'),
    ({"tool_choice": {"type": {"any": 1}}}, 'tool_choice.type: must be "auto", "any", "tool"'),
    ({"messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "n", "input": "x"}]}]},
     "messages[0].content[0].input: must be an object"),
])
def test_malformed_fields_are_named(params: dict[str, Any], message: str) -> None:
    with pytest.raises(Untranslatable) as info:
        translate(**params)
    assert info.value.code == MALFORMED and info.value.message.startswith(message)


# The answer


def completion(message: dict[str, Any], finish: str = "stop", **choice: Any) -> dict[str, Any]:
    """A chat completion as OpenAI records one."""
    return {"id": "chatcmpl-abc123", "object": "chat.completion", "created": 1_700_000_000,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "message": {"role": "assistant"} | message,
                         "finish_reason": finish, "logprobs": None} | choice],
            "usage": {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37}}


def answer(chat: dict[str, Any], sent: dict[str, Any] | None = None,
           usage: Usage = RECORDED) -> dict[str, Any]:
    openai.types.chat.ChatCompletion.model_validate(chat)  # the recorded shape is OpenAI's
    message = message_answer(chat, usage=usage, sent=sent or {"model": "gpt-4o-mini"},
                             now=0.0)
    anthropic.types.Message.model_validate(message)  # and the answer Anthropic's
    return message


def test_a_text_answer_becomes_a_message() -> None:
    message = answer(completion({"content": "Hi there"}))
    assert message == {
        "id": message["id"], "type": "message", "role": "assistant",
        "model": "gpt-4o-mini-2024-07-18",
        "content": [{"type": "text", "text": "Hi there"}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 30, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "output_tokens": 7},
    }
    assert message["id"].startswith("msg_")
    assert answer(completion({"content": "Hi there"}))["id"] == message["id"]  # stable


def test_tool_calls_become_tool_use_blocks() -> None:
    chat = completion({"content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]}, "tool_calls")
    message = answer(chat)
    assert message["content"] == [{"type": "tool_use", "id": "call_1", "name": "weather",
                                   "input": {"city": "Oslo"}}]
    assert message["stop_reason"] == "tool_use"


@pytest.mark.parametrize(("finish", "extra", "reason", "sequence"), [
    ("length", {}, "max_tokens", None),
    ("content_filter", {}, "refusal", None),
    ("stop", {"stop_reason": "END"}, "stop_sequence", "END"),  # vLLM says which stop matched
    ("stop", {"stop_reason": "OTHER"}, "end_turn", None),
])
def test_finish_reasons_become_stop_reasons(finish: str, extra: dict[str, Any], reason: str,
                                            sequence: str | None) -> None:
    message = answer(completion({"content": "x"}, finish, **extra), {"stop": ["END"]})
    assert (message["stop_reason"], message["stop_sequence"]) == (reason, sequence)


def test_cached_prompt_tokens_are_read_from_the_cache() -> None:
    message = answer(completion({"content": "x"}), usage=Usage(30, 7, cached_tokens=20))
    assert message["usage"] == {"input_tokens": 10, "cache_creation_input_tokens": 0,
                                "cache_read_input_tokens": 20, "output_tokens": 7}


@pytest.mark.parametrize(("chat", "problem"), [
    ({"choices": []}, "no choices[0]"),
    ({"choices": [{"message": "x"}]}, "choices[0].message that is not an object"),
    ({"choices": [{"message": {"content": 5}}]}, "content that is not text"),
    ({"choices": [{"message": {"tool_calls": [{"id": "c", "function": {
        "name": "w", "arguments": "{oops"}}]}}]}, "arguments that are not a JSON object"),
])
def test_answers_that_cannot_be_a_message(chat: dict[str, Any], problem: str) -> None:
    with pytest.raises(BadAnswer, match=problem.replace("[", r"\[").replace("]", r"\]")):
        message_answer(chat, usage=Usage(), sent={}, now=0.0)


def test_arguments_are_json_text() -> None:
    sent = translate(messages=[USER, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "n", "input": {"a": [1, "é"]}}]}])
    assert json.loads(sent["messages"][1]["tool_calls"][0]["function"]["arguments"]) == {
        "a": [1, "é"]}
