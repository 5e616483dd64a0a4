"""The job state machine and the Relay dialect's view of statuses."""

from __future__ import annotations

import pytest

from daemon.domain import jobs
from daemon.domain.jobs import (
    STATUSES,
    TERMINAL,
    TRANSITIONS,
    can_transition,
    internal_statuses_for_relay,
    relay_status,
)

ALLOWED = [(a, b) for a, targets in TRANSITIONS.items() for b in targets]
REFUSED = [(a, b) for a in STATUSES for b in STATUSES if (a, b) not in ALLOWED]


def test_every_status_has_a_row_in_the_table() -> None:
    assert set(TRANSITIONS) == set(STATUSES)
    assert all(targets <= set(STATUSES) for targets in TRANSITIONS.values())


@pytest.mark.parametrize(("current", "new"), [
    ("queued", "running"), ("running", "completed"), ("running", "queued"),
    ("running", "cancelling"), ("cancelling", "cancelled"), ("scheduled", "cancelled"),
    ("validating", "queued"), ("queued", "cancelled"), ("finalizing", "completed"),
])
def test_lifecycle_transitions_are_allowed(current: str, new: str) -> None:
    assert can_transition(current, new)


@pytest.mark.parametrize(("current", "new"), [
    ("completed", "running"), ("cancelled", "queued"), ("failed", "queued"),
    ("queued", "completed"), ("scheduled", "running"), ("scheduled", "queued"),
    ("cancelling", "running"), ("queued", "queued"), ("running", "running"),
    ("nonsense", "queued"), ("queued", "nonsense"),
])
def test_other_transitions_are_refused(current: str, new: str) -> None:
    assert not can_transition(current, new)


@pytest.mark.parametrize("status", sorted(TERMINAL))
def test_terminal_statuses_lead_nowhere(status: str) -> None:
    assert not any(can_transition(status, s) for s in STATUSES)


def test_table_and_function_agree() -> None:
    assert all(can_transition(a, b) for a, b in ALLOWED)
    assert not any(can_transition(a, b) for a, b in REFUSED)


@pytest.mark.parametrize(("internal", "relay"), [
    ("scheduled", "scheduled"), ("validating", "queued"), ("queued", "queued"),
    ("running", "running"), ("finalizing", "running"), ("cancelling", "running"),
    ("completed", "completed"), ("failed", "failed"), ("expired", "failed"),
    ("cancelled", "canceled"),
])
def test_relay_status_mapping(internal: str, relay: str) -> None:
    assert relay_status(internal) == relay


def test_relay_view_uses_only_seed_names() -> None:
    seed_names = {"queued", "scheduled", "running", "completed", "failed", "canceled"}
    assert {relay_status(s) for s in STATUSES} == seed_names


@pytest.mark.parametrize(("name", "internal"), [
    ("queued", {"validating", "queued"}),
    ("running", {"running", "finalizing", "cancelling"}),
    ("canceled", {"cancelled"}),
    ("scheduled", {"scheduled"}),
    ("completed", {"completed"}),
    ("failed", {"failed", "expired"}),
])
def test_internal_statuses_for_relay(name: str, internal: set[str]) -> None:
    found = internal_statuses_for_relay(name)
    assert found is not None
    assert set(found) == internal


@pytest.mark.parametrize("name", ["cancelled", "in_progress", "finalizing", "", "QUEUED"])
def test_internal_statuses_for_unknown_relay_name(name: str) -> None:
    assert internal_statuses_for_relay(name) is None


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
