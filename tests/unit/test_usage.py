"""An upstream's usage, checked (`read_usage`), and what a row may add up to once
priced (`row_problem`, `priced`): the rules, and properties over any JSON value.

Bounded and derandomized, like the parser properties: the same examples every run."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from daemon.config import MAX_USD_PER_MTOK
from daemon.domain.outcome import RowOutcome, Turn, Usage
from daemon.domain.pricing import cost_nano_usd
from daemon.domain.usage import (
    MAX_CALL_TOKENS,
    MAX_STORED,
    InvalidUsage,
    priced,
    read_usage,
    row_problem,
)

BOUNDED = settings(max_examples=200, derandomize=True, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow])

good_count = st.integers(0, MAX_CALL_TOKENS)
bad_count = st.one_of(st.integers(max_value=-1), st.integers(min_value=MAX_CALL_TOKENS + 1),
                      st.booleans(), st.floats(allow_nan=True), st.text(max_size=5),
                      st.lists(st.integers(), max_size=2))
json_value = st.recursive(st.none() | st.booleans() | st.integers() | st.floats()
                          | st.text(max_size=8),
                          lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                          max_leaves=8)


def answer(**usage: Any) -> dict[str, Any]:
    return {"choices": [{"message": {"content": "hi"}}], "usage": usage}


def test_counts_are_read_with_their_details() -> None:
    usage = read_usage(answer(prompt_tokens=40, completion_tokens=9, total_tokens=49,
                              prompt_tokens_details={"cached_tokens": 32},
                              completion_tokens_details={"reasoning_tokens": 5}))
    assert usage == Usage(40, 9, cached_tokens=32, reasoning_tokens=5)


@pytest.mark.parametrize("response", [
    {"choices": []},  # no usage at all: an upstream that does not report it
    {"usage": None},
    answer(prompt_tokens=None, completion_tokens_details=None),
    answer(prompt_tokens_details={"audio_tokens": 3}),  # counts Relay does not read
])
def test_absent_or_null_counts_read_as_zero(response: dict[str, Any]) -> None:
    assert read_usage(response) == Usage()


@pytest.mark.parametrize(("response", "message"), [
    (answer(prompt_tokens=9223372036854775813),  # as the issue found it
     "usage.prompt_tokens = 9223372036854775813, not an integer from 0 to 1000000000"),
    (answer(prompt_tokens=-1_000_000),
     "usage.prompt_tokens = -1000000, not an integer from 0 to 1000000000"),
    (answer(completion_tokens=10**16),
     "usage.completion_tokens = 10000000000000000, not an integer from 0 to 1000000000"),
    (answer(total_tokens=10**9 + 1),
     "usage.total_tokens = 1000000001, not an integer from 0 to 1000000000"),
    (answer(prompt_tokens="12"), 'usage.prompt_tokens = "12", not an integer'),
    (answer(completion_tokens=True), "usage.completion_tokens = true, not an integer"),
    (answer(prompt_tokens=12.5), "usage.prompt_tokens = 12.5, not an integer"),
    (answer(prompt_tokens=float("nan")), "usage.prompt_tokens = NaN, not an integer"),
    (answer(prompt_tokens_details={"cached_tokens": -3}),
     "usage.prompt_tokens_details.cached_tokens = -3, not an integer"),
    (answer(completion_tokens_details=[5]),
     "usage.completion_tokens_details = [5], not an object"),
    ({"usage": "lots"}, 'usage = "lots", not an object'),
    (answer(prompt_tokens=10**80), "usage.prompt_tokens = 1" + "0" * 62 + "…, not an"),
])
def test_a_count_out_of_bounds_or_not_an_integer_is_refused_by_name(
        response: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidUsage) as refused:
        read_usage(response)
    assert str(refused.value).startswith(message)
    assert len(str(refused.value)) < 160


@BOUNDED
@given(st.fixed_dictionaries({}, optional={
    "prompt_tokens": good_count | st.none(), "completion_tokens": good_count | st.none(),
    "total_tokens": good_count, "prompt_tokens_details": st.fixed_dictionaries(
        {}, optional={"cached_tokens": good_count}),
    "completion_tokens_details": st.fixed_dictionaries(
        {}, optional={"reasoning_tokens": good_count})}))
def test_counts_within_bounds_read_back_exactly(usage: dict[str, Any]) -> None:
    read = read_usage(json.loads(json.dumps({"usage": usage})))
    assert read.prompt_tokens == (usage.get("prompt_tokens") or 0)
    assert read.completion_tokens == (usage.get("completion_tokens") or 0)
    assert read.cached_tokens == usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)
    assert read.reasoning_tokens == usage.get("completion_tokens_details", {}).get(
        "reasoning_tokens", 0)


@BOUNDED
@given(st.sampled_from(["prompt_tokens", "completion_tokens", "total_tokens"]), bad_count)
@example("prompt_tokens", 2**63 + 5)
@example("completion_tokens", -1)
def test_any_bad_count_is_refused(field: str, value: Any) -> None:
    with pytest.raises(InvalidUsage, match=f"usage.{field} = "):
        read_usage(answer(**{field: value}))


@BOUNDED
@given(json_value)
def test_any_usage_either_reads_within_bounds_or_is_refused(usage: Any) -> None:
    """Whatever an upstream sends, what comes back is storable and never negative."""
    try:
        read = read_usage({"usage": usage})
    except InvalidUsage:
        return
    for count in (read.prompt_tokens, read.completion_tokens, read.cached_tokens,
                  read.reasoning_tokens):
        assert type(count) is int and 0 <= count <= MAX_CALL_TOKENS


@BOUNDED
@given(good_count, good_count, st.floats(0, MAX_USD_PER_MTOK), st.floats(0, MAX_USD_PER_MTOK))
def test_one_call_within_bounds_at_any_allowed_price_fits_64_bits(
        prompt: int, completion: int, inp: float, out: float) -> None:
    cost = cost_nano_usd(Usage(prompt, completion), input_usd_per_mtok=inp,
                         output_usd_per_mtok=out)
    assert 0 <= cost <= MAX_STORED
    assert row_problem(Usage(prompt, completion), cost) is None


def test_a_row_whose_cost_passes_64_bits_is_a_problem() -> None:
    assert row_problem(Usage(), MAX_STORED) is None
    assert row_problem(Usage(), MAX_STORED + 1) == (
        f"its cost, {MAX_STORED + 1} nano-USD, is more than {MAX_STORED}")
    assert row_problem(Usage(MAX_STORED + 1), 0) == (
        f"its prompt_tokens, {MAX_STORED + 1}, is more than {MAX_STORED}")


def test_priced_sets_the_cost_of_a_row_that_fits() -> None:
    outcome = RowOutcome(ok=True, response={"x": 1}, model="m", usage=Usage(3, 4))
    assert priced(outcome, 1234) == RowOutcome(ok=True, response={"x": 1}, model="m",
                                               usage=Usage(3, 4), cost_nano_usd=1234)


def test_a_row_of_many_calls_that_cannot_be_stored_fails_invalid_response_unbilled() -> None:
    """Each call is within bounds; five of them at the highest allowed price are not."""
    call = Usage(MAX_CALL_TOKENS, MAX_CALL_TOKENS)
    turns = tuple(Turn(model="m", usage=call) for _ in range(5))
    total = sum((t.usage for t in turns), Usage())
    cost = 5 * cost_nano_usd(call, input_usd_per_mtok=MAX_USD_PER_MTOK,
                             output_usd_per_mtok=MAX_USD_PER_MTOK)
    outcome = RowOutcome(ok=True, response={"choices": []}, response_text='{"choices":[]}',
                         model="m", usage=total, turns=turns)
    failed = priced(outcome, cost)
    assert (failed.ok, failed.error_code, failed.dead_letter) == (False, "invalid_response",
                                                                   False)
    assert failed.error == (f"invalid_response: the row's usage, summed over its 5 model "
                            f"calls, cannot be stored: its cost, {cost} nano-USD, is more "
                            f"than {MAX_STORED}")
    assert failed.error_body == {"choices": []}  # the answer, kept
    assert (failed.usage, failed.cost_nano_usd, failed.response) == (Usage(), 0, None)
