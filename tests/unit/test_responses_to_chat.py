"""Responses API requests as chat completions and the chat answer as a `Response`
(`upstream/responses_to_chat.py`): what maps, what is refused, round trips; every
`Response` made is parsed by the openai SDK's own type."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from openai.types.responses import Response

from daemon.config import ModelConfig
from daemon.domain.outcome import Usage
from daemon.upstream.responses_to_chat import (
    chat_body,
    chat_request,
    response_answer,
    response_usage,
    responses_tool,
)
from daemon.upstream.untranslatable import MALFORMED, UNSUPPORTED, BadAnswer, Untranslatable

MODEL = ModelConfig(alias="main", base_url="http://x", model="up-main")
TOOL = {"type": "function", "name": "lookup", "description": "Find a thing",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        "strict": True}
CHAT_TOOL = {"type": "function", "function": {
    "name": "lookup", "description": "Find a thing", "strict": True,
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
USAGE = Usage(12, 5)
IMAGE = "data:image/png;base64,iVBORw0KGgo="


def request(**fields: Any) -> dict[str, Any]:
    return {"model": "main", "input": "hi"} | fields


def completion(content: str | None = "hello", *, finish: str = "stop",
               calls: list[dict[str, Any]] | None = None, **message: Any) -> dict[str, Any]:
    said: dict[str, Any] = {"role": "assistant", "content": content, **message}
    if calls:
        said["tool_calls"] = calls
    return {"id": "chatcmpl-7", "object": "chat.completion", "created": 1_700_000_000,
            "model": "up-main", "choices": [{"index": 0, "message": said,
                                             "finish_reason": finish}]}


def call(call_id: str = "call_1", name: str = "lookup",
         arguments: str = '{"q": "x"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}


def answered(chat: dict[str, Any], asked: dict[str, Any] | None = None,
             usage: Usage = USAGE, **options: Any) -> dict[str, Any]:
    """The Response made of `chat`, checked by the SDK's own type."""
    asked = asked or request()
    response = response_answer(chat, usage=usage, sent=chat_body(asked), asked=asked,
                               now=1_700_000_123.0, **options)
    Response.model_validate(json.loads(json.dumps(response)))
    return response


@pytest.mark.parametrize(("fields", "chat"), [
    ({}, {"messages": [{"role": "user", "content": "hi"}]}),
    ({"instructions": "Be brief."}, {"messages": [{"role": "system", "content": "Be brief."},
                                                  {"role": "user", "content": "hi"}]}),
    ({"max_output_tokens": 64, "temperature": 0.2, "top_p": 0.9, "user": "u1",
      "parallel_tool_calls": False},
     {"max_completion_tokens": 64, "temperature": 0.2, "top_p": 0.9, "user": "u1",
      "parallel_tool_calls": False}),
    ({"tools": [TOOL], "tool_choice": "required"},
     {"tools": [CHAT_TOOL], "tool_choice": "required"}),
    ({"tools": [TOOL], "tool_choice": {"type": "function", "name": "lookup"}},
     {"tools": [CHAT_TOOL], "tool_choice": {"type": "function",
                                            "function": {"name": "lookup"}}}),
    ({"text": {"format": {"type": "json_schema", "name": "person", "schema": SCHEMA,
                          "strict": True}}},
     {"response_format": {"type": "json_schema", "json_schema": {
         "name": "person", "schema": SCHEMA, "strict": True}}}),
    ({"text": {"format": {"type": "json_object"}, "verbosity": "low"}},
     {"response_format": {"type": "json_object"}, "verbosity": "low"}),
    ({"text": {"format": {"type": "text"}}}, {}),
    ({"reasoning": {"effort": "low"}}, {"reasoning_effort": "low"}),
    ({"metadata": {"run": "7"}, "store": False, "stream": False, "truncation": "disabled",
      "include": [], "openrelay": {"tool_config": {}}}, {}),
])
def test_what_maps(fields: dict[str, Any], chat: dict[str, Any]) -> None:
    sent = chat_request(request(**fields), MODEL)
    expected = {"model": "up-main", "messages": [{"role": "user", "content": "hi"}]} | chat
    assert sent == expected


def test_input_items_become_chat_messages() -> None:
    items = [
        {"role": "developer", "content": "Use tools."},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "What is this?"},
            {"type": "input_image", "image_url": IMAGE, "detail": "low"}]},
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
         "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]},
        {"type": "function_call", "call_id": "call_1", "name": "lookup",
         "arguments": '{"q": "x"}', "id": "fc_1", "status": "completed"},
        {"type": "function_call", "call_id": "call_2", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "a cat"},
        {"type": "function_call_output", "call_id": "call_2",
         "output": [{"type": "input_text", "text": "a "}, {"type": "input_text", "text": "hat"}]},
        {"role": "user", "content": [{"type": "input_text", "text": "Thanks"}]},
    ]
    assert chat_body(request(input=items))["messages"] == [
        {"role": "developer", "content": "Use tools."},
        {"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": IMAGE, "detail": "low"}}]},
        {"role": "assistant", "content": "Let me look.",
         "tool_calls": [call("call_1"), call("call_2", arguments="{}")]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a cat"},
        {"role": "tool", "tool_call_id": "call_2", "content": "a hat"},
        {"role": "user", "content": "Thanks"},
    ]


def test_a_function_call_with_no_assistant_turn_before_starts_one() -> None:
    items = [{"role": "user", "content": "go"},
             {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]
    assert chat_body(request(input=items))["messages"][1] == {
        "role": "assistant", "content": None, "tool_calls": [call("c", "f", "{}")]}


@pytest.mark.parametrize(("fields", "code", "said"), [
    ({"stream": True}, UNSUPPORTED, "stream = True has no counterpart"),
    ({"previous_response_id": "resp_1"}, UNSUPPORTED, "a batch keeps no server-side state"),
    ({"background": True}, UNSUPPORTED, "background has no counterpart"),
    ({"truncation": "auto"}, UNSUPPORTED, "truncation = 'auto' has no counterpart"),
    ({"include": ["reasoning.encrypted_content"]}, UNSUPPORTED, "include = "),
    ({"top_logprobs": 3}, UNSUPPORTED, "top_logprobs has no counterpart"),
    ({"max_tool_calls": 3}, UNSUPPORTED, "max_tool_calls has no counterpart"),
    ({"tools": [{"type": "web_search"}]}, UNSUPPORTED, "tools[0].type = 'web_search'"),
    ({"tools": [TOOL | {"defer_loading": True}]}, UNSUPPORTED, "tools[0].defer_loading"),
    ({"tool_choice": {"type": "file_search"}}, UNSUPPORTED, "tool_choice.type = "),
    ({"tool_choice": "any"}, MALFORMED, "tool_choice: must be"),
    ({"reasoning": {"effort": "high", "summary": "auto"}}, UNSUPPORTED, "reasoning.summary"),
    ({"reasoning": {"effort": "huge"}}, UNSUPPORTED, "reasoning.effort = 'huge'"),
    ({"text": {"format": {"type": "grammar"}}}, UNSUPPORTED, "text.format.type"),
    ({"instructions": ["x"]}, MALFORMED, "instructions: must be a string"),
    ({"input": 3}, MALFORMED, "input: must be an array"),
    ({"input": [{"type": "reasoning", "summary": []}]}, UNSUPPORTED, "input[0].type = "),
    ({"input": [{"type": "item_reference", "id": "msg_1"}]}, UNSUPPORTED, "input[0].type"),
    ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
     UNSUPPORTED, "input[0].content[0].type = 'input_file'"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file-1"}]}]},
     UNSUPPORTED, "input[0].content[0].file_id has no counterpart"),
    ({"input": [{"role": "system", "content": [{"type": "input_image", "image_url": IMAGE}]}]},
     UNSUPPORTED, "in a system message"),
    ({"input": [{"role": "tool", "content": "x"}]}, MALFORMED, "input[0].role: must be"),
    ({"input": [{"type": "function_call_output", "call_id": "c",
                 "output": [{"type": "input_image", "image_url": IMAGE}]}]},
     UNSUPPORTED, "in a tool message"),
    ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]},
     MALFORMED, "input[0].arguments: must be a string"),
])
def test_what_cannot_be_said_is_refused(fields: dict[str, Any], code: str, said: str) -> None:
    with pytest.raises(Untranslatable) as info:
        chat_request(request(**fields), MODEL)
    assert info.value.code == code and said in info.value.message


def test_a_text_answer_becomes_a_response() -> None:
    response = answered(completion("hello there"), usage=Usage(
        12, 5, cached_tokens=4, reasoning_tokens=2))
    assert response["id"].startswith("resp_") and response["object"] == "response"
    assert (response["status"], response["incomplete_details"]) == ("completed", None)
    assert (response["model"], response["created_at"]) == ("up-main", 1_700_000_000)
    [item] = response["output"]
    assert item["type"] == "message" and item["role"] == "assistant"
    assert item["content"] == [{"type": "output_text", "text": "hello there",
                                "annotations": [], "logprobs": []}]
    assert response["usage"] == {
        "input_tokens": 12, "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 0},
        "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 17}
    assert Response.model_validate(response).output_text == "hello there"


def test_the_response_echoes_the_request() -> None:
    asked = request(instructions="Be brief.", metadata={"run": "7"}, temperature=0.3,
                    tools=[TOOL], tool_choice="auto", max_output_tokens=99,
                    text={"format": {"type": "json_schema", "name": "p", "schema": SCHEMA}},
                    reasoning={"effort": "low"}, parallel_tool_calls=False)
    response = answered(completion('{"name": "Ada"}'), asked)
    assert {k: response[k] for k in ("instructions", "metadata", "temperature", "tools",
                                     "tool_choice", "max_output_tokens", "text", "reasoning",
                                     "parallel_tool_calls")} == {
        k: asked[k] for k in ("instructions", "metadata", "temperature", "tools",
                              "tool_choice", "max_output_tokens", "text", "reasoning",
                              "parallel_tool_calls")}
    bare = answered(completion("x"))
    assert (bare["tools"], bare["tool_choice"], bare["parallel_tool_calls"],
            bare["metadata"]) == ([], "auto", True, {})


def test_tool_calls_become_function_call_items() -> None:
    response = answered(completion(None, finish="tool_calls",
                                   calls=[call("call_1"), call("call_2", arguments="{}")]),
                        request(tools=[TOOL]))
    assert response["status"] == "completed"
    assert [(i["type"], i["call_id"], i["name"], i["arguments"]) for i in response["output"]] == [
        ("function_call", "call_1", "lookup", '{"q": "x"}'),
        ("function_call", "call_2", "lookup", "{}")]
    assert len({i["id"] for i in response["output"]}) == 2


@pytest.mark.parametrize(("finish", "reason"), [("length", "max_output_tokens"),
                                                 ("content_filter", "content_filter")])
def test_a_cut_answer_is_incomplete(finish: str, reason: str) -> None:
    response = answered(completion("half", finish=finish))
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": reason}
    assert response["output"][0]["status"] == "incomplete"


def test_a_refusal_is_a_refusal_part() -> None:
    response = answered(completion(None, refusal="I can't help with that."))
    assert response["output"][0]["content"] == [{"type": "refusal",
                                                 "refusal": "I can't help with that."}]


def test_content_parts_and_ids() -> None:
    chat = completion(None) | {"id": "resp_kept"}
    chat["choices"][0]["message"]["content"] = [{"type": "text", "text": "a"},
                                                {"type": "text", "text": "b"}]
    response = answered(chat)
    assert response["id"] == "resp_kept"
    assert response["output"][0]["content"][0]["text"] == "ab"
    fresh = answered(completion("x") | {"id": None, "created": None, "model": None})
    assert fresh["id"].startswith("resp_") and fresh["created_at"] == 1_700_000_123
    assert fresh["model"] == "main"  # the request's, when the answer names none


def test_a_tool_loops_rounds_come_first() -> None:
    earlier = [{"role": "assistant", "content": None, "tool_calls": [call("c1")]},
               {"role": "tool", "tool_call_id": "c1", "content": "42"}]
    response = answered(completion("It is 42."), request(tools=[TOOL]), earlier=earlier)
    assert [i["type"] for i in response["output"]] == [
        "function_call", "function_call_output", "message"]
    assert response["output"][1]["output"] == "42"
    assert Response.model_validate(response).output_text == "It is 42."


@pytest.mark.parametrize(("chat", "problem"), [
    ({"choices": []}, "no choices[0]"),
    (completion(None, calls=[{"id": "c", "function": {}}]), "without an id or a function"),
    (completion(None, calls=[call() | {"function": {"name": "f", "arguments": {"q": 1}}}]),
     "arguments that are not a string"),
    (completion(None) | {"choices": [{"message": {"content": 3}}]}, "content that is not text"),
])
def test_an_answer_that_cannot_be_a_response(chat: dict[str, Any], problem: str) -> None:
    with pytest.raises(BadAnswer, match=re.escape(problem)):
        response_answer(chat, usage=Usage(), sent={}, asked=request(), now=0.0)


def test_a_response_given_back_as_input_round_trips() -> None:
    """A Response's output items, sent back as the next request's input, are the chat
    messages the first answer was."""
    first = completion("Looking.", finish="tool_calls", calls=[call("call_1")])
    response = answered(first, request(tools=[TOOL]))
    again = request(tools=[TOOL], input=[
        {"role": "user", "content": "hi"}, *response["output"],
        {"type": "function_call_output", "call_id": "call_1", "output": "found"}])
    messages = chat_body(again)["messages"]
    assert messages[1] == first["choices"][0]["message"]
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "found"}


def test_tools_and_usage_shapes() -> None:
    assert responses_tool(CHAT_TOOL) == TOOL
    assert response_usage(Usage(1, 2))["total_tokens"] == 3
