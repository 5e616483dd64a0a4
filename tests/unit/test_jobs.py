"""The job lifecycle: the transition table is the only source of legal moves."""

from __future__ import annotations

from typing import cast

import pytest

from daemon.domain import jobs
from daemon.domain.jobs import (
    STATUSES,
    TERMINAL,
    TRANSITIONS,
    Status,
    can_transition,
    ending_for,
    sources_of,
)

# Every move the daemon makes, and who makes it (docs/architecture.md draws them).
MOVES = {
    ("scheduled", "cancelling"),  # API records a cancel of a template
    ("validating", "queued"), ("validating", "failed"),  # validator
    ("validating", "cancelling"), ("validating", "expired"),
    ("queued", "running"), ("queued", "failed"),  # scheduler admits, or its model is gone
    ("queued", "cancelling"), ("queued", "expired"),
    ("running", "finalizing"), ("running", "completed"),  # supervisor
    ("running", "queued"),  # restart or a dead supervisor
    ("running", "cancelling"), ("running", "expired"),
    ("finalizing", "completed"),
    ("cancelling", "cancelled"),
}


def test_every_status_has_a_row_in_the_table() -> None:
    assert set(TRANSITIONS) == set(STATUSES)
    assert all(targets <= set(STATUSES) for targets in TRANSITIONS.values())


def test_the_table_holds_exactly_the_moves_the_daemon_makes() -> None:
    assert {(a, b) for a, targets in TRANSITIONS.items() for b in targets} == MOVES


@pytest.mark.parametrize(("current", "new"), [
    # The five moves the code once made against the table, each decided: the first
    # three and the last are gone from the code; `scheduled -> cancelling` is legal.
    ("running", "cancelled"), ("cancelling", "expired"), ("finalizing", "queued"),
    ("completed", "running"), ("cancelled", "queued"), ("failed", "queued"),
    ("queued", "completed"), ("queued", "cancelled"), ("scheduled", "cancelled"),
    ("scheduled", "running"), ("cancelling", "running"), ("queued", "queued"),
    ("nonsense", "queued"), ("queued", "nonsense"),
])
def test_other_transitions_are_refused(current: str, new: str) -> None:
    assert not can_transition(current, cast(Status, new))  # "nonsense" too


@pytest.mark.parametrize("status", sorted(TERMINAL))
def test_terminal_statuses_lead_nowhere(status: str) -> None:
    assert not any(can_transition(status, s) for s in STATUSES)


@pytest.mark.parametrize(("target", "sources"), [
    ("cancelling", {"scheduled", "validating", "queued", "running"}),
    ("cancelled", {"cancelling"}),
    ("expired", {"validating", "queued", "running"}),
    ("completed", {"running", "finalizing"}),
    ("scheduled", set()),
])
def test_sources_of(target: Status, sources: set[str]) -> None:
    assert sources_of(target) == sources


@pytest.mark.parametrize(("current", "wanted", "ends"), [
    ("running", "completed", "completed"), ("cancelling", "completed", "cancelled"),
    ("running", "expired", "expired"), ("cancelling", "expired", "cancelled"),
    ("queued", "failed", "failed"), ("cancelling", "failed", "cancelled"),
])
def test_a_recorded_cancel_wins_the_ending(current: str, wanted: Status, ends: str) -> None:
    assert ending_for(current, wanted) == ends


def test_job_terminal_and_template_flags() -> None:
    job = jobs.Job(id="a" * 32, seq=1, workspace_id=1, dialect="relay", name="n", model="m",
                   endpoint="/v1/chat/completions", status="cancelled", priority=0,
                   created_at=0.0)
    assert job.terminal
    assert not job.is_template
    template = jobs.Job(id="b" * 32, seq=2, workspace_id=1, dialect="relay", name="n",
                        model="m", endpoint="/v1/chat/completions", status="scheduled",
                        priority=0, created_at=0.0, cron="0 * * * *")
    assert not template.terminal
    assert template.is_template
