"""The limited-upstream scenarios' pure parts: the fixed-pacing schedule (time stepped by
hand) and the figures computed from the simulator's request log."""

from __future__ import annotations

from typing import Any

import pytest

from bench.fixed_pacing import FixedPacing, tokens_of
from bench.limited import Tally, ideal_s, late_limited_pct, percent


def sent_at(pacing: FixedPacing, now: float, tokens: float = 0) -> float:
    """Send as soon as the schedule lets a request go at or after `now`; when it went."""
    went = now + pacing.wait(now)
    pacing.sent(went, tokens)
    return went


def test_requests_go_evenly_spaced_at_the_rpm() -> None:
    pacing = FixedPacing(rpm=3000, next_at=100.0)
    times = [sent_at(pacing, 100.0) for _ in range(4)]
    assert times == pytest.approx([100.0, 100.02, 100.04, 100.06])


def test_a_late_timer_keeps_the_grid_and_a_lull_restarts_it() -> None:
    pacing = FixedPacing(rpm=3000, next_at=0.0)
    pacing.sent(0.0)
    pacing.sent(0.025)  # 5 ms late: the next slot stays at 0.04, not 0.045
    assert pacing.next_at == pytest.approx(0.04)
    pacing.sent(1.0)  # nothing to send for a while: no catching up in a burst
    assert pacing.next_at == pytest.approx(1.02)


def test_a_429_pauses_all_sending_for_15_s() -> None:
    pacing = FixedPacing(rpm=600, next_at=0.0)
    pacing.sent(0.0)
    pacing.rate_limited(0.05)
    assert pacing.wait(0.05) == pytest.approx(15.0)
    assert pacing.wait(15.05) == 0
    assert sent_at(pacing, 15.05) == pytest.approx(15.05)
    assert pacing.next_at == pytest.approx(15.15)  # then the same pace


def test_a_429_never_shortens_a_pause() -> None:
    pacing = FixedPacing(rpm=600, pause_s=15, next_at=0.0)
    pacing.rate_limited(10.0)
    pacing.rate_limited(5.0)  # an answer that was on the wire
    assert pacing.next_at == 25.0


def test_tpm_spaces_by_the_request_tokens_when_that_is_longer() -> None:
    pacing = FixedPacing(rpm=600, tpm=6000)
    assert pacing.gap(10) == pytest.approx(0.1)  # the rpm's gap
    assert pacing.gap(100) == pytest.approx(1.0)  # 100 of 6,000 tokens a minute
    assert FixedPacing(rpm=None).gap(100) == 0
    assert tokens_of(b"x" * 400) == 100


def log(*calls: tuple[float, int]) -> list[dict[str, Any]]:
    return [{"at": at, "status": status, "model": "sim-small", "prompt": "p"}
            for at, status in calls]


def test_tally_counts_the_429s_and_those_after_the_first_second() -> None:
    calls = log((50.0, 429), (50.0, 200), (50.5, 429), (51.0, 429), (51.2, 200),
                (52.0, 200), (53.0, 200))
    tally = Tally.of(3.0, calls)
    assert (tally.calls, tally.limited) == (7, 3)
    assert tally.limited_pct == pytest.approx(300 / 7)
    assert tally.late_limited_pct == 25.0  # 1 of the 4 calls from 51.0 on


def test_no_calls_or_no_late_calls_give_zero() -> None:
    assert late_limited_pct([]) == 0
    assert late_limited_pct(log((1.0, 429), (1.5, 429))) == 0
    assert Tally.of(1.0, []).limited_pct == 0
    assert percent(1, 0) == 0


def test_the_ideal_is_rows_over_the_limit_in_minutes() -> None:
    assert ideal_s(3000, 3000) == 60
    assert ideal_s(1000, 6000) == 10
