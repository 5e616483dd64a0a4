"""A `Response`'s usage (`read_response_usage`) under `read_usage`'s rules, and a
moderation's, which has none (`no_usage`)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from daemon.domain.outcome import Usage
from daemon.domain.usage import MAX_CALL_TOKENS, InvalidUsage, no_usage, read_response_usage
from tests.unit.test_usage import BOUNDED, bad_count, json_value


def response(**usage: Any) -> dict[str, Any]:
    return {"object": "response", "output": [], "usage": usage}


def test_counts_are_read_with_their_details() -> None:
    usage = read_response_usage(response(
        input_tokens=40, output_tokens=9, total_tokens=49,
        input_tokens_details={"cached_tokens": 32},
        output_tokens_details={"reasoning_tokens": 5}))
    assert usage == Usage(40, 9, cached_tokens=32, reasoning_tokens=5)


@pytest.mark.parametrize("answer", [{"object": "response"}, {"usage": None},
                                    response(input_tokens=None, output_tokens_details=None)])
def test_absent_or_null_counts_read_as_zero(answer: dict[str, Any]) -> None:
    assert read_response_usage(answer) == Usage()


@pytest.mark.parametrize(("answer", "message"), [
    (response(input_tokens=2**63 + 5), "usage.input_tokens = 9223372036854775813, not an "
                                       "integer from 0 to 1000000000"),
    (response(output_tokens=-1), "usage.output_tokens = -1, not an integer"),
    (response(total_tokens="9"), 'usage.total_tokens = "9", not an integer'),
    (response(input_tokens_details={"cached_tokens": True}),
     "usage.input_tokens_details.cached_tokens = true, not an integer"),
    (response(output_tokens_details=[1]), "usage.output_tokens_details = [1], not an object"),
])
def test_a_bad_count_is_refused_by_name(answer: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidUsage) as refused:
        read_response_usage(answer)
    assert str(refused.value).startswith(message)


@BOUNDED
@given(st.sampled_from(["input_tokens", "output_tokens", "total_tokens"]), bad_count)
def test_any_bad_count_is_refused(field: str, value: Any) -> None:
    with pytest.raises(InvalidUsage, match=f"usage.{field} = "):
        read_response_usage(response(**{field: value}))


@BOUNDED
@given(json_value)
def test_any_usage_either_reads_within_bounds_or_is_refused(usage: Any) -> None:
    try:
        read = read_response_usage({"usage": usage})
    except InvalidUsage:
        return
    for count in (read.prompt_tokens, read.completion_tokens, read.cached_tokens,
                  read.reasoning_tokens):
        assert type(count) is int and 0 <= count <= MAX_CALL_TOKENS


def test_a_moderation_reports_no_usage() -> None:
    assert no_usage({"id": "modr-1", "results": [], "usage": {"input_tokens": 5}}) == Usage()
