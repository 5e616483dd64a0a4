"""Rendering for clients: seed 000's job and result shapes, dead-letter entries, events."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.dialects import event_view
from daemon.dialects.relay.render import (
    assistant_content,
    dead_letter_entry,
    relay_job,
    relay_result,
)
from daemon.domain.jobs import Job, RowRecord
from daemon.domain.stamps import iso

CREATED = 1_791_105_164.0  # 2026-10-04T09:12:44Z
JOB_ID = "9f2c1b7e4a8d4e51b0c6d3f2a1e5c7b9"


def make_job(**overrides: Any) -> Job:
    fields: dict[str, Any] = {
        "id": JOB_ID, "seq": 7, "workspace_id": 1, "dialect": "relay",
        "name": "Review sentiment — October", "model": "gpt-4o-mini",
        "endpoint": "/v1/chat/completions", "status": "running", "priority": 5,
        "created_at": CREATED, "total": 2, "completed": 1, "failed": 0,
    }
    return Job(**(fields | overrides))


def make_row(**overrides: Any) -> RowRecord:
    fields: dict[str, Any] = {
        "id": 1, "position": 1, "custom_id": "r-1", "status": "completed",
        "body": {"messages": [{"role": "user", "content": "Classify: great product!"}]},
        "response": {"choices": [{"message": {"role": "assistant", "content": "positive"}}]},
    }
    return RowRecord(**(fields | overrides))


def test_iso() -> None:
    assert iso(CREATED) == "2026-10-04T09:12:44Z"
    assert iso(CREATED + 0.9) == "2026-10-04T09:12:44Z"
    assert iso(0) == "1970-01-01T00:00:00Z"
    assert iso(None) is None


def test_relay_job_seed_fields() -> None:
    view = relay_job(make_job(started_at=CREATED + 60))
    assert view["id"] == JOB_ID
    assert view["object"] == "batch"
    assert view["status"] == "running"
    assert view["model"] == "gpt-4o-mini"
    assert (view["total"], view["completed"], view["failed"]) == (2, 1, 0)
    assert view["created_at"] == "2026-10-04T09:12:44Z"
    assert view["started_at"] == "2026-10-04T09:13:44Z"
    assert view["completed_at"] is None
    assert view["error"] is None
    assert view["next_run_at"] is None
    assert view["priority"] == 5
    assert "last_run_id" not in view


def test_relay_job_maps_status_and_finish_time() -> None:
    view = relay_job(make_job(status="cancelled", finished_at=CREATED + 437, dead_letter=3,
                              webhook_url="https://hooks.example.com/r",
                              webhook={"status_code": 200, "error": None}))
    assert view["status"] == "canceled"
    assert view["completed_at"] == "2026-10-04T09:20:01Z"
    assert view["dead_letter"] == 3
    assert view["webhookUrl"] == "https://hooks.example.com/r"
    assert view["webhook"] == {"status_code": 200, "error": None}


@pytest.mark.parametrize(("internal", "shown"), [("validating", "queued"),
                                                 ("finalizing", "running"),
                                                 ("cancelling", "running"),
                                                 ("expired", "completed")])
def test_relay_job_never_shows_internal_names(internal: str, shown: str) -> None:
    # A Relay job expires only when its deadline passes: it reads completed, its unrun
    # rows failed (failing rows never fail a Relay job).
    assert relay_job(make_job(status=internal))["status"] == shown


def test_a_deadline_shows_with_what_the_estimate_said_at_submit() -> None:
    view = relay_job(make_job(deadline_at=CREATED + 3600, deadline_drain_s=5400.0))
    assert view["deadline"] == "2026-10-04T10:12:44Z"
    assert view["deadline_at_risk"] is True
    assert view["deadline_estimate"] == {"drain_s": 5400.0,
                                         "finishes_at": "2026-10-04T10:42:44Z"}
    assert "deadline" not in relay_job(make_job())


def test_relay_job_template() -> None:
    view = relay_job(make_job(status="scheduled", cron="0 * * * *",
                              next_run_at=CREATED + 3600, last_run_id="b" * 32))
    assert view["status"] == "scheduled"
    assert view["cron"] == "0 * * * *"
    assert view["next_run_at"] == "2026-10-04T10:12:44Z"
    assert view["last_run_id"] == "b" * 32


def test_relay_job_run_of_a_template() -> None:
    view = relay_job(make_job(template_id="c" * 32))
    assert view["template_id"] == "c" * 32
    assert view["cron"] is None


def test_relay_result_content() -> None:
    assert relay_result(make_row()) == {"custom_id": "r-1", "content": "positive"}


def test_relay_result_error() -> None:
    row = make_row(custom_id="r-2", status="failed", response=None,
                   error="upstream_error: 500")
    assert relay_result(row) == {"custom_id": "r-2", "error": "upstream_error: 500"}


def test_relay_result_failed_without_message_still_has_an_error() -> None:
    result = relay_result(make_row(status="failed", response=None, error=None))
    assert result == {"custom_id": "r-1", "error": "failed"}


def test_relay_result_never_has_both() -> None:
    result = relay_result(make_row(status="failed", error="x"))
    assert "content" not in result


@pytest.mark.parametrize(("response", "content"), [
    ({"choices": [{"message": {"role": "assistant", "content": "hello"}}]}, "hello"),
    ({"choices": [{"message": {"role": "assistant", "content": None,
                               "tool_calls": []}}]}, None),
    ({"choices": [{"text": "completion text", "index": 0}]}, "completion text"),
    ({"object": "list", "data": [{"embedding": [0.1, 0.2], "index": 0}]}, [0.1, 0.2]),
    ({"choices": []}, None),
    ({"choices": ["x"]}, None),
    ({"data": []}, None),
    ({"data": "nope"}, None),
    ({"unexpected": True}, None),
    (None, None),
    ([1, 2], None),
    ("text", None),
])
def test_assistant_content(response: Any, content: Any) -> None:
    assert assistant_content(response) == content


def test_dead_letter_entry() -> None:
    log: tuple[dict[str, Any], ...] = (
        {"model": "gpt-4o-mini", "status_code": 503, "error": "503", "duration_ms": 5,
         "started_at": CREATED},
        {"model": "gpt-4o-mini", "status_code": 503, "error": "503", "duration_ms": 6,
         "started_at": CREATED + 1},
        {"model": "backup", "status_code": None, "error": "timeout", "duration_ms": 10_000,
         "started_at": CREATED + 2},
    )
    row = make_row(custom_id="r-9", status="failed", response=None, attempts=3,
                   status_code=None, error="timeout", dead_letter=True, attempt_log=log)
    entry = dead_letter_entry(row)
    assert entry["custom_id"] == "r-9"
    assert entry["attempts"] == 3
    assert entry["models"] == ["gpt-4o-mini", "backup"]  # in order tried, once each
    assert entry["last_error"] == "timeout"
    assert entry["status_code"] is None
    assert entry["messages"] == [{"role": "user", "content": "Classify: great product!"}]
    assert entry["body"] == row.body
    assert entry["attempt_log"] == [a | {"started_at": at} for a, at in zip(log, (
        "2026-10-04T09:12:44.000Z", "2026-10-04T09:12:45.000Z", "2026-10-04T09:12:46.000Z"),
        strict=True)]  # ISO 8601, not the store's Unix seconds
    assert entry["executor_calls"] == []  # not a tool-calling row


def test_a_tool_rows_executor_calls_are_apart_from_its_attempts() -> None:
    calls = tuple({"round": 1, "executor": "http", "status_code": None,
                   "error": "connection: refused", "duration_ms": 3, "started_at": CREATED + n}
                  for n in range(3))
    row = make_row(custom_id="t-1", status="failed", response=None, attempts=1,
                   dead_letter=True, executor_calls=calls,
                   attempt_log=({"model": "gpt-4o-mini", "status_code": 200, "error": None,
                                 "duration_ms": 5, "started_at": CREATED},))
    entry = dead_letter_entry(row)
    assert len(entry["attempt_log"]) == entry["attempts"] == 1
    assert [c["started_at"] for c in entry["executor_calls"]] == [
        "2026-10-04T09:12:44.000Z", "2026-10-04T09:12:45.000Z", "2026-10-04T09:12:46.000Z"]
    assert entry["executor_calls"][0]["error"] == "connection: refused"


def test_event_view() -> None:
    job = make_job(status="cancelling", tier="expedited", dead_letter=1,
                   started_at=CREATED + 1)
    view = event_view(job)
    assert view["id"] == JOB_ID
    assert view["dialect"] == "relay"
    assert view["status"] == "cancelling"
    assert view["relay_status"] == "running"
    assert view["tier"] == "expedited"
    assert (view["total"], view["completed"], view["failed"], view["dead_letter"]) == (2, 1, 0, 1)
    assert view["created_at"] == CREATED  # raw seconds: the TUI formats them
    assert view["started_at"] == CREATED + 1
    assert view["finished_at"] is None


def test_an_anthropic_messages_text_is_its_content() -> None:
    """A Message Batch's row (an Anthropic `Message`) reads as its text blocks in
    Relay's `/results`; a tool_use turn has no text."""
    message = {"type": "message", "role": "assistant", "content": [
        {"type": "text", "text": "positive"}, {"type": "tool_use", "id": "t", "name": "f",
                                               "input": {}}, {"type": "text", "text": "!"}]}
    assert assistant_content(message) == "positive!"
    assert assistant_content({"type": "message", "content": [
        {"type": "tool_use", "id": "t", "name": "f", "input": {}}]}) == ""
