"""`Every`: at the first tick, then once every so many seconds of the given `now`."""

from __future__ import annotations

from daemon.domain.every import Every


def test_due_at_the_first_tick_then_once_a_period() -> None:
    every = Every(5.0)
    assert every.due(100.0)
    assert not every.due(100.0) and not every.due(104.9)
    assert every.due(105.0)
    assert not every.due(109.0)


def test_a_late_tick_counts_the_period_from_itself() -> None:
    every = Every(5.0)
    assert every.due(0.0)
    assert every.due(20.0)  # one, not a burst of the periods missed
    assert not every.due(24.0)
    assert every.due(25.0)
