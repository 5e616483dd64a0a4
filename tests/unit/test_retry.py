"""The retry policy: backoff with full jitter, Retry-After parsing, and which one wins."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from daemon.config import RetryConfig
from daemon.domain.retry import backoff_delay, is_transient_status, parse_retry_after, retry_delay

NOW = 1_700_000_000.0


class TopRng(random.Random):
    """Jitter that always picks the top of the range, so the ceiling is visible."""

    def uniform(self, a: float, b: float) -> float:
        return b


class BottomRng(random.Random):
    def uniform(self, a: float, b: float) -> float:
        return a


def http_date(unix: float) -> str:
    return format_datetime(datetime.fromtimestamp(unix, tz=UTC), usegmt=True)


@pytest.mark.parametrize("code", [408, 409, 429, 500, 502, 503, 504, 599])
def test_transient_statuses(code: int) -> None:
    assert is_transient_status(code)


@pytest.mark.parametrize("code", [200, 301, 400, 401, 403, 404, 422, 600])
def test_permanent_statuses(code: int) -> None:
    assert not is_transient_status(code)


def test_backoff_ceiling_doubles_per_attempt() -> None:
    ceilings = [backoff_delay(n, base=0.5, cap=100, rng=TopRng()) for n in range(1, 6)]
    assert ceilings == [0.5, 1.0, 2.0, 4.0, 8.0]


def test_backoff_is_capped() -> None:
    assert backoff_delay(10, base=0.5, cap=30, rng=TopRng()) == 30
    assert backoff_delay(10_000, base=0.5, cap=30, rng=TopRng()) == 30


def test_full_jitter_can_reach_zero() -> None:
    assert backoff_delay(5, base=0.5, cap=30, rng=BottomRng()) == 0


def test_seeded_jitter_stays_in_range_and_spreads() -> None:
    rng = random.Random(42)
    for attempt in range(1, 12):
        ceiling = min(30, 0.5 * 2 ** (attempt - 1))
        delays = [backoff_delay(attempt, base=0.5, cap=30, rng=rng) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays)
        assert max(delays) - min(delays) > ceiling / 2  # full jitter, not a fixed step


def test_seeded_jitter_is_reproducible() -> None:
    first = [backoff_delay(3, base=1, cap=10, rng=random.Random(7)) for _ in range(3)]
    again = [backoff_delay(3, base=1, cap=10, rng=random.Random(7)) for _ in range(3)]
    assert first == again


@pytest.mark.parametrize(
    ("value", "seconds"), [("2", 2.0), ("0", 0.0), (" 120 ", 120.0), ("1.5", 1.5), ("-3", 0.0)]
)
def test_retry_after_seconds(value: str, seconds: float) -> None:
    assert parse_retry_after(value, now=NOW) == seconds


def test_retry_after_http_date_is_relative_to_now() -> None:
    assert parse_retry_after(http_date(NOW + 30), now=NOW) == pytest.approx(30)


def test_retry_after_http_date_in_the_past_is_zero() -> None:
    assert parse_retry_after(http_date(NOW - 300), now=NOW) == 0


def test_retry_after_date_without_weekday() -> None:
    assert parse_retry_after(http_date(NOW + 10)[5:], now=NOW) == pytest.approx(10)


@pytest.mark.parametrize("value", [None, "", "  ", "soon", "nan", "inf", "Wed, 99 Foo 20"])
def test_retry_after_garbage_is_none(value: str | None) -> None:
    assert parse_retry_after(value, now=NOW) is None


def test_retry_delay_prefers_retry_after() -> None:
    policy = RetryConfig(backoff_base_s=100, backoff_cap_s=100)
    assert retry_delay(1, retry_after="2", policy=policy, now=NOW, rng=TopRng()) == 2


def test_retry_delay_caps_retry_after() -> None:
    policy = RetryConfig(retry_after_cap_s=60)
    assert retry_delay(1, retry_after="3600", policy=policy, now=NOW, rng=TopRng()) == 60
    later = http_date(NOW + 3600)
    assert retry_delay(1, retry_after=later, policy=policy, now=NOW, rng=TopRng()) == 60


def test_retry_delay_falls_back_to_backoff() -> None:
    policy = RetryConfig(backoff_base_s=0.5, backoff_cap_s=3)
    delays = [
        retry_delay(n, retry_after="junk", policy=policy, now=NOW, rng=TopRng()) for n in (1, 2, 5)
    ]
    assert delays == [0.5, 1.0, 3.0]
    assert retry_delay(2, retry_after=None, policy=policy, now=NOW, rng=TopRng()) == 1.0
