"""OpenAI and Relay chat rows on an Anthropic upstream: the request table, what is
refused, and the `Message`'s way back into a chat completion (checked against the
official SDKs' types)."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from daemon.config import ModelConfig
from daemon.domain.outcome import Usage
from daemon.upstream.openai_to_anthropic import chat_answer, messages_request
from daemon.upstream.untranslatable import MALFORMED, UNSUPPORTED, BadAnswer, Untranslatable

MODEL = ModelConfig(alias="claude", base_url="https://api.anthropic.com", model="claude-x",
                    api="anthropic", default_max_tokens=1024)
USER = {"role": "user", "content": "Hello"}
PNG = "iVBORw0KGgo="
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}}
RECORDED = Usage(25, 9)  # the recorded answer's usage, as read


def translate(**body: Any) -> dict[str, Any]:
    return messages_request({"model": "claude", "messages": [USER]} | body, MODEL)


def test_a_plain_row_takes_the_models_default_max_tokens() -> None:
    assert translate() == {"model": "claude-x", "max_tokens": 1024,
                           "messages": [{"role": "user", "content": "Hello"}]}


@pytest.mark.parametrize(("body", "expected"), [
    ({"max_tokens": 50}, {"max_tokens": 50}),
    ({"max_completion_tokens": 60, "max_tokens": 50}, {"max_tokens": 60}),
    ({"temperature": 0.5, "top_p": 0.9}, {"temperature": 0.5, "top_p": 0.9}),
    ({"stop": "END"}, {"stop_sequences": ["END"]}),
    ({"stop": ["A", "B"]}, {"stop_sequences": ["A", "B"]}),
    ({"user": "u-42"}, {"metadata": {"user_id": "u-42"}}),
    ({"n": 1, "logprobs": False, "presence_penalty": 0, "frequency_penalty": 0.0,
      "stream": False, "response_format": {"type": "text"}, "seed": None}, {}),  # no-ops
    ({"tool_choice": "auto"}, {"tool_choice": {"type": "auto"}}),
    ({"tool_choice": "required"}, {"tool_choice": {"type": "any"}}),
    ({"tool_choice": "none", "parallel_tool_calls": False}, {"tool_choice": {"type": "none"}}),
    ({"tool_choice": {"type": "function", "function": {"name": "weather"}}},
     {"tool_choice": {"type": "tool", "name": "weather"}}),
    ({"parallel_tool_calls": False},
     {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}),
    ({"parallel_tool_calls": True}, {}),
])
def test_parameters_map_across(body: dict[str, Any], expected: dict[str, Any]) -> None:
    sent = translate(**body)
    assert {k: v for k, v in sent.items() if k not in ("model", "messages")} \
        == {"max_tokens": 1024} | expected


def test_system_and_developer_messages_become_the_system_prompt() -> None:
    one = translate(messages=[{"role": "system", "content": "Be brief."}, USER])
    assert (one["system"], one["messages"]) == ("Be brief.", [USER])
    two = translate(messages=[{"role": "system", "content": "Be brief."},
                              {"role": "developer", "content": [{"type": "text",
                                                                 "text": "Be kind."}]}, USER])
    assert two["system"] == [{"type": "text", "text": "Be brief."},
                             {"type": "text", "text": "Be kind."}]


def test_function_tools_become_tools() -> None:
    sent = translate(tools=[
        {"type": "function", "function": {"name": "weather", "description": "Weather",
                                          "parameters": WEATHER, "strict": True}},
        {"type": "function", "function": {"name": "now"}},
    ])
    assert sent["tools"] == [
        {"name": "weather", "input_schema": WEATHER, "description": "Weather", "strict": True},
        {"name": "now", "input_schema": {"type": "object", "properties": {}}},
    ]


def test_a_tool_conversation_with_images() -> None:
    """A recorded OpenAI tool-calling conversation: parts, calls, and a run of tool
    messages that becomes one user turn of tool results."""
    messages = [
        {"role": "user", "content": [
            {"type": "text", "text": "Weather where these were taken?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}",
                                                "detail": "high"}},
            {"type": "image_url", "image_url": {"url": "https://x.test/cat.jpg"}},
        ]},
        {"role": "assistant", "content": None, "refusal": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}},
            {"id": "call_2", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Rome"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "-3 C"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "9 C"}]},
        {"role": "assistant", "content": "Cold in Oslo."},
        {"role": "user", "content": "Thanks"},
    ]
    assert translate(messages=messages)["messages"] == [
        {"role": "user", "content": [
            {"type": "text", "text": "Weather where these were taken?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": PNG}},
            {"type": "image", "source": {"type": "url", "url": "https://x.test/cat.jpg"}},
        ]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "call_2", "name": "weather", "input": {"city": "Rome"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "-3 C"},
            {"type": "tool_result", "tool_use_id": "call_2",
             "content": [{"type": "text", "text": "9 C"}]},
        ]},
        {"role": "assistant", "content": "Cold in Oslo."},
        {"role": "user", "content": "Thanks"},
    ]


def test_an_assistant_turn_with_text_and_calls() -> None:
    turn = {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "now", "arguments": "{}"}}]}
    assert translate(messages=[USER, turn])["messages"][1]["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "c", "name": "now", "input": {}}]


@pytest.mark.parametrize(("body", "field"), [
    ({"n": 2}, "n = 2"),
    ({"logprobs": True}, "logprobs = True"),
    ({"top_logprobs": 3}, "top_logprobs"),
    ({"response_format": {"type": "grammar"}}, "response_format = {'type': 'grammar'}"),
    ({"seed": 7}, "seed"),
    ({"presence_penalty": 0.5}, "presence_penalty = 0.5"),
    ({"logit_bias": {"50256": -100}}, "logit_bias"),
    ({"stream": True}, "stream = True"),
    ({"temperature": 1.5}, "temperature = 1.5"),
    ({"messages": [{"role": "user", "content": "x", "name": "ann"}]}, "messages[0].name"),
    ({"messages": [{"role": "function", "name": "f", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "x", "format": "wav"}}]}]},
     "messages[0].content[0].type"),
    ({"tools": [{"type": "custom", "custom": {"name": "x"}}]}, "tools[0].type"),
])
def test_parameters_without_a_counterpart_are_refused(body: dict[str, Any],
                                                      field: str) -> None:
    with pytest.raises(Untranslatable) as info:
        translate(**body)
    assert info.value.code == UNSUPPORTED
    assert info.value.message.startswith(field)
    assert "has no counterpart in Anthropic's Messages API" in info.value.message


@pytest.mark.parametrize(("body", "message"), [
    ({"messages": [USER, {"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "[1]"}}]}]},
     "messages[1].tool_calls[0].function.arguments: must be a JSON object"),
    ({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png,abc"}}]}]},
     "messages[0].content[0].image_url.url: must be a base64 data URL"),
    ({"tool_choice": "sometimes"}, 'tool_choice: must be "auto", "required", "none"'),
])
def test_malformed_fields_are_named(body: dict[str, Any], message: str) -> None:
    with pytest.raises(Untranslatable) as info:
        translate(**body)
    assert info.value.code == MALFORMED and info.value.message.startswith(message)


# The answer


def recorded(content: list[dict[str, Any]], stop_reason: str = "end_turn",
             **usage: int) -> dict[str, Any]:
    """A Message as Anthropic's API answers one."""
    return {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
            "model": "claude-x-20250101", "content": content, "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 25, "output_tokens": 9} | usage}


def answer(message: dict[str, Any], usage: Usage = RECORDED) -> dict[str, Any]:
    anthropic.types.Message.model_validate(message)  # the recorded shape is Anthropic's
    chat = chat_answer(message, usage=usage, sent={"model": "claude-x"}, now=1_700_000_000.5)
    openai.types.chat.ChatCompletion.model_validate(chat)  # and the answer OpenAI's
    return chat


def test_a_text_message_becomes_a_chat_completion() -> None:
    assert answer(recorded([{"type": "text", "text": "Hi"}, {"type": "text", "text": "!"}])) == {
        "id": "chatcmpl-msg_01XFDUDYJgAACzvnptvVoYEL", "object": "chat.completion",
        "created": 1_700_000_000, "model": "claude-x-20250101",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi!"},
                     "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 25, "completion_tokens": 9, "total_tokens": 34},
    }


def test_tool_use_blocks_become_tool_calls() -> None:
    chat = answer(recorded([
        {"type": "thinking", "thinking": "they want weather", "signature": "sig"},
        {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {"city": "Oslo"}},
    ], "tool_use"))
    [choice] = chat["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "toolu_01", "type": "function",
         "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]}


@pytest.mark.parametrize(("stop_reason", "finish"), [
    ("max_tokens", "length"), ("stop_sequence", "stop"), ("refusal", "content_filter"),
    ("model_context_window_exceeded", "length"),
])
def test_stop_reasons_become_finish_reasons(stop_reason: str, finish: str) -> None:
    chat = answer(recorded([{"type": "text", "text": "x"}], stop_reason))
    assert chat["choices"][0]["finish_reason"] == finish


def test_cached_tokens_are_reported_as_openai_does() -> None:
    chat = answer(recorded([{"type": "text", "text": "x"}], cache_read_input_tokens=100),
                  usage=Usage(125, 9, cached_tokens=100))
    assert chat["usage"] == {"prompt_tokens": 125, "completion_tokens": 9,
                             "total_tokens": 134, "prompt_tokens_details": {"cached_tokens": 100}}


@pytest.mark.parametrize(("message", "problem"), [
    ({"content": "text"}, "content is not an array"),
    ({"content": [{"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}]},
     "'server_tool_use'"),
])
def test_answers_that_cannot_be_a_chat_completion(message: dict[str, Any],
                                                  problem: str) -> None:
    with pytest.raises(BadAnswer, match=problem):
        chat_answer(message, usage=Usage(), sent={}, now=0.0)


def test_a_json_response_format_becomes_a_system_instruction() -> None:
    """Anthropic has no response format: the schema is asked for in the system prompt,
    and Relay checks the answer itself (output_check)."""
    schema = {"type": "object", "required": ["a"]}
    sent = messages_request({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                       "response_format": {"type": "json_schema",
                                           "json_schema": {"name": "x", "schema": schema}}},
                      MODEL)
    assert "response_format" not in sent
    assert sent["system"] == ('Answer with only a JSON value, no other text, that is valid '
                              'against this JSON Schema: {"type":"object","required":["a"]}')
    loose = messages_request({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                        "response_format": {"type": "json_object"}}, MODEL)
    assert loose["system"] == "Answer with only a JSON object, and no other text."
