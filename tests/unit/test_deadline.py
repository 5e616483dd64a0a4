"""A Relay job's deadline as pure functions: the durations and times it is given in,
the refusals naming the field, and the estimate's verdict."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from daemon.domain import deadline
from daemon.domain.errors import InvalidRequest

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("30m", 1800), ("6h", 21600), ("2d", 172800), ("1h30m", 5400),
    ("1d2h3m4s", 93784), (" 6H ", 21600),
])
def test_durations(text: str, seconds: float) -> None:
    assert deadline.duration_s(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "6", "30m1h", "1.5h", "-1h", "6 hours", "PT6H"])
def test_what_is_not_a_duration(text: str) -> None:
    assert deadline.duration_s(text) is None


def test_a_duration_counts_from_now_and_a_time_is_taken_as_it_is() -> None:
    assert deadline.parse_deadline("6h", now=NOW) == NOW + 6 * 3600
    assert deadline.parse_deadline("2026-12-06T18:00:00Z", now=NOW) == NOW + 6 * 3600
    assert deadline.parse_deadline("2026-12-06T19:00:00+01:00", now=NOW) == NOW + 6 * 3600
    assert deadline.parse_deadline(None, now=NOW) is None


@pytest.mark.parametrize(("value", "words"), [
    ("soon", "neither an RFC 3339 time with its offset"),
    ("2026-12-06T18:00:00", "neither an RFC 3339 time with its offset"),
    ("2026-12-06T11:00:00Z", "has passed already"),
    ("0s", "has passed already"),
    ("367d", "more than a year away"),
    (3600, "must be an RFC 3339 time"),
    ("  ", "must be an RFC 3339 time"),
])
def test_refusals_name_the_field_and_say_why(value: object, words: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        deadline.parse_deadline(value, now=NOW)
    assert refused.value.param == "deadline" and words in str(refused.value)


def test_strict_is_a_boolean() -> None:
    assert deadline.parse_strict(None) is False and deadline.parse_strict(True) is True
    with pytest.raises(InvalidRequest) as refused:
        deadline.parse_strict("true")
    assert refused.value.param == "strict_deadline"


def test_at_risk_when_the_estimate_runs_past_it() -> None:
    assert deadline.at_risk(NOW + 60, drain_s=61, now=NOW)
    assert not deadline.at_risk(NOW + 60, drain_s=60, now=NOW)


def test_the_strict_refusal_names_both_figures() -> None:
    refused = deadline.refusal(NOW + 3600, drain_s=5400.4, now=NOW)
    assert (refused.param, refused.code) == ("deadline", "cannot_meet_deadline")
    assert "5400 s of running" in str(refused) and "3600 s away" in str(refused)
