"""The simulator's `POST /v1/messages`: Anthropic's request checks and `Message` shapes,
tool_use turns, and the chat route's faults, usage directives and limits in Anthropic's
envelopes and headers."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

from daemon.simulator.apis import anthropic_error, anthropic_rate_headers, rfc3339
from daemon.simulator.content import BadRequest, finish
from daemon.simulator.limits import Quota
from daemon.simulator.messages import parse_messages
from daemon.simulator.tools import tool_call_id
from tests.unit.simulated import answer_json, post_json

HEADERS = {"x-api-key": "sk-sim", "anthropic-version": "2023-06-01"}
WEATHER = {"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {
               "city": {"type": "string"}, "days": {"type": "integer"}},
               "required": ["city"]}}


def request(prompt: str | list[dict[str, Any]] = "Hello there", **fields: Any) -> dict[str, Any]:
    return {"model": "sim-small", "max_tokens": 256,
            "messages": [{"role": "user", "content": prompt}]} | fields


async def post(client: TestClient, body: dict[str, Any], *,
               headers: dict[str, str] = HEADERS) -> aiohttp.ClientResponse:
    return await post_json(client, "/v1/messages", body, headers=headers)


async def answer(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    return await answer_json(client, "/v1/messages", body, headers=HEADERS)


async def error_of(client: TestClient, body: dict[str, Any]) -> tuple[int, str, str]:
    resp = await post(client, body)
    envelope = await resp.json()
    assert envelope["type"] == "error" and set(envelope["error"]) == {"type", "message"}
    return resp.status, envelope["error"]["type"], envelope["error"]["message"]


# --- stop reasons (pure) ------------------------------------------------------------


@pytest.mark.parametrize(("max_tokens", "stops", "expected"), [
    (100, (), ("one two three four", "end_turn", None)),
    (2, (), ("one two", "max_tokens", None)),
    (100, ("three",), ("one two ", "stop_sequence", "three")),
    (100, ("four", "two"), ("one ", "stop_sequence", "two")),  # the earliest in the text
    (1, ("three",), ("one", "max_tokens", None)),  # the budget runs out first
    (2, ("three",), ("one two ", "stop_sequence", "three")),
    (100, ("", "absent"), ("one two three four", "end_turn", None)),
])
def test_an_answer_stops_at_a_stop_sequence_or_after_max_tokens_words(
        max_tokens: int, stops: tuple[str, ...], expected: tuple[str, str, str | None]) -> None:
    assert finish("one two three four", max_tokens=max_tokens, stop_sequences=stops) == expected


# --- reading requests (pure) --------------------------------------------------------


def test_system_blocks_and_tool_results_are_inputs_and_the_prompt_is_the_last_user_turn(
        ) -> None:
    call = parse_messages(request(
        [{"type": "text", "text": "Second question"}],
        system=[{"type": "text", "text": "Be brief."}],
        messages=[{"role": "user", "content": "First question"},
                  {"role": "assistant", "content": [{"type": "text", "text": "An answer"}]},
                  {"role": "user", "content": [{"type": "text", "text": "Second question"}]}]))
    assert (call.endpoint, call.model, call.prompt, call.max_tokens) == (
        "messages", "sim-small", "Second question", 256)
    assert call.inputs == ("Be brief.", "First question", "An answer", "Second question")
    assert call.tooling is None


@pytest.mark.parametrize(("change", "field"), [
    ({"model": None}, "model"),
    ({"max_tokens": None}, "max_tokens"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": True}, "max_tokens"),
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "system", "content": "x"}]}, "messages.0.role"),
    ({"messages": [{"role": "user", "content": 7}]}, "messages.0.content"),
    ({"messages": [{"role": "user", "content": [{"type": "text"}]}]}, "messages.0.content.0.text"),
    ({"system": 3}, "system"),
    ({"temperature": 1.5}, "temperature"),
    ({"stop_sequences": "END"}, "stop_sequences"),
    ({"stream": True}, "stream"),
    ({"openrelay": {"tools": []}}, "openrelay"),
    ({"tools": [{"name": "x"}]}, "tools.0"),
    ({"tools": [WEATHER], "tool_choice": {"type": "tool", "name": "nope"}}, "tool_choice.name"),
    ({"tools": [WEATHER], "tool_choice": "auto"}, "tool_choice.type"),
])
def test_a_bad_request_is_refused_naming_its_field(change: dict[str, Any], field: str) -> None:
    body = {k: v for k, v in (request() | change).items() if v is not None}
    with pytest.raises(BadRequest) as refused:
        parse_messages(body)
    assert refused.value.message.startswith(f"{field}:"), refused.value.message


def test_tool_use_must_be_answered_by_the_next_message_and_results_must_answer_one() -> None:
    use = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}]}
    with pytest.raises(BadRequest, match=r"messages\.1: .* without `tool_result` blocks.*toolu_1"):
        parse_messages(request(messages=[{"role": "user", "content": "Hi"}, use,
                                         {"role": "user", "content": "Well?"}]))
    stray = {"role": "user", "content": [
        {"type": "text", "text": "Here:"},
        {"type": "tool_result", "tool_use_id": "toolu_9", "content": "sunny"}]}
    with pytest.raises(BadRequest, match=r"messages\.2\.content\.1: unexpected `tool_use_id`"):
        parse_messages(request(messages=[{"role": "user", "content": "Hi"}, use, stray]))


# --- envelopes and headers (pure) ---------------------------------------------------


@pytest.mark.parametrize(("status", "kind"), [
    (400, "invalid_request_error"), (401, "authentication_error"), (403, "permission_error"),
    (404, "not_found_error"), (413, "request_too_large"), (422, "invalid_request_error"),
    (429, "rate_limit_error"), (500, "api_error"), (503, "api_error"),
    (504, "timeout_error"), (529, "overloaded_error"),
])
def test_anthropic_error_types_follow_the_status(status: int, kind: str) -> None:
    assert anthropic_error(status, "why", "param", "code") == {
        "type": "error", "error": {"type": kind, "message": "why"}}


def test_anthropic_rate_headers_reset_at_an_rfc3339_instant() -> None:
    wall = 1_800_000_000.0
    headers = anthropic_rate_headers([Quota("requests", 600, 9, 0.1),
                                      Quota("tokens", 6000, 70, 0.3)], wall)
    assert headers == {
        "anthropic-ratelimit-requests-limit": "600",
        "anthropic-ratelimit-requests-remaining": "9",
        "anthropic-ratelimit-requests-reset": rfc3339(wall + 0.1),
        "anthropic-ratelimit-tokens-limit": "6000",
        "anthropic-ratelimit-tokens-remaining": "70",
        "anthropic-ratelimit-tokens-reset": rfc3339(wall + 0.3)}
    assert rfc3339(wall + 0.1) == "2027-01-15T08:00:00.100Z"
    assert rfc3339(wall + 0.0001) == "2027-01-15T08:00:00.001Z"  # rounded up


# --- the route -----------------------------------------------------------------------


async def test_a_text_answer_is_a_message(make_sim: Any) -> None:
    client = await make_sim()
    message = await answer(client, request("Hello there, simulator", system="Be brief."))
    assert message == {
        "id": message["id"], "type": "message", "role": "assistant", "model": "sim-small",
        "content": [{"type": "text", "text": "Simulated reply (sim-small): Hello there, "
                                             "simulator"}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 6, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0}}
    assert message["id"].startswith("msg_")
    again = await answer(client, request("Hello there, simulator"))
    assert again["id"] != message["id"]


async def test_block_content_classifies_as_chat_does(make_sim: Any) -> None:
    client = await make_sim()
    message = await answer(client, request(
        [{"type": "text", "text": "Classify the sentiment:"},
         {"type": "text", "text": "I love it, works great"}]))
    assert message["content"] == [{"type": "text", "text": "positive"}]


async def test_stop_sequences_and_max_tokens_end_the_answer(make_sim: Any) -> None:
    client = await make_sim()
    stopped = await answer(client, request("alpha beta gamma", stop_sequences=["beta"]))
    assert (stopped["content"][0]["text"], stopped["stop_reason"], stopped["stop_sequence"]
            ) == ("Simulated reply (sim-small): alpha ", "stop_sequence", "beta")
    cut = await answer(client, request("alpha beta gamma", max_tokens=2))
    assert (cut["content"][0]["text"], cut["stop_reason"], cut["usage"]["output_tokens"]
            ) == ("Simulated reply", "max_tokens", 2)


async def test_tools_get_a_tool_use_turn_then_the_final_answer(make_sim: Any) -> None:
    client = await make_sim()
    prompt = "Weather in Paris?"
    first = await answer(client, request(prompt, tools=[WEATHER]))
    call_id = tool_call_id(prompt, 1, 0, prefix="toolu_")
    assert first["content"] == [{"type": "tool_use", "id": call_id, "name": "get_weather",
                                 "input": {"city": prompt, "days": 1}}]
    assert (first["stop_reason"], first["stop_sequence"]) == ("tool_use", None)
    messages = [{"role": "user", "content": prompt},
                {"role": "assistant", "content": first["content"]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id,
                                              "content": [{"type": "text", "text": "sunny"}]}]}]
    final = await answer(client, request(tools=[WEATHER], messages=messages))
    assert final["content"] == [{"type": "text", "text": "Tool results: sunny"}]
    assert final["stop_reason"] == "end_turn"


async def test_tool_use_ids_are_the_chat_route_s_under_anthropic_s_prefix(make_sim: Any) -> None:
    client = await make_sim()
    prompt = "Twice [sim:tool_calls=2]"
    message = await answer(client, request(prompt, tools=[WEATHER]))
    chat = await client.post("/v1/chat/completions", json={
        "model": "sim-small", "messages": [{"role": "user", "content": prompt}],
        "tools": [{"type": "function", "function": {
            "name": WEATHER["name"], "parameters": WEATHER["input_schema"]}}]})
    calls = (await chat.json())["choices"][0]["message"]["tool_calls"]
    assert [b["id"] for b in message["content"]] == [
        c["id"].replace("call_", "toolu_") for c in calls]
    assert message["usage"]["output_tokens"] == (await chat.json())["usage"]["completion_tokens"]


@pytest.mark.parametrize(("extra", "blocks"), [
    ({"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}, ["tool_use"]),
    ({"tool_choice": {"type": "any"}}, ["tool_use", "tool_use"]),
    ({"tool_choice": {"type": "none"}}, ["text"]),
])
async def test_tool_choice_acts_as_on_chat(make_sim: Any, extra: dict[str, Any],
                                           blocks: list[str]) -> None:
    client = await make_sim()
    message = await answer(client, request("Go [sim:tool_calls=2]", tools=[WEATHER], **extra))
    assert [b["type"] for b in message["content"]] == blocks


async def test_a_forced_tool_and_bad_arguments(make_sim: Any) -> None:
    client = await make_sim()
    other = {"name": "lookup", "input_schema": {"type": "object"}}
    message = await answer(client, request(
        "Look it up [sim:tool_bad_args]", tools=[WEATHER, other],
        tool_choice={"type": "tool", "name": "lookup"}))
    assert [(b["name"], b["input"]) for b in message["content"]] == [("lookup", {})]


async def test_anthropic_version_is_required_the_key_is_not_checked(make_sim: Any) -> None:
    client = await make_sim()
    resp = await post(client, request(), headers={"x-api-key": "sk-sim"})
    assert resp.status == 400
    assert await resp.json() == {"type": "error", "error": {
        "type": "invalid_request_error", "message": "anthropic-version: header is required"}}
    assert (await post(client, request(), headers={"anthropic-version": "2023-06-01"})
            ).status == 200


async def test_a_bad_body_is_refused_in_anthropic_s_envelope(make_sim: Any) -> None:
    client = await make_sim()
    assert await error_of(client, {"model": "sim-small", "messages": []}) == (
        400, "invalid_request_error", "max_tokens: Field required")
    resp = await client.post("/v1/messages", data=b"nope", headers=HEADERS)
    assert (resp.status, (await resp.json())["error"]["type"]) == (400, "invalid_request_error")
    status, kind, message = await error_of(client, request("Hi [sim:bogus]"))
    assert (status, kind) == (400, "invalid_request_error") and "bogus" in message


@pytest.mark.parametrize(("code", "kind"), [
    (401, "authentication_error"), (404, "not_found_error"), (429, "rate_limit_error"),
    (500, "api_error"), (503, "api_error"), (529, "overloaded_error"),
])
async def test_fail_markers_answer_anthropic_s_statuses_and_types(
        make_sim: Any, code: int, kind: str) -> None:
    client = await make_sim(retry_after_s=2)
    resp = await post(client, request(f"Hi [sim:fail={code} times=1]"))
    envelope = await resp.json()
    assert (resp.status, envelope["error"]["type"]) == (code, kind)
    assert envelope["error"]["message"].startswith("SIMULATED upstream failure")
    assert resp.headers.get("Retry-After") == ("2" if code == 429 else None)
    assert (await post(client, request(f"Hi [sim:fail={code} times=1]"))).status == 200


async def test_the_usage_marker_reports_anthropic_s_counts(make_sim: Any) -> None:
    client = await make_sim()
    message = await answer(client, request("Hi [sim:prompt_tokens=-5 completion_tokens=9]"))
    assert (message["usage"]["input_tokens"], message["usage"]["output_tokens"]) == (-5, 9)
    only = await answer(client, request("Hi [sim:completion_tokens=7]"))
    assert (only["usage"]["input_tokens"], only["usage"]["output_tokens"]) == (2, 7)


async def test_rpm_limits_answer_429_with_anthropic_s_headers(make_sim: Any) -> None:
    client = await make_sim(rpm=60)  # one a second, one of burst
    served = await post(client, request())
    assert served.headers["anthropic-ratelimit-requests-limit"] == "60"
    assert served.headers["anthropic-ratelimit-requests-reset"].endswith("Z")
    assert not any(h.lower().startswith("x-ratelimit") for h in served.headers)
    refused = await post(client, request())
    assert (await refused.json())["error"]["type"] == "rate_limit_error"


async def test_the_request_log_names_the_route(make_sim: Any) -> None:
    client = await make_sim()
    await post(client, request("logged"))
    await post(client, {"model": "sim-small"})
    data = (await (await client.get("/_sim/requests")).json())["data"]
    assert [(r["path"], r["model"], r["prompt"], r["status"]) for r in data] == [
        ("/v1/messages", "sim-small", "logged", 200), ("/v1/messages", None, "", 400)]


async def test_other_paths_under_messages_are_anthropic_s_404(make_sim: Any) -> None:
    client = await make_sim()
    resp = await client.get("/v1/messages/batches", headers=HEADERS)
    envelope = await resp.json()
    assert (resp.status, envelope["type"], envelope["error"]["type"]) == (
        404, "error", "not_found_error")
