"""A tool call's arguments, read once for every executor: a JSON object, or a refusal
that the model reads as a tool error."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.executors.tool_arguments import InvalidArguments, arguments_of, refusals


def call(arguments: Any, *, id: str = "c1", name: str = "lookup") -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize(("arguments", "parsed"), [
    ('{"q": "x", "n": [1]}', {"q": "x", "n": [1]}),
    ({"q": "x"}, {"q": "x"}),  # an object, not its JSON text
    (None, {}),
    ("", {}),
    ("  \n", {}),  # some servers send blank arguments for a function without parameters
])
def test_arguments_that_read_as_an_object(arguments: Any, parsed: dict[str, Any]) -> None:
    assert arguments_of(call(arguments)) == parsed


@pytest.mark.parametrize(("arguments", "why"), [
    ('{"q": ', "they are not valid JSON (Expecting value at character 6)"),
    ("not json", "they are not valid JSON (Expecting value at character 0)"),
    ("[1, 2]", "they are valid JSON but not an object"),
    ('"text"', "they are valid JSON but not an object"),
    (42, "they are a JSON int, not a string"),
    ("[" * 100_000, "they are not valid JSON (RecursionError)"),
])
def test_arguments_that_do_not(arguments: Any, why: str) -> None:
    with pytest.raises(InvalidArguments) as refused:
        arguments_of(call(arguments))
    assert str(refused.value) == why


def test_refusals_name_each_bad_call_and_tell_the_model_what_to_do() -> None:
    calls = [call('{"q": 1}', id="ok"), call("{", id="bad", name="add"), call("[]", id="list")]
    assert refusals(calls) == {
        "bad": "error: the arguments of this call to 'add' were not sent to the tool: they "
               "are not valid JSON (Expecting property name enclosed in double quotes at "
               "character 1). Call it again with a JSON object as its arguments.",
        "list": "error: the arguments of this call to 'lookup' were not sent to the tool: "
                "they are valid JSON but not an object. Call it again with a JSON object as "
                "its arguments."}
