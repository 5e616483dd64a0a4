"""`relaytui.models`: one job shape for both dialects, and how it is told."""

from __future__ import annotations

from typing import Any

import pytest

from relaytui.models import (
    FAILED_ROWS,
    STATUS_FILTERS,
    JobView,
    Throughput,
    age_text,
    average_rate,
    dialect_of,
    duration_text,
    eta_seconds,
    key_hint,
    order_key,
    parse_time,
    progress_bar,
    rate_text,
)


def event(**overrides: Any) -> dict[str, Any]:
    data = {"id": "a" * 32, "dialect": "relay", "name": "Reviews", "model": "gpt-4o-mini",
            "status": "running", "relay_status": "running", "priority": 5, "tier": "standard",
            "total": 100, "completed": 40, "failed": 2, "dead_letter": 1,
            "created_at": 1000.5, "started_at": 1010.25, "finished_at": None, "cron": None,
            "next_run_at": None, "template_id": None, "error": None}
    return {**data, **overrides}


def test_an_event_becomes_a_view() -> None:
    view = JobView.from_event(event())
    assert (view.status, view.done, view.priority_text) == ("running", 42, "5")
    assert (view.created_at, view.started_at, view.dead_letter) == (1000.5, 1010.25, 1)
    assert not view.terminal


def test_a_cancelling_job_says_so_though_the_relay_view_says_running() -> None:
    assert JobView.from_event(event(status="cancelling")).status == "cancelling"
    assert JobView.from_event(event(status="cancelled", relay_status="canceled")).terminal


def test_a_relay_job_from_the_api() -> None:
    view = JobView.from_relay({"id": "b" * 32, "object": "batch", "name": "n",
                               "status": "completed",
                             "model": "m", "priority": 1, "total": 3, "completed": 2,
                             "failed": 1, "dead_letter": 1, "created_at": "2026-10-04T09:12:44Z",
                             "started_at": None, "completed_at": "2026-10-04T09:13:00Z",
                             "webhookUrl": "https://x.example/h",
                             "webhook": {"status_code": 200}, "cron": None})
    assert view.created_at == parse_time("2026-10-04T09:12:44+00:00")
    assert view.finished_at is not None and view.created_at is not None
    assert view.finished_at - view.created_at == 16
    assert view.terminal and view.webhook == {"status_code": 200}
    assert view.webhook_url == "https://x.example/h"


def test_an_openai_batch_object_is_normalised() -> None:
    view = JobView.from_openai({
        "id": "batch_" + "c" * 32, "object": "batch", "status": "in_progress",
        "input_file_id": "file-1", "created_at": 1000, "in_progress_at": 1005,
        "completed_at": None, "cancelled_at": None, "model": "gpt-4o-mini",
        "metadata": {"name": "From the SDK"}, "priority": "expedited",
        "request_counts": {"total": 10, "completed": 4, "failed": 1}, "errors": None})
    assert (view.dialect, view.status, view.name) == ("openai", "running", "From the SDK")
    assert (view.total, view.done, view.dead_letter) == (10, 5, None)
    assert view.priority_text == "exp" and view.started_at == 1005.0


def test_openai_errors_and_end_times() -> None:
    view = JobView.from_batch({
        "id": "batch_x", "status": "failed", "created_at": 1, "failed_at": 9,
        "request_counts": {"total": 0, "completed": 0, "failed": 0},
        "errors": {"data": [{"code": "empty_file", "message": "The file has no lines."}]}})
    assert view.status == "failed" and view.finished_at == 9.0
    assert view.error == "The file has no lines." and view.name == "batch None"


def message_batch(status: str, **counts: int) -> dict[str, Any]:
    return {"id": "msgbatch_" + "e" * 24, "type": "message_batch",
            "processing_status": status, "created_at": "2026-10-04T09:12:44.125000Z",
            "ended_at": "2026-10-04T09:13:00.000000Z" if status == "ended" else None,
            "cancel_initiated_at": None, "archived_at": None,
            "request_counts": {"processing": 0, "succeeded": 0, "errored": 0,
                               "canceled": 0, "expired": 0} | counts,
            "expires_at": "2026-10-05T09:12:44.125000Z", "results_url": None}


@pytest.mark.parametrize(("batch", "status"), [
    (message_batch("in_progress", processing=4), "queued"),
    (message_batch("in_progress", processing=3, succeeded=1), "running"),
    (message_batch("canceling", processing=3, succeeded=1), "cancelling"),
    (message_batch("ended", succeeded=3, errored=1), "completed"),
    (message_batch("ended", succeeded=1, expired=3), "failed"),
])
def test_a_message_batch_reads_as_how_it_stands(batch: dict[str, Any], status: str) -> None:
    view = JobView.from_batch(batch)
    assert (view.dialect, view.status) == ("anthropic", status)
    assert view.total == 4 and view.done == sum(
        batch["request_counts"][k] for k in ("succeeded", "errored", "canceled", "expired"))


def test_a_cancelled_message_batch_counts_its_unrun_requests() -> None:
    batch = message_batch("ended", succeeded=1, errored=1, canceled=2)
    batch["cancel_initiated_at"] = "2026-10-04T09:12:50.000000Z"
    view = JobView.from_batch(batch)
    assert (view.status, view.completed, view.failed, view.canceled, view.ran) == (
        "canceled", 1, 3, 2, 2)
    assert view.finished_at is not None and view.created_at is not None
    assert view.name == "message batch of 4 requests"


def test_each_answer_is_read_by_its_dialects_parser_chosen_by_the_id() -> None:
    # A Relay job is never read as OpenAI's, whatever keys it holds, nor the reverse.
    relay: dict[str, Any] = {"id": "d" * 32, "status": "running", "total": 9, "completed": 4,
                             "request_counts": {"total": 1, "completed": 1, "failed": 0}}
    openai: dict[str, Any] = {"id": "batch_" + "d" * 32, "status": "in_progress", "total": 5,
                              "request_counts": {"total": 10, "completed": 3, "failed": 0}}
    assert (dialect_of(relay["id"]), dialect_of(openai["id"])) == ("relay", "openai")
    assert dialect_of("msgbatch_" + "f" * 24) == "anthropic"
    assert JobView.from_batch(relay) == JobView.from_relay(relay)
    assert (JobView.from_batch(relay).dialect, JobView.from_batch(relay).total) == ("relay", 9)
    assert JobView.from_batch(openai) == JobView.from_openai(openai)
    assert (JobView.from_batch(openai).dialect, JobView.from_batch(openai).total) == \
        ("openai", 10)


def test_merge_keeps_what_the_newer_view_does_not_say_and_finer_instants() -> None:
    old = JobView.from_event(event(dead_letter=3, created_at=1000.5))
    newer = JobView.from_openai({"id": "batch_" + "a" * 32, "status": "in_progress",
                                 "created_at": 1000, "request_counts": {
                                     "total": 100, "completed": 50, "failed": 2}})
    merged = old.merge(newer)
    assert merged.dead_letter == 3 and merged.completed == 50
    assert merged.created_at == 1000.5


def test_filters_match_status_groups_and_words() -> None:
    view = JobView.from_event(event(status="cancelling"))
    assert view.matches("all", "") and view.matches("running", "review")
    assert view.matches("running", "GPT-4O") and not view.matches("queued", "")
    assert JobView.from_event(event(relay_status="expired")).matches("failed", "")
    assert not view.matches("all", "nothing like it")


def test_running_jobs_come_first_then_newest() -> None:
    running = JobView.from_event(event(id="r", created_at=1.0))
    new = JobView.from_event(event(id="n", relay_status="queued", status="queued",
                                   created_at=9.0))
    old = JobView.from_event(event(id="o", relay_status="completed", created_at=5.0))
    assert sorted([old, new, running], key=order_key) == [running, new, old]


@pytest.mark.parametrize(("done", "total", "text"), [
    (0, 100, "░░░░░░░░░░   0%"), (42, 100, "████░░░░░░  42%"),
    (100, 100, "██████████ 100%"), (0, 0, "░░░░░░░░░░   0%"), (7, 5, "██████████ 100%")])
def test_progress_bar(done: int, total: int, text: str) -> None:
    assert progress_bar(done, total) == text


@pytest.mark.parametrize(("seconds", "age", "duration"), [
    (None, "—", "—"), (-3, "0s", "0s"), (45, "45s", "45s"), (750, "12m", "12m30s"),
    (7500, "2h", "2h05m"), (90000, "1d", "1d01h")])
def test_ages_and_durations(seconds: float | None, age: str, duration: str) -> None:
    assert age_text(seconds) == age
    assert duration_text(seconds) == duration


def test_rates_and_eta() -> None:
    view = JobView.from_event(event(total=100, completed=40, failed=0, started_at=1000.0))
    assert average_rate(view, now=1010.0) == 4.0
    assert eta_seconds(view, 4.0) == 15.0
    assert eta_seconds(view, None) is None and eta_seconds(view, 0.0) is None
    done = JobView.from_event(event(relay_status="completed", finished_at=1020.0,
                                    started_at=1000.0, completed=100, failed=0))
    assert eta_seconds(done, 5.0) is None and average_rate(done, now=99999) == 5.0
    canceled = JobView.from_event(event(relay_status="canceled", completed=10, failed=90,
                                        canceled=90, started_at=1000.0, finished_at=1010.0))
    assert average_rate(canceled, now=0) == 1.0  # the rows the cancel ended never ran
    assert rate_text(None) == "—" and rate_text(3.14159) == "3.1" and rate_text(420.4) == "420"


def test_throughput_samples_and_recent_rate() -> None:
    tracker = Throughput(window=10.0)
    assert tracker.rate() is None
    for at, done in [(0, 0), (1, 5), (2, 15), (2, 99), (4, 25)]:
        tracker.add(at, done)
    assert list(tracker.samples) == [5.0, 10.0, 5.0]  # the repeated instant is ignored
    assert tracker.rate() == 25 / 4
    tracker.add(20, 45)
    assert tracker.rate() == 20 / 16  # older points leave the window
    tracker.add(21, 3)  # counters went back: start over
    assert tracker.rate() is None


def test_key_hint_shows_only_the_public_prefix() -> None:
    assert key_hint("rk_abcdefghSECRETSECRET") == "rk_abcdefg…"
    assert key_hint(None) == "no key"


def test_a_cancelled_job_reads_what_ran_not_100_percent() -> None:
    view = JobView.from_batch({"id": "j", "status": "canceled", "total": 100, "completed": 30,
                             "failed": 70, "canceled": 60})
    assert (view.done, view.ran) == (100, 40)
    assert progress_bar(view.ran, view.total, never_ran=view.canceled or 0) == \
        "████······  40%"
    assert progress_bar(99, 100, never_ran=1) == "█████████·  99%"
    assert progress_bar(3, 10) == "███░░░░░░░  30%"
    assert progress_bar(2, 3) == "██████░░░░  66%"
    assert progress_bar(122, 450, never_ran=328) == "██········  27%"


def test_a_completed_job_with_failed_rows_reads_completed_with_errors() -> None:
    ok = JobView.from_batch({"id": "j", "status": "completed", "total": 3, "completed": 3})
    bad = JobView.from_batch({"id": "j", "status": "completed", "total": 300, "failed": 300})
    assert (ok.shown_status, bad.shown_status) == ("completed", "completed with errors")
    assert bad.status == "completed"  # filters and the API keep relayd's status


@pytest.mark.parametrize(("status", "failed", "canceled", "shown"), [
    ("completed", 3, 0, True),  # completed with errors
    ("running", 1, 0, True),  # failing as it runs
    ("failed", 2, 0, True),
    ("canceled", 5, 3, True),  # 2 ran and failed, 3 never ran
    ("canceled", 3, 3, False),  # every failed row is one the cancel never ran
    ("completed", 0, 0, False),
])
def test_the_failed_rows_filter_shows_every_job_with_a_row_that_failed(
        status: str, failed: int, canceled: int, shown: bool) -> None:
    view = JobView(id="a" * 32, status=status, total=10, failed=failed, canceled=canceled)
    assert view.matches(FAILED_ROWS, "") is shown
    assert view.matches("failed", "") is (status == "failed")  # the job's own status


def test_the_status_filter_cycles_through_failed_rows() -> None:
    assert STATUS_FILTERS.index(FAILED_ROWS) == STATUS_FILTERS.index("failed") + 1
