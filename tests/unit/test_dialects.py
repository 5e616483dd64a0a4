"""The dialect registry: detection, status names and filters, ids, unrun rows, prices."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest

from daemon.dialects import DIALECTS, Capability, detect, event_view, listed, statuses_for
from daemon.dialects.relay.render import relay_status
from daemon.domain.jobs import STATUSES, Job


def job(**overrides: Any) -> Job:
    fields: dict[str, Any] = {"id": "a" * 32, "seq": 1, "workspace_id": 1, "dialect": "relay",
                              "name": "n", "model": "m", "endpoint": "/v1/chat/completions",
                              "status": "queued", "priority": 0, "created_at": 0.0}
    return Job(**(fields | overrides))


def test_the_registry_is_keyed_by_each_dialects_name() -> None:
    assert {name: d.name for name, d in DIALECTS.items()} == {
        "relay": "relay", "openai": "openai", "anthropic": "anthropic"}


@pytest.mark.parametrize(("body", "name"), [
    ({"endpoint": "/v1/chat/completions"}, "openai"), ({"input_file_id": "f"}, "openai"),
    ({"completion_window": "24h"}, "openai"), ({"model": "m", "requests": []}, "relay"),
    ({}, "relay"), ([], "relay"), ("text", "relay"), (None, "relay"),
])
def test_detect(body: Any, name: str) -> None:
    """Between the dialects sharing `POST /v1/batches`."""
    assert detect(body, [DIALECTS["relay"], DIALECTS["openai"]]).name == name


@pytest.mark.parametrize(("internal", "relay"), [
    ("scheduled", "scheduled"), ("validating", "queued"), ("queued", "queued"),
    ("running", "running"), ("finalizing", "running"), ("cancelling", "running"),
    ("completed", "completed"), ("failed", "failed"), ("cancelled", "canceled"),
])
def test_relay_status_names(internal: str, relay: str) -> None:
    assert DIALECTS["relay"].status_name(internal) == relay == relay_status(internal)


def test_an_expired_job_reads_completed_as_a_relay_job_and_failed_as_another() -> None:
    """A Relay job expires only when its deadline passes: it ended completed (its unrun
    rows failed deadline_passed). Another dialect's expired batch, shown in Relay's
    words (the TUI's events), reads failed."""
    assert DIALECTS["relay"].status_name("expired") == "completed"
    assert relay_status("expired") == "failed"


def test_relay_view_uses_only_the_seed_names() -> None:
    seed_names = {"queued", "scheduled", "running", "completed", "failed", "canceled"}
    assert {DIALECTS["relay"].status_name(s) for s in STATUSES} == seed_names


@pytest.mark.parametrize(("internal", "shown"), [
    ("validating", "validating"), ("queued", "in_progress"), ("running", "in_progress"),
    ("finalizing", "finalizing"), ("cancelling", "cancelling"), ("cancelled", "cancelled"),
    ("expired", "expired"),
])
def test_openai_status_names(internal: str, shown: str) -> None:
    assert DIALECTS["openai"].status_name(internal) == shown


@pytest.mark.parametrize(("name", "internal"), [
    ("queued", {"validating", "queued"}), ("running", {"running", "finalizing", "cancelling"}),
    ("canceled", {"cancelled"}), ("scheduled", {"scheduled"}),
    ("completed", {"completed", "expired"}),  # the Relay names come first: a deadline's
    ("failed", {"failed"}),
    ("in_progress", {"queued", "running"}), ("validating", {"validating"}),
    ("cancelling", {"cancelling"}), ("cancelled", {"cancelled"}), ("expired", {"expired"}),
    ("finalizing", {"finalizing"}),
])
def test_status_filters(name: str, internal: set[str]) -> None:
    found = statuses_for(name)
    assert found is not None and set(found) == internal


@pytest.mark.parametrize("name", ["", "QUEUED", "done", "in progress"])
def test_unknown_status_filters(name: str) -> None:
    assert statuses_for(name) is None


def test_a_status_filter_asks_the_listed_dialects_first() -> None:
    assert statuses_for("completed") == ("completed", "expired")  # the Relay name
    assert statuses_for("completed", first=["openai"]) == ("completed",)
    assert statuses_for("canceled", first=["openai"]) == ("cancelled",)  # Relay's, still


@pytest.mark.parametrize(("name", "dialects"), [
    (None, ("openai",)), ("openai", ("openai",)), ("relay", ("relay",)),
    ("all", ("relay", "openai", "anthropic")), ("", None), ("ALL", None),
    ("anthropic", ("anthropic",)), ("claude", None),
])
def test_which_dialects_the_list_shows(name: str | None,
                                       dialects: tuple[str, ...] | None) -> None:
    assert listed(name) == dialects


def test_ids() -> None:
    assert re.fullmatch(r"[0-9a-f]{32}", DIALECTS["relay"].new_id())
    assert re.fullmatch(r"batch_[0-9a-f]{32}", DIALECTS["openai"].new_id())


@pytest.mark.parametrize(("name", "ending", "code"), [
    ("relay", "cancelled", "canceled"), ("relay", "expired", "deadline_passed"),
    ("openai", "cancelled", "batch_cancelled"), ("openai", "expired", "batch_expired"),
])
def test_rows_that_never_ran(name: str, ending: str, code: str) -> None:
    assert DIALECTS[name].unrun_error(ending)[0] == code


def test_discount() -> None:
    assert DIALECTS["openai"].discount(job(dialect="openai")) == Decimal("0.5")
    assert DIALECTS["openai"].discount(job(dialect="openai", tier="expedited")) == 0
    assert DIALECTS["relay"].discount(job()) == 0


def test_admission() -> None:
    relay, openai = DIALECTS["relay"], DIALECTS["openai"]
    assert relay.admission_problem(job(model="gone"), frozenset({"m"})) == (
        "model 'gone' is no longer configured")
    assert relay.admission_problem(job(), frozenset({"m"})) is None
    assert openai.admission_problem(job(dialect="openai", model="gone"), frozenset()) is None


def test_result_files_are_the_openai_dialects() -> None:
    files = Capability.RESULT_FILES
    assert [files in d.capabilities for d in DIALECTS.values()] == [False, True, False]


def test_event_view_carries_the_relay_status() -> None:
    view = event_view(job(status="cancelled", dialect="openai"))
    assert (view["status"], view["relay_status"], view["dialect"]) == (
        "cancelled", "canceled", "openai")
