"""Budget period math and the submit's lower bound, as pure functions."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from daemon.domain.budget import (
    DAY_S,
    Budget,
    day_of,
    first_day,
    input_tokens,
    lower_bound_nano_usd,
    parse_period,
    parse_usd,
    period_spend,
    resets_at,
    state_of,
    usd,
)
from daemon.domain.ratelimit import TokenEstimate


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0,
       second: int = 0) -> float:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp()


def test_a_day_runs_from_midnight_utc_to_midnight() -> None:
    noon = at(2026, 12, 1, 12)
    assert day_of(at(2026, 12, 1)) == day_of(noon) == day_of(at(2026, 12, 1, 23, 59, 59))
    assert day_of(at(2026, 12, 2)) == day_of(noon) + 1
    assert first_day("day", noon) == day_of(noon)
    assert resets_at("day", noon) == at(2026, 12, 2)
    assert resets_at("day", at(2026, 12, 1)) == at(2026, 12, 2)  # the first instant is in


@pytest.mark.parametrize(("now", "first", "reset"), [
    (at(2026, 12, 15, 8), at(2026, 12, 1), at(2027, 1, 1)),  # December into the new year
    (at(2028, 2, 29, 23, 59), at(2028, 2, 1), at(2028, 3, 1)),  # a leap February
    (at(2026, 1, 31), at(2026, 1, 1), at(2026, 2, 1)),
    (at(2026, 3, 1), at(2026, 3, 1), at(2026, 4, 1)),  # its first instant
])
def test_a_month_runs_from_its_first_day(now: float, first: float, reset: float) -> None:
    assert first_day("month", now) == day_of(first)
    assert resets_at("month", now) == reset


def test_no_period_counts_every_day_and_never_resets() -> None:
    assert (first_day("none", 0.0), resets_at("none", 1e9)) == (None, None)
    assert period_spend({1: 5, 20_000: 7}, "none", at(2026, 1, 1)) == 12


def test_a_period_sums_only_its_own_days() -> None:
    now = at(2026, 12, 2, 10)
    days = {day_of(at(2026, 11, 30)): 100, day_of(at(2026, 12, 1)): 20, day_of(now): 3}
    assert period_spend(days, "day", now) == 3
    assert period_spend(days, "month", now) == 23
    assert period_spend(days, "day", now + DAY_S) == 0  # rolled over


def test_a_state_is_spent_at_its_budget_and_remaining_never_negative() -> None:
    now = at(2026, 12, 2)
    under = state_of(1, Budget(100, "day"), {day_of(now): 99}, now=now)
    assert (under.exhausted, under.remaining_nano_usd, under.covers(1), under.covers(2)) == (
        False, 1, True, False)
    over = state_of(1, Budget(100, "day"), {day_of(now): 130}, now=now)
    assert (over.exhausted, over.remaining_nano_usd) == (True, 0)
    assert over.resets_at == at(2026, 12, 3)


def test_amounts_parse_to_nano_usd() -> None:
    assert parse_usd("500") == 500_000_000_000
    assert parse_usd("12.50") == 12_500_000_000
    assert parse_usd("0.000000001") == 1
    for bad in ("-1", "abc", "nan", "inf", ""):
        with pytest.raises(ValueError):
            parse_usd(bad)
    assert parse_period("day") == "day"
    with pytest.raises(ValueError, match="one of month, day, none"):
        parse_period("week")
    assert (usd(500_000_000_000), usd(12_500_000), usd(42)) == ("$500.00", "$0.01",
                                                               "$0.000000042")


def test_the_lower_bound_is_the_rate_limiters_input_estimate_at_the_batch_rate() -> None:
    assert input_tokens(400) == TokenEstimate().estimate(400, 0) == 100
    tokens, nano = lower_bound_nano_usd([(400, 2.0), (40, 0.5)], discount=Decimal("0.5"))
    # 100 tokens at 2 USD/Mtok, 10 at 0.5, both halved: 100 * 1000 + 10 * 250 nano-USD
    assert (tokens, nano) == (110, 100_000 + 2_500)
    assert lower_bound_nano_usd([], discount=0) == (0, 0)
