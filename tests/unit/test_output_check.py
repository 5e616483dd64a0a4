"""Checked structured outputs, the pure parts: which check a record asks for, the
problems of an answer, and the fixed wording of the repair message."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.domain.jobs import CHAT_ROW, CHECKED_ROW, row_kind
from daemon.domain.output_check import (
    INVALID_SCHEMA,
    INVALID_VALIDATION,
    OutputCheck,
    OutputCheckError,
    Problem,
    answer_text,
    error_summary,
    output_check,
    problems,
    repair_message,
    repair_turn,
    with_turns,
)

SCHEMA = {"type": "object", "required": ["label", "score"],
          "properties": {"label": {"enum": ["positive", "negative"]},
                         "score": {"type": "integer", "minimum": 0}}}


def chat(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], **extra}


def schema_format(schema: Any = SCHEMA) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}


def test_the_check_comes_from_response_format_text_format_or_openrelay() -> None:
    check = output_check(chat(response_format=schema_format(),
                              openrelay={"validation": {"max_repairs": 2}}))
    assert check == OutputCheck("json_schema", SCHEMA, "response_format.json_schema.schema", 2)
    responses = output_check({"input": "hi", "text": {"format": {
        "type": "json_schema", "name": "s", "schema": SCHEMA}}})
    assert responses is not None and responses.where == "text.format.schema"
    loose = output_check(chat(response_format={"type": "json_object"}))
    assert loose is not None and (loose.kind, loose.schema) == ("json_object", None)
    anthropic = output_check({"messages": [], "openrelay": {"validation": {
        "schema": SCHEMA, "format_check": True}}})
    assert anthropic is not None and anthropic.format_check and anthropic.max_repairs == 0
    assert output_check(chat(response_format={"type": "text"})) is None
    assert row_kind(chat(response_format={"type": "json_object"})) == CHECKED_ROW
    assert row_kind(chat(response_format={"type": "text"})) == CHAT_ROW


@pytest.mark.parametrize(("body", "code", "path"), [
    (chat(response_format=schema_format({"type": "objekt"})), INVALID_SCHEMA,
     "response_format.json_schema.schema"),
    (chat(response_format=schema_format([1])), INVALID_SCHEMA,
     "response_format.json_schema.schema"),
    (chat(response_format={"type": "json_schema"}), INVALID_SCHEMA,
     "response_format.json_schema"),
    (chat(response_format={"type": "json_object"}, openrelay={"validation": {
        "max_repairs": 6}}), INVALID_VALIDATION, "openrelay.validation.max_repairs"),
    (chat(response_format={"type": "json_object"}, openrelay={"validation": {
        "tries": 1}}), INVALID_VALIDATION, "openrelay.validation.tries"),
    (chat(openrelay={"validation": {"max_repairs": 1}}), INVALID_VALIDATION,
     "openrelay.validation"),
    (chat(response_format=schema_format(), openrelay={"validation": {"schema": SCHEMA}}),
     INVALID_VALIDATION, "openrelay.validation.schema"),
])
def test_a_check_that_cannot_be_set_up_names_its_field(body: dict[str, Any], code: str,
                                                       path: str) -> None:
    with pytest.raises(OutputCheckError) as caught:
        output_check(body)
    assert (caught.value.code, caught.value.path) == (code, path)
    assert caught.value.message.startswith(f"{path}: ")


def test_an_invalid_schema_says_where_it_is_wrong() -> None:
    with pytest.raises(OutputCheckError) as caught:
        output_check(chat(response_format=schema_format({"type": "objekt"})))
    assert caught.value.message == (
        "response_format.json_schema.schema: is not a valid JSON Schema (Draft 2020-12): "
        "at $.type: 'objekt' is not valid under any of the given schemas")


def test_problems_name_the_json_path_and_the_failed_rule() -> None:
    check = OutputCheck("json_schema", SCHEMA, "s")
    assert problems(check, '{"label": "positive", "score": 3}') == []
    assert [p.line() for p in problems(check, '{"label": "meh", "score": -1}')] == [
        "$.label: enum: 'meh' is not one of ['positive', 'negative']",
        "$.score: minimum: -1 is less than the minimum of 0"]
    assert [p.line() for p in problems(check, '{"label": "positive"}')] == [
        "$: required: 'score' is a required property"]
    (bad,) = problems(check, "Sure! {")
    assert bad.line() == ("$: json: the answer is not valid JSON: Expecting value "
                          "(line 1, column 1).")
    assert problems(check, "NaN")[0].rule == "json"
    assert problems(check, None)[0].rule == "content"
    loose = OutputCheck("json_object", None, "response_format")
    assert problems(loose, "{}") == []
    assert [p.line() for p in problems(loose, "[1]")] == [
        "$: type: the answer is an array, not a JSON object."]


def test_formats_are_checked_only_when_asked() -> None:
    dated = {"type": "string", "format": "date"}
    assert problems(OutputCheck("json_schema", dated, "s"), '"soon"') == []
    assert [p.rule for p in problems(OutputCheck("json_schema", dated, "s",
                                                 format_check=True), '"soon"')] == ["format"]


def test_the_repair_message_wording_is_fixed() -> None:
    found = [Problem("$.score", "type", "'high' is not of type 'integer'"),
             Problem("$.label", "enum", "'meh' is not one of ['positive', 'negative']"),
             Problem("$", "required", "'id' is a required property"),
             Problem("$.tags", "type", "3 is not of type 'array'"),
             Problem("$.x", "minimum", "-1 is less than the minimum of 0")]
    assert repair_message(found) == (
        "Your previous answer did not pass validation against the required JSON Schema "
        "(5 errors):\n"
        "- $.score: type: 'high' is not of type 'integer'\n"
        "- $.label: enum: 'meh' is not one of ['positive', 'negative']\n"
        "- $: required: 'id' is a required property\n"
        "- and 2 more\n"
        "Answer again with only the corrected JSON, and no other text.")
    assert repair_message(found[:1]) == (
        "Your previous answer did not pass validation against the required JSON Schema "
        "(1 error):\n- $.score: type: 'high' is not of type 'integer'\n"
        "Answer again with only the corrected JSON, and no other text.")
    assert error_summary(found[:1]) == (
        "invalid_output: the answer did not pass its JSON Schema check (1 error): "
        "$.score: type: 'high' is not of type 'integer'")
    long = Problem("$", "enum", "x" * 500)
    assert long.line() == "$: enum: " + "x" * 200 + "..."


def test_the_repair_turn_extends_each_endpoints_conversation() -> None:
    found = [Problem("$", "json", "the answer is not valid JSON: Expecting value.")]
    added = repair_turn("nope", found)
    assert added[0] == {"role": "assistant", "content": "nope"}
    assert added[1]["role"] == "user" and added[1]["content"] == repair_message(found)
    assert with_turns("/v1/chat/completions", chat(), added)["messages"][1:] == list(added)
    assert with_turns("/v1/responses", {"input": "hi"}, added)["input"] == [
        {"role": "user", "content": "hi"}, *added]
    assert with_turns("/v1/messages", {"messages": []}, ())["messages"] == []


def test_the_answer_text_is_read_from_each_endpoints_shape() -> None:
    assert answer_text("/v1/chat/completions", {"choices": [
        {"message": {"content": "{}"}}]}) == "{}"
    assert answer_text("/v1/responses", {"output": [{"type": "message", "content": [
        {"type": "output_text", "text": "{"}, {"type": "output_text", "text": "}"}]}]}) == "{}"
    assert answer_text("/v1/messages", {"content": [{"type": "text", "text": "[]"}]}) == "[]"
    assert answer_text("/v1/chat/completions", {"choices": []}) is None
