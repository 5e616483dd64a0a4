"""A Relay job's deadline in the TUI: read from the job's shape and its events, and the
detail pane's line (in how long, met or passed, and at risk while it runs)."""

from __future__ import annotations

from relaytui.models import JobView
from relaytui.widgets.job_detail import _deadline_line

NOW = 1_791_105_164.0  # 2026-10-04T09:12:44Z


def line(view: JobView, now: float = NOW) -> str:
    [(facts, _)] = _deadline_line(view, now)
    return " | ".join(facts)


def test_the_relay_shape_and_the_events_carry_it() -> None:
    view = JobView.from_relay({"id": "a" * 32, "deadline": "2026-10-04T10:12:44Z",
                               "deadline_at_risk": True})
    assert (view.deadline_at, view.deadline_at_risk) == (NOW + 3600, True)
    event = JobView.from_event({"id": "a" * 32, "deadline_at": NOW + 60,
                                "deadline_at_risk": False})
    assert (event.deadline_at, event.deadline_at_risk) == (NOW + 60, False)
    assert _deadline_line(JobView(id="b" * 32), NOW) == []


def test_in_how_long_and_at_risk_while_it_runs() -> None:
    view = JobView(id="a" * 32, status="running", deadline_at=NOW + 3600,
                   deadline_at_risk=True)
    shown = line(view)
    assert "deadline" in shown and "(in 1h" in shown and "at risk" in shown


def test_met_or_passed_once_it_ended() -> None:
    met = JobView(id="a" * 32, status="completed", deadline_at=NOW - 60,
                  finished_at=NOW - 120, deadline_at_risk=True)
    assert "(met)" in line(met) and "at risk" not in line(met)
    passed = JobView(id="a" * 32, status="completed", deadline_at=NOW - 60,
                     finished_at=NOW - 59)
    assert "(passed)" in line(passed)
    cancelled = JobView(id="a" * 32, status="canceled", deadline_at=NOW - 60,
                        finished_at=NOW - 120)
    assert "(the job ended before it)" in line(cancelled)
