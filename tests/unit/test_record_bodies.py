"""`/v1/responses` and `/v1/moderations` records at validation: what passes, and each
refusal with its code and the field it names (the rest of the batch runs)."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.domain.jobs import RowDraft
from daemon.domain.openai_input import MODERATIONS, RESPONSES, parse_records

MODELS = frozenset({"gpt-4o-mini", "omni-moderation-latest"})
TOOLS = {"url": "https://tools.example.com/run"}


def row(endpoint: str, body: Any) -> RowDraft:
    """The one row a one-record batch of `endpoint` gives."""
    record = {"custom_id": "r-1", "method": "POST", "url": endpoint, "body": body}
    parsed = parse_records([(1, record)], endpoint=endpoint, models=MODELS)
    assert parsed.errors == [] and len(parsed.rows) == 1
    return parsed.rows[0]


def responses(**fields: Any) -> dict[str, Any]:
    """A Responses body; a field of `...` is dropped."""
    body = {"model": "gpt-4o-mini", "input": "Say hi", **fields}
    return {k: v for k, v in body.items() if v is not ...}


def moderation(value: Any = ...) -> dict[str, Any]:
    body = {"model": "omni-moderation-latest", "input": value}
    return {k: v for k, v in body.items() if v is not ...}


MESSAGE = {"role": "user", "content": [
    {"type": "input_text", "text": "What is in this image?"},
    {"type": "input_image", "image_url": "https://example.com/cat.png"}]}


@pytest.mark.parametrize("body", [
    responses(),
    responses(input=[MESSAGE]),
    responses(input=[{"type": "function_call", "call_id": "c1", "name": "f",
                      "arguments": "{}"},
                     {"type": "function_call_output", "call_id": "c1", "output": "42"}]),
    responses(instructions="Be brief.", max_output_tokens=64, temperature=0.2, top_p=0.9,
              tools=[{"type": "function", "name": "f", "parameters": {}}],
              tool_choice="auto", reasoning={"effort": "low"}, metadata={"k": "v"},
              text={"format": {"type": "json_schema", "name": "x", "schema": {}}}),
    responses(store=True),  # ignored: the Response lives in the output file
    responses(store=False, background=False, stream=False, previous_response_id=None),
    responses(openrelay={"tool_config": TOOLS}),  # an extension on Responses records too
], ids=["string", "message-items", "function-items", "every-parameter", "store",
        "harmless-defaults", "tool-config"])
def test_a_responses_record_that_passes(body: dict[str, Any]) -> None:
    passed = row(RESPONSES, body)
    assert (passed.error, passed.error_code, passed.model) == (None, None, "gpt-4o-mini")
    assert passed.body == body  # sent on as it came


@pytest.mark.parametrize(("body", "code", "path"), [
    (responses(input=...), "invalid_body", "input"),
    (responses(input=[]), "invalid_body", "input"),
    (responses(input=42), "invalid_body", "input"),
    (responses(input={"role": "user", "content": "hi"}), "invalid_body", "input"),
    (responses(input=["hi"]), "invalid_body", "input.0"),
    (responses(input=[MESSAGE, {"type": "item_reference", "id": "msg_1"}]),
     "item_reference_unsupported", "input.1"),
    (responses(stream=True), "stream_unsupported", "stream"),
    (responses(previous_response_id="resp_123"), "previous_response_unsupported",
     "previous_response_id"),
    (responses(conversation="conv_123"), "conversation_unsupported", "conversation"),
    (responses(background=True), "background_unsupported", "background"),
    (responses(model=...), "invalid_body", "model"),
    (responses(model="nope"), "model_not_found", "model"),
    (responses(openrelay={"tool_config": {"url": 7}}), "invalid_tool_config",
     "openrelay.tool_config.url"),
    (responses(openrelay={"workflow": {"url": "https://x.example", "authorization": "a"}}),
     "invalid_workflow", "openrelay.workflow"),
])
def test_each_responses_refusal_names_its_code_and_field(body: dict[str, Any], code: str,
                                                         path: str) -> None:
    failed = row(RESPONSES, body)
    assert (failed.error_code, failed.error_path) == (code, path), failed.error
    assert failed.error


@pytest.mark.parametrize("value", [
    "I want to hurt them.",
    ["first", "second"],
    [{"type": "text", "text": "look"},
     {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}],
])
def test_a_moderation_record_that_passes(value: Any) -> None:
    passed = row(MODERATIONS, moderation(value))
    assert (passed.error_code, passed.model) == (None, "omni-moderation-latest")


@pytest.mark.parametrize(("body", "code", "path"), [
    (moderation(), "invalid_body", "input"),
    (moderation([]), "invalid_body", "input"),
    (moderation(7), "invalid_body", "input"),
    (moderation({"type": "text", "text": "x"}), "invalid_body", "input"),
    (moderation(["text", {"type": "text", "text": "x"}]), "invalid_body", "input.0"),
    (moderation([{"type": "text"}]), "invalid_body", "input.0"),
    (moderation([{"type": "text", "text": "ok"}, {"type": "image_url", "image_url": "u"}]),
     "invalid_body", "input.1"),
    (moderation([{"type": "input_audio"}]), "invalid_body", "input.0"),
    (moderation([{"type": ["text"], "text": "x"}]), "invalid_body", "input.0"),  # was a 500
    ({"input": "hi"}, "invalid_body", "model"),
    ({**moderation("hi"), "stream": True}, "stream_unsupported", "stream"),
    ({**moderation("hi"), "openrelay": {"tool_config": TOOLS}}, "invalid_tool_config",
     "openrelay.tool_config"),
])
def test_each_moderation_refusal_names_its_code_and_field(body: dict[str, Any], code: str,
                                                          path: str) -> None:
    failed = row(MODERATIONS, body)
    assert (failed.error_code, failed.error_path) == (code, path), failed.error


def test_a_refused_record_fails_alone() -> None:
    records = [{"custom_id": cid, "method": "POST", "url": RESPONSES, "body": body}
               for cid, body in (("ok", responses()),
                                 ("stateful", responses(previous_response_id="resp_1")))]
    parsed = parse_records(enumerate(records, start=1), endpoint=RESPONSES, models=MODELS)
    assert parsed.errors == []
    assert [(r.custom_id, r.error_code) for r in parsed.rows] == [
        ("ok", None), ("stateful", "previous_response_unsupported")]
    assert parsed.model == "gpt-4o-mini"
