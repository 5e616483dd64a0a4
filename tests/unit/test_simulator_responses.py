"""The simulator's `POST /v1/responses`: the Responses API's request checks and
`Response` shapes (each answer read by the `openai` SDK's own type), `function_call`
turns, and the chat route's faults, usage directives and limits in OpenAI's envelope."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient
from openai.types.responses import Response

from daemon.simulator.content import BadRequest
from daemon.simulator.responses import parse_responses
from daemon.simulator.tools import tool_call_id
from tests.unit.simulated import answer_json, post_json

WEATHER = {"type": "function", "name": "get_weather", "description": "The weather in a city.",
           "parameters": {"type": "object", "properties": {
               "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}


def request(prompt: str | list[dict[str, Any]] = "Hello there", **fields: Any) -> dict[str, Any]:
    return {"model": "sim-small", "input": prompt} | fields


async def post(client: TestClient, body: dict[str, Any]) -> aiohttp.ClientResponse:
    return await post_json(client, "/v1/responses", body)


async def answer(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    """A 200's body, after the SDK's `Response` has read it."""
    data = await answer_json(client, "/v1/responses", body)
    Response.model_validate(data)
    return data


def text_of(response: dict[str, Any]) -> str:
    return str(Response.model_validate(response).output_text)


# --- reading requests (pure) --------------------------------------------------------


def test_a_string_input_is_one_user_message_and_instructions_are_inputs() -> None:
    call = parse_responses(request("Say hi", instructions="Be brief."))
    assert (call.endpoint, call.model, call.prompt, call.inputs) == (
        "responses", "sim-small", "Say hi", ("Be brief.", "Say hi"))
    assert call.tooling is None and call.max_tokens is None
    assert call.echo["tool_choice"] == "auto" and call.echo["text"] == {
        "format": {"type": "text"}, "verbosity": "medium"}


def test_items_are_read_with_their_text_and_the_prompt_is_the_last_user_message() -> None:
    call = parse_responses(request([
        {"role": "developer", "content": "Answer in French."},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "First"},
            {"type": "input_image", "image_url": "https://example.test/a.png"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Premier",
                                           "annotations": []}]},
        {"role": "user", "content": "Second"}]))
    assert call.prompt == "Second"
    assert call.inputs == ("", "Answer in French.", "First", "Premier", "Second")


@pytest.mark.parametrize(("change", "param"), [
    ({"model": None}, "model"),
    ({"input": None}, "input"),
    ({"input": []}, "input"),
    ({"input": {"role": "user"}}, "input"),
    ({"input": [{"role": "tool", "content": "x"}]}, "input[0].role"),
    ({"input": [{"role": "user", "content": 7}]}, "input[0].content"),
    ({"input": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]},
     "input[0].content[0].type"),
    ({"input": [{"role": "user", "content": [{"type": "input_text"}]}]},
     "input[0].content[0].text"),
    ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type"),
    ({"input": [{"type": "function_call", "call_id": "c", "name": "f"}]},
     "input[0].arguments"),
    ({"instructions": 3}, "instructions"),
    ({"tools": [{"type": "web_search"}]}, "tools[0]"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "name": "nope"}}, "tool_choice"),
    ({"tool_choice": {"type": "function", "name": "get_weather"}}, "tool_choice"),
    ({"tool_choice": 5}, "tool_choice"),
    ({"text": {"format": {"type": "yaml"}}}, "text.format.type"),
    ({"text": {"format": {"type": "json_schema", "name": "x"}}}, "text.format"),
    ({"text": {"verbosity": "loud"}}, "text.verbosity"),
    ({"reasoning": {"effort": "extreme"}}, "reasoning"),
    ({"metadata": {"a": 1}}, "metadata"),
    ({"temperature": 2.5}, "temperature"),
    ({"top_p": True}, "top_p"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"parallel_tool_calls": "yes"}, "parallel_tool_calls"),
    ({"stream": True}, "stream"),
    ({"background": True}, "background"),
    ({"previous_response_id": "resp_1"}, "previous_response_id"),
    ({"conversation": "conv_1"}, "conversation"),
    ({"openrelay": {}}, "openrelay"),
])
def test_a_bad_request_is_refused_naming_its_field(change: dict[str, Any], param: str) -> None:
    body = {k: v for k, v in (request() | change).items() if v is not None}
    with pytest.raises(BadRequest) as refused:
        parse_responses(body)
    assert refused.value.param == param, refused.value.message


def test_every_call_needs_an_output_and_every_output_a_call() -> None:
    call = {"type": "function_call", "call_id": "call_1", "name": "get_weather",
            "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}
    with pytest.raises(BadRequest, match="No tool output found for function call call_1"):
        parse_responses(request([{"role": "user", "content": "Hi"}, call], tools=[WEATHER]))
    with pytest.raises(BadRequest, match=r"No tool call found .* call_id call_1") as refused:
        parse_responses(request([{"role": "user", "content": "Hi"}, output]))
    assert refused.value.param == "input[1].call_id"
    read = parse_responses(request([{"role": "user", "content": "Hi"}, call, output,
                                    call | {"call_id": "call_2"},
                                    output | {"call_id": "call_2", "output": [
                                        {"type": "input_text", "text": "rainy"}]}]))
    assert read.tooling is not None
    assert (read.tooling.rounds_done, read.tooling.results) == (2, ("sunny", "rainy"))


# --- answers ------------------------------------------------------------------------


async def test_a_text_answer_is_a_response_the_sdk_reads(make_sim: Any) -> None:
    client = await make_sim()
    resp = await post(client, request("Say hello to the world", instructions="Be brief.",
                                      metadata={"run": "7"}, temperature=0.2))
    assert resp.status == 200 and resp.headers["X-Relay-Simulated"] == "true"
    body = await resp.json()
    response = Response.model_validate(body)
    assert response.id.startswith("resp_") and response.object == "response"
    assert (response.status, response.model, response.completed_at) == (
        "completed", "sim-small", response.created_at)
    [message] = body["output"]
    assert message["id"].startswith("msg_") and (message["role"], message["status"]) == (
        "assistant", "completed")
    assert message["content"] == [{"type": "output_text", "annotations": [], "logprobs": [],
                                   "text": "Simulated reply (sim-small): Say hello to the world"}]
    assert (response.instructions, response.metadata, response.temperature, response.top_p) == (
        "Be brief.", {"run": "7"}, 0.2, 1.0)
    assert (response.incomplete_details, response.error, response.tools) == (None, None, [])
    assert body["usage"] == {"input_tokens": 7, "output_tokens": 8, "total_tokens": 15,
                             "input_tokens_details": {"cached_tokens": 0,
                                                      "cache_write_tokens": 0},
                             "output_tokens_details": {"reasoning_tokens": 0}}


async def test_instructions_that_ask_to_classify_get_a_label(make_sim: Any) -> None:
    client = await make_sim()
    body = await answer(client, request([{"role": "user", "content": [
        {"type": "input_text", "text": "Awful. It cracked on day one."}]}],
        instructions="Classify the sentiment of the review."))
    assert text_of(body) == "negative"


async def test_max_output_tokens_cuts_the_answer_and_marks_it_incomplete(
        make_sim: Any) -> None:
    client = await make_sim()
    body = await answer(client, request("Say hello to the world", max_output_tokens=3))
    assert (body["status"], body["incomplete_details"], body["completed_at"]) == (
        "incomplete", {"reason": "max_output_tokens"}, None)
    assert body["output"][0]["status"] == "incomplete"
    assert text_of(body) == "Simulated reply (sim-small):"
    assert (body["max_output_tokens"], body["usage"]["output_tokens"]) == (3, 3)


async def test_a_json_schema_format_gets_json_that_fits(make_sim: Any) -> None:
    client = await make_sim()
    schema = {"type": "object", "properties": {
        "label": {"type": "string"}, "confidence": {"type": "number"},
        "tone": {"enum": ["calm", "angry"]}}, "required": ["label"]}
    text_format = {"type": "json_schema", "name": "verdict", "schema": schema, "strict": True}
    body = await answer(client, request("Classify the sentiment: I love it",
                                        text={"format": text_format}))
    assert json.loads(text_of(body)) == {"label": "positive", "confidence": 1, "tone": "calm"}
    assert body["text"] == {"format": text_format, "verbosity": "medium"}


# --- function calls -----------------------------------------------------------------


async def test_a_function_call_turn_then_the_answer_quoting_its_output(make_sim: Any) -> None:
    client = await make_sim()
    prompt = [{"role": "user", "content": "Weather in Paris?"}]
    first = await answer(client, request(prompt, tools=[WEATHER]))
    [call] = first["output"]
    call_id = tool_call_id("Weather in Paris?", 1, 0)
    assert call == {"type": "function_call", "id": "fc_" + call_id.removeprefix("call_"),
                    "call_id": call_id, "name": "get_weather", "status": "completed",
                    "arguments": json.dumps({"city": "Weather in Paris?", "days": 1})}
    assert first["status"] == "completed" and first["usage"]["output_tokens"] > 0
    assert first["tools"] == [WEATHER | {"strict": True}]
    output = {"type": "function_call_output", "call_id": call_id, "output": "sunny, 21 C"}
    final = await answer(client, request([*prompt, call, output], tools=[WEATHER]))
    assert text_of(final) == "Tool results: sunny, 21 C"
    assert final["output"][0]["type"] == "message"


async def test_tool_rounds_and_parallel_calls_as_on_chat(make_sim: Any) -> None:
    client = await make_sim()
    prompt = "Go [sim:tool_rounds=2 tool_calls=3]"
    items: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for round_ in (1, 2):
        calls = (await answer(client, request(items, tools=[WEATHER])))["output"]
        assert [c["call_id"] for c in calls] == [
            tool_call_id(prompt, round_, i) for i in range(3)]
        items += [*calls, *({"type": "function_call_output", "call_id": c["call_id"],
                             "output": f"r{round_}"} for c in calls)]
    final = await answer(client, request(items, tools=[WEATHER]))
    assert text_of(final) == "Tool results: r1 | r1 | r1 | r2 | r2 | r2"
    one = await answer(client, request("Go [sim:tool_calls=3]", tools=[WEATHER],
                                       parallel_tool_calls=False))
    assert len(one["output"]) == 1 and one["parallel_tool_calls"] is False


@pytest.mark.parametrize(("extra", "kinds"), [
    ({}, ["function_call"]),
    ({"tool_choice": "required"}, ["function_call"]),
    ({"tool_choice": "none"}, ["message"]),
])
async def test_tool_choice(make_sim: Any, extra: dict[str, Any], kinds: list[str]) -> None:
    client = await make_sim()
    body = await answer(client, request("Go", tools=[WEATHER], **extra))
    assert [item["type"] for item in body["output"]] == kinds
    assert body["tool_choice"] == extra.get("tool_choice", "auto")


async def test_a_forced_function_and_bad_arguments(make_sim: Any) -> None:
    client = await make_sim()
    other = {"type": "function", "name": "lookup", "parameters": {"type": "object"}}
    body = await answer(client, request("Look it up [sim:tool_bad_args]",
                                        tools=[WEATHER, other],
                                        tool_choice={"type": "function", "name": "lookup"}))
    [call] = body["output"]
    assert call["name"] == "lookup"
    with pytest.raises(json.JSONDecodeError):
        json.loads(call["arguments"])


# --- faults, usage, limits ----------------------------------------------------------


@pytest.mark.parametrize(("code", "kind"), [
    (400, "invalid_request_error"), (429, "requests"), (500, "server_error"),
    (503, "server_error")])
async def test_fail_markers_answer_in_openai_s_envelope(make_sim: Any, code: int,
                                                      kind: str) -> None:
    resp = await post(await make_sim(), request(f"Hi [sim:fail={code}]"))
    error = (await resp.json())["error"]
    assert (resp.status, error["type"], error["param"]) == (code, kind, None)
    assert error["message"].startswith("SIMULATED upstream failure")
    assert error["code"] == ("rate_limit_exceeded" if code == 429 else None)


async def test_a_bad_directive_is_refused_naming_input(make_sim: Any) -> None:
    client = await make_sim()
    resp = await post(client, request("Hi [sim:bogus]"))
    error = (await resp.json())["error"]
    assert (resp.status, error["param"]) == (400, "input") and "bogus" in error["message"]


async def test_the_usage_marker_reports_the_responses_counts(make_sim: Any) -> None:
    client = await make_sim()
    body = await answer(client, request("Hi [sim:prompt_tokens=-5 completion_tokens=9]"))
    usage = body["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (-5, 9, 4)
    assert "prompt_tokens" not in usage


async def test_the_request_log_and_other_paths(make_sim: Any) -> None:
    client = await make_sim()
    await post(client, request("logged"))
    data = (await (await client.get("/_sim/requests")).json())["data"]
    assert [(r["path"], r["model"], r["prompt"], r["status"]) for r in data] == [
        ("/v1/responses", "sim-small", "logged", 200)]
    stored = await client.get("/v1/responses/resp_sim000000000001")
    assert stored.status == 404
    assert (await stored.json())["error"]["type"] == "invalid_request_error"
