"""The official `openai` SDK, unmodified, against a real `relayd simulate` process:
`responses.create` reads the simulator's `Response` (text, a `function_call` turn and the
follow-up that answers it) into its types, `moderations.create` its
`ModerationCreateResponse`, and a fault marker raises the SDK's typed error."""

from __future__ import annotations

import json
from collections.abc import Callable

import openai
import pytest
from openai.types import ModerationCreateResponse, ModerationMultiModalInputParam
from openai.types.responses import (
    FunctionToolParam,
    Response,
    ResponseFunctionToolCall,
    ResponseInputParam,
    ResponseOutputMessage,
)

from tests.e2e.harness import Simulator

pytestmark = pytest.mark.e2e

WEATHER: FunctionToolParam = {
    "type": "function", "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False},
    "strict": True}


@pytest.fixture
def client(sdk_simulator: Simulator) -> openai.OpenAI:
    return openai.OpenAI(base_url=sdk_simulator.base_url, api_key="sk-sim", max_retries=0,
                         timeout=10)


def test_a_text_answer_reads_as_the_sdk_s_response(client: openai.OpenAI) -> None:
    response = client.responses.create(model="sim-small", instructions="Classify the sentiment.",
                                       input="I love it", metadata={"batch": "b1"})
    assert isinstance(response, Response) and response.id.startswith("resp_")
    assert (response.object, response.status, response.model) == (
        "response", "completed", "sim-small")
    [message] = response.output
    assert isinstance(message, ResponseOutputMessage) and message.id.startswith("msg_")
    assert response.output_text == "positive"
    assert (response.instructions, response.metadata) == ("Classify the sentiment.",
                                                          {"batch": "b1"})
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens,
            response.usage.total_tokens) == (6, 1, 7)
    assert response.usage.input_tokens_details.cached_tokens == 0
    assert response.usage.output_tokens_details.reasoning_tokens == 0


def test_max_output_tokens_makes_it_incomplete(client: openai.OpenAI) -> None:
    response = client.responses.create(model="sim-large", input="one two three four five",
                                       max_output_tokens=2)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.output_text == "Simulated reply"


def test_a_function_call_turn_and_the_follow_up_with_its_output(
        client: openai.OpenAI) -> None:
    prompt: ResponseInputParam = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.responses.create(model="sim-small", input=prompt, tools=[WEATHER])
    [call] = first.output
    assert isinstance(call, ResponseFunctionToolCall) and call.call_id.startswith("call_")
    assert (call.name, json.loads(call.arguments)) == ("get_weather",
                                                       {"city": "Weather in Paris?"})
    follow_up: ResponseInputParam = [
        *prompt, {"type": "function_call", "call_id": call.call_id, "name": call.name,
                  "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 C"}]
    final = client.responses.create(model="sim-small", input=follow_up, tools=[WEATHER])
    assert final.status == "completed"
    assert final.output_text == "Tool results: sunny, 21 C"
    assert [t.name for t in final.tools if t.type == "function"] == ["get_weather"]


def test_an_unanswered_call_is_the_sdk_s_bad_request(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="sim-small", tools=[WEATHER], input=[
            {"role": "user", "content": "Hi"},
            {"type": "function_call", "call_id": "call_x", "name": "get_weather",
             "arguments": "{}"}])
    assert raised.value.param == "input[1]"


def test_moderations_read_as_the_sdk_s_types(client: openai.OpenAI) -> None:
    moderation = client.moderations.create(
        model="sim-moderation", input=["I hate them and will kill them", "A calm day"])
    assert isinstance(moderation, ModerationCreateResponse)
    assert moderation.id.startswith("modr-") and moderation.model == "sim-moderation"
    angry, calm = moderation.results
    assert (angry.flagged, calm.flagged) == (True, False)
    assert (angry.categories.hate, angry.categories.violence,
            angry.categories.hate_threatening) == (True, True, True)
    assert angry.category_scores.violence >= 0.5 > calm.category_scores.violence
    items: list[ModerationMultiModalInputParam] = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://example.test/a.png"}}]
    multimodal = client.moderations.create(input=items)
    [both] = multimodal.results
    assert both.category_applied_input_types.violence == ["text", "image"]
    assert multimodal.model == "omni-moderation-latest"


# Each marker's error in the SDK: (its class, the envelope's `type`).
FAULTS: dict[str, tuple[type[openai.APIStatusError], str]] = {
    "[sim:fail=503]": (openai.InternalServerError, "server_error"),
    "[sim:fail=429]": (openai.RateLimitError, "requests"),
    "[sim:fail=401]": (openai.AuthenticationError, "invalid_request_error"),
    "[sim:fail=404]": (openai.NotFoundError, "invalid_request_error"),
    "[sim:bogus]": (openai.BadRequestError, "invalid_request_error"),
}


def raised_by(create: Callable[[str], object], marker: str) -> tuple[type, str | None]:
    """What `create(prompt with marker)` raises: its class and envelope type."""
    with pytest.raises(openai.APIStatusError) as raised:
        create(f"Hi {marker}")
    assert raised.value.response.headers["x-relay-simulated"] == "true"
    return type(raised.value), raised.value.type


def test_fault_markers_raise_the_sdk_s_typed_errors(client: openai.OpenAI) -> None:
    def respond(prompt: str) -> object:
        return client.responses.create(model="sim-small", input=prompt)

    def moderate(prompt: str) -> object:
        return client.moderations.create(model="sim-moderation", input=prompt)

    for create in (respond, moderate):
        assert [raised_by(create, marker) for marker in FAULTS] == list(FAULTS.values())


def test_the_sdk_reads_the_rate_limit_headers(client: openai.OpenAI) -> None:
    raw = client.responses.with_raw_response.create(model="sim-small", input="Hi")
    assert raw.headers["x-ratelimit-limit-requests"] == "6000"
    assert int(raw.headers["x-ratelimit-remaining-requests"]) >= 0
    assert isinstance(raw.parse(), Response)
