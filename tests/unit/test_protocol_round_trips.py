"""Both translations together: a request or an answer taken to the other protocol and back
is the one it was (on recorded shapes with tool use and images), usage included."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.config import ModelConfig
from daemon.domain.usage import read_message_usage, read_usage
from daemon.upstream import anthropic_to_openai as to_openai
from daemon.upstream import openai_to_anthropic as to_anthropic

GPT = ModelConfig(alias="gpt", base_url="http://upstream/v1", model="m")
CLAUDE = ModelConfig(alias="claude", base_url="http://upstream", model="m", api="anthropic")
PNG = "iVBORw0KGgo="
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}

MESSAGES_REQUESTS = [
    {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}]},
    {"model": "m", "max_tokens": 300, "system": "Be brief.", "temperature": 0.3, "top_p": 0.8,
     "stop_sequences": ["END"], "metadata": {"user_id": "u-1"},
     "tools": [{"name": "weather", "description": "Weather", "input_schema": SCHEMA}],
     "tool_choice": {"type": "tool", "name": "weather", "disable_parallel_tool_use": True},
     "messages": [
         {"role": "user", "content": [
             {"type": "text", "text": "Here?"},
             {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                          "data": PNG}},
             {"type": "image", "source": {"type": "url", "url": "https://x.test/a.jpg"}}]},
         {"role": "assistant", "content": [
             {"type": "text", "text": "Checking."},
             {"type": "tool_use", "id": "toolu_1", "name": "weather",
              "input": {"city": "Oslo"}}]},
         {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_1", "content": "-3 C"}]},
         {"role": "assistant", "content": "Cold"}]},
]

CHAT_REQUESTS = [
    {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}]},
    {"model": "m", "max_tokens": 300, "temperature": 0.3, "stop": ["END"], "user": "u-1",
     "tools": [{"type": "function", "function": {"name": "weather", "parameters": SCHEMA}}],
     "tool_choice": "required", "parallel_tool_calls": False,
     "messages": [
         {"role": "system", "content": "Be brief."},
         {"role": "user", "content": [
             {"type": "text", "text": "Here?"},
             {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{PNG}"}}]},
         {"role": "assistant", "content": None, "tool_calls": [
             {"id": "call_1", "type": "function",
              "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]},
         {"role": "tool", "tool_call_id": "call_1", "content": "-3 C"},
         {"role": "assistant", "content": "Cold"}]},
]


@pytest.mark.parametrize("params", MESSAGES_REQUESTS)
def test_a_messages_request_there_and_back(params: dict[str, Any]) -> None:
    chat = to_openai.chat_request(params, GPT)
    assert to_anthropic.messages_request(chat, CLAUDE) == params


@pytest.mark.parametrize("body", CHAT_REQUESTS)
def test_a_chat_request_there_and_back(body: dict[str, Any]) -> None:
    params = to_anthropic.messages_request(body, CLAUDE)
    assert to_openai.chat_request(params, GPT) == body


MESSAGES = [
    {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
     "content": [{"type": "text", "text": "Hi"}], "stop_reason": "end_turn",
     "stop_sequence": None, "usage": {"input_tokens": 5, "cache_creation_input_tokens": 0,
                                      "cache_read_input_tokens": 0, "output_tokens": 2}},
    {"id": "msg_2", "type": "message", "role": "assistant", "model": "m",
     "content": [{"type": "text", "text": "Let me look."},
                 {"type": "tool_use", "id": "toolu_1", "name": "weather",
                  "input": {"city": "Oslo"}}],
     "stop_reason": "tool_use", "stop_sequence": None,
     "usage": {"input_tokens": 40, "cache_creation_input_tokens": 0,
               "cache_read_input_tokens": 60, "output_tokens": 12}},
    {"id": "msg_3", "type": "message", "role": "assistant", "model": "m",
     "content": [{"type": "text", "text": "Cut"}], "stop_reason": "max_tokens",
     "stop_sequence": None, "usage": {"input_tokens": 5, "cache_creation_input_tokens": 0,
                                      "cache_read_input_tokens": 0, "output_tokens": 1}},
]


@pytest.mark.parametrize("message", MESSAGES)
def test_a_message_there_and_back(message: dict[str, Any]) -> None:
    sent = {"model": "m"}
    usage = read_message_usage(message)
    chat = to_anthropic.chat_answer(message, usage=usage, sent=sent, now=0.0)
    assert read_usage(chat) == usage
    back = to_openai.message_answer(chat, usage=read_usage(chat), sent=sent, now=0.0)
    assert back == message | {"id": back["id"]}
    assert back["id"].startswith("msg_")
