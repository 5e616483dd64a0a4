"""The official `anthropic` SDK, unmodified, against a real `relayd simulate` process:
`messages.create` reads the simulator's `Message` (text and tool_use) into its types, and
a fault marker raises the SDK's typed error."""

from __future__ import annotations

import json

import anthropic
import pytest
from anthropic.types import Message, MessageParam, TextBlock, ToolParam, ToolUseBlock

from tests.e2e.harness import Simulator

pytestmark = pytest.mark.e2e

WEATHER: ToolParam = {"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}


@pytest.fixture
def client(sdk_simulator: Simulator) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sdk_simulator.root, api_key="sk-sim", max_retries=0,
                               timeout=10)


def test_a_text_answer_reads_as_the_sdk_s_message(client: anthropic.Anthropic) -> None:
    message = client.messages.create(
        model="sim-small", max_tokens=64, system="Be brief.",
        messages=[{"role": "user", "content": "Classify the sentiment: I love it"}])
    assert isinstance(message, Message) and message.id.startswith("msg_")
    assert (message.type, message.role, message.model) == ("message", "assistant", "sim-small")
    assert message.content == [TextBlock(type="text", text="positive")]
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)
    assert (message.usage.input_tokens, message.usage.output_tokens) == (8, 1)


def test_stop_sequences_and_the_usage_marker(client: anthropic.Anthropic) -> None:
    message = client.messages.create(
        model="sim-large", max_tokens=64, stop_sequences=["beta"],
        messages=[{"role": "user",
                   "content": [{"type": "text", "text": "alpha beta [sim:completion_tokens=42]"}]}])
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "beta")
    assert message.usage.output_tokens == 42


def test_a_tool_use_turn_and_its_result(client: anthropic.Anthropic) -> None:
    prompt: MessageParam = {"role": "user", "content": "Weather in Paris?"}
    first = client.messages.create(model="sim-small", max_tokens=64, tools=[WEATHER],
                                   messages=[prompt])
    assert first.stop_reason == "tool_use"
    [use] = first.content
    assert isinstance(use, ToolUseBlock) and use.id.startswith("toolu_")
    assert (use.name, use.input) == ("get_weather", {"city": "Weather in Paris?"})
    final = client.messages.create(
        model="sim-small", max_tokens=64, tools=[WEATHER],
        messages=[prompt, {"role": "assistant", "content": first.content},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                                "content": "sunny, 21 C"}]}])
    assert final.stop_reason == "end_turn"
    assert final.content == [TextBlock(type="text", text="Tool results: sunny, 21 C")]


@pytest.mark.parametrize(("marker", "error", "kind"), [
    ("[sim:fail=529]", anthropic.OverloadedError, "overloaded_error"),
    ("[sim:fail=503]", anthropic.InternalServerError, "api_error"),
    ("[sim:fail=429]", anthropic.RateLimitError, "rate_limit_error"),
    ("[sim:fail=401]", anthropic.AuthenticationError, "authentication_error"),
    ("[sim:fail=404]", anthropic.NotFoundError, "not_found_error"),
    ("[sim:bogus]", anthropic.BadRequestError, "invalid_request_error"),
])
def test_a_fault_marker_raises_the_sdk_s_typed_error(
        client: anthropic.Anthropic, marker: str, error: type[anthropic.APIStatusError],
        kind: str) -> None:
    with pytest.raises(error) as raised:
        client.messages.create(model="sim-small", max_tokens=16,
                               messages=[{"role": "user", "content": f"Hi {marker}"}])
    assert raised.value.body == {"type": "error", "error": {
        "type": kind, "message": raised.value.body["error"]["message"]}}  # type: ignore[index]
    assert raised.value.response.headers["x-relay-simulated"] == "true"


def test_the_sdk_reads_the_rate_limit_headers(client: anthropic.Anthropic) -> None:
    raw = client.messages.with_raw_response.create(
        model="sim-small", max_tokens=16, messages=[{"role": "user", "content": "Hi"}])
    assert raw.headers["anthropic-ratelimit-requests-limit"] == "6000"
    assert int(raw.headers["anthropic-ratelimit-requests-remaining"]) >= 0
    assert isinstance(raw.parse(), Message)


def test_garbage_is_a_200_the_sdk_cannot_read(client: anthropic.Anthropic) -> None:
    with pytest.raises(json.JSONDecodeError):
        client.messages.create(model="sim-small", max_tokens=16,
                               messages=[{"role": "user", "content": "Hi [sim:garbage]"}])
