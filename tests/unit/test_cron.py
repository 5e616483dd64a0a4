"""Cron for templates: 5 fields, UTC, computed from a given instant; missed ticks collapse."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from daemon.api.middleware import status_of
from daemon.domain.cron import check, due_tick, next_after
from daemon.domain.errors import InvalidRequest


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize("expr", ["* * * * *", "0 * * * *", "*/5 9-17 * * 1-5",
                                  "30 2 29 2 *", "0 0 1 1 *"])
def test_five_field_expressions_pass(expr: str) -> None:
    check(expr)


@pytest.mark.parametrize("expr", ["0 0 * * * *", "0 0 0 * * * 2030", "@daily", "@hourly",
                                  "0 0 31 2 *", "0 0 30 2 *", "61 * * * *", "* 24 * * *",
                                  "", "* * * *", "a b c d e"])
def test_bad_expressions_are_refused(expr: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        check(expr)
    assert (info.value.param, status_of(info.value), info.value.code) == ("cron", 400,
                                                                     "invalid_cron")


def test_next_after_is_utc() -> None:
    assert next_after("0 9 * * *", ts("2026-10-04T08:59:59")) == ts("2026-10-04T09:00:00")
    assert next_after("0 9 * * *", ts("2026-10-04T09:00:01")) == ts("2026-10-05T09:00:00")


def test_next_after_is_strictly_after_a_tick() -> None:
    assert next_after("0 * * * *", ts("2026-10-04T09:00:00")) == ts("2026-10-04T10:00:00")


def test_next_after_returns_a_float() -> None:
    assert isinstance(next_after("* * * * *", ts("2026-10-04T09:00:30")), float)


def test_not_due_before_next_run_at() -> None:
    tick = ts("2026-10-04T10:00:00")
    assert due_tick("0 * * * *", next_run_at=tick, now=tick - 0.001) is None


def test_due_at_the_tick() -> None:
    tick = ts("2026-10-04T10:00:00")
    assert due_tick("0 * * * *", next_run_at=tick, now=tick) == (tick, ts("2026-10-04T11:00:00"))


def test_due_a_little_after_the_tick() -> None:
    tick = ts("2026-10-04T10:00:00")
    assert due_tick("0 * * * *", next_run_at=tick,
                    now=tick + 5) == (tick, ts("2026-10-04T11:00:00"))


def test_missed_ticks_collapse_into_one_catch_up() -> None:
    missed = ts("2026-10-04T10:00:00")
    now = ts("2026-10-04T15:20:00")  # five more ticks passed while the daemon was down
    tick, following = due_tick("0 * * * *", next_run_at=missed, now=now)  # type: ignore[misc]
    assert tick == missed
    assert following == ts("2026-10-04T16:00:00")
    assert due_tick("0 * * * *", next_run_at=following, now=now) is None


@pytest.mark.parametrize("expr", ["5-1 * * * *", "0 23-1 * * *", "0 0 * * 5-1/2"])
def test_ranges_that_run_backwards_are_refused(expr: str) -> None:
    with pytest.raises(InvalidRequest, match="backwards"):
        check(expr)
