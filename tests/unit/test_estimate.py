"""The estimator, as pure functions: tokens, sources, cost at the batch rate, drain."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from daemon.domain import codec
from daemon.domain.estimate import (
    DEFAULT_LATENCY_S,
    DEFAULT_OUTPUT_TOKENS,
    History,
    ModelLimits,
    batch_input_tokens,
    drain_seconds,
    estimate,
    input_tokens,
    median,
    output_tokens,
)
from daemon.domain.ratelimit import TokenEstimate

BODY: dict[str, Any] = {"messages": [{"role": "user", "content": "x" * 400}]}


def test_input_tokens_are_the_rate_limiters_estimate_without_the_answer() -> None:
    size = len(codec.dumps(BODY))
    assert input_tokens(BODY) == TokenEstimate().estimate(size, 0)
    assert batch_input_tokens([BODY, BODY]) == 2 * input_tokens(BODY)


def test_output_tokens_say_where_they_came_from() -> None:
    assert output_tokens({**BODY, "max_tokens": 50}, median=9) == (50, "max_tokens")
    assert output_tokens({**BODY, "max_completion_tokens": 7}, median=None) == (7, "max_tokens")
    assert output_tokens(BODY, median=9) == (9, "history")
    assert output_tokens(BODY, median=None) == (DEFAULT_OUTPUT_TOKENS, "default")


def test_median_takes_the_lower_middle() -> None:
    assert median([]) is None
    assert median([5, 1, 3]) == 3
    assert median([4, 1, 3, 2]) == 2


def test_drain_is_the_slowest_limit() -> None:
    assert drain_seconds(60, 1000, ModelLimits(rpm=60, concurrency=100,
                                               latency_s=0.1)) == (60.0, "rpm")
    assert drain_seconds(10, 6000, ModelLimits(tpm=1000, concurrency=10,
                                               latency_s=1)) == (360.0, "tpm")
    assert drain_seconds(8, 10, ModelLimits(concurrency=4, latency_s=2.5)) == (5.0,
                                                                                 "concurrency")
    assert drain_seconds(4, 10, ModelLimits(concurrency=2)) == (2 * DEFAULT_LATENCY_S,
                                                                "concurrency")


def test_estimate_by_model_at_the_batch_rate() -> None:
    rows: list[tuple[str, dict[str, Any]]] = [("a", {**BODY, "max_tokens": 100}), ("a", BODY),
                                             ("b", BODY)]
    limits = {"a": ModelLimits(input_usd_per_mtok=1.0, output_usd_per_mtok=2.0, rpm=30,
                               concurrency=4),
              "b": ModelLimits(concurrency=1, latency_s=3.0)}
    found = estimate(rows, limits=limits, history={"a": History(40, 0.5)},
                     discount=Decimal("0.5"))
    a, b = found.models
    tokens_in = input_tokens(BODY) + input_tokens(rows[0][1])
    assert (a.model, a.rows, a.input_tokens, a.output_tokens) == ("a", 2, tokens_in, 140)
    assert a.output_sources == {"max_tokens": 1, "history": 1}
    # 1 USD/Mtok = 1000 nano-USD a token, halved by the batch rate
    assert a.cost_nano_usd == (tokens_in * 1000 + 140 * 2000) // 2
    assert (a.drain_s, a.drain_limit, a.latency_source) == (4.0, "rpm", "observed")
    assert b.output_sources == {"default": 1} and b.cost_nano_usd == 0
    assert (b.drain_s, b.latency_source) == (3.0, "observed")
    view = found.view()
    assert view["rows"] == 3 and view["drain_s"] == 4.0
    assert view["cost_nano_usd"] == a.cost_nano_usd and view["discount"] == "0.5"


def test_an_unconfigured_model_is_marked_unknown() -> None:
    found = estimate([("gone", BODY)], limits={}, history={}, discount=Decimal(0))
    assert not found.models[0].known
