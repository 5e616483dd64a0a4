"""Token pricing: usage in, exact integer nano-USD out."""

from __future__ import annotations

from fractions import Fraction

import pytest

from daemon.domain.outcome import Usage
from daemon.domain.pricing import cost_nano_usd


@pytest.mark.parametrize(("prompt", "completion", "inp", "out", "nano"), [
    (0, 0, 0.15, 0.60, 0),
    (1_000_000, 0, 0.15, 0.60, 150_000_000),
    (0, 1_000_000, 0.15, 0.60, 600_000_000),
    (1234, 567, 0.15, 0.60, 525_300),
    (1, 1, 0.15, 0.60, 750),
    (3, 0, 0.1, 0.0, 300),
    (7, 0, 0.02, 0.0, 140),
    (10**9, 10**9, 2.5, 10.0, 12_500_000_000_000),
    (500, 500, 0.0, 0.0, 0),
])
def test_cost_is_an_exact_integer(prompt: int, completion: int, inp: float, out: float,
                                  nano: int) -> None:
    cost = cost_nano_usd(Usage(prompt, completion), input_usd_per_mtok=inp,
                         output_usd_per_mtok=out)
    assert cost == nano
    assert type(cost) is int


@pytest.mark.parametrize("prompt", [1, 17, 999, 12_345, 987_654, 31_337_000])
@pytest.mark.parametrize(("inp", "out"), [("0.15", "0.60"), ("0.02", "0"), ("3", "15"),
                                          ("0.075", "0.3")])
def test_cost_matches_exact_arithmetic(prompt: int, inp: str, out: str) -> None:
    completion = prompt // 3 + 1
    exact = (prompt * Fraction(inp) + completion * Fraction(out)) * 1000
    assert exact.denominator == 1  # the chosen prices give whole nano-dollars
    cost = cost_nano_usd(Usage(prompt, completion), input_usd_per_mtok=float(inp),
                         output_usd_per_mtok=float(out))
    assert cost == int(exact)


def test_discount_halves_the_price() -> None:
    usage = Usage(2_000_000, 1_000_000)
    full = cost_nano_usd(usage, input_usd_per_mtok=0.15, output_usd_per_mtok=0.60)
    half = cost_nano_usd(usage, input_usd_per_mtok=0.15, output_usd_per_mtok=0.60,
                         discount=0.5)
    assert full == 900_000_000
    assert half == 450_000_000
    assert type(half) is int


def test_full_discount_is_free() -> None:
    assert cost_nano_usd(Usage(10, 10), input_usd_per_mtok=1, output_usd_per_mtok=1,
                         discount=1.0) == 0
