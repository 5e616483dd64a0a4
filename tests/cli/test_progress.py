"""The job summary shared by both dialects, the progress line, and `watch`'s cadence
(time is passed in; nothing sleeps)."""

from __future__ import annotations

import io

from relaytui.models import JobView, shown_status
from relaytui.progress import (
    STATUS_WIDTH,
    JobSummary,
    eta,
    hms,
    line,
    outcome,
    pace,
    summarize,
    watch,
)

RELAY_JOB = {"id": "9f2c", "object": "batch", "name": "Reviews", "status": "running",
             "model": "gpt-4o-mini", "priority": 5, "total": 300, "completed": 120,
             "failed": 3, "dead_letter": 1, "created_at": "2026-10-04T09:12:44Z"}
OPENAI_BATCH = {"id": "batch_1", "object": "batch", "endpoint": "/v1/embeddings",
                "status": "in_progress", "created_at": 1_791_105_164, "model": None,
                "metadata": {"team": "support"}, "priority": "expedited",
                "request_counts": {"total": 10, "completed": 4, "failed": 1}}


def test_a_relay_job_and_an_openai_batch_read_the_same() -> None:
    assert summarize(RELAY_JOB) == JobSummary(
        id="9f2c", status="running", name="Reviews", model="gpt-4o-mini", priority="5",
        total=300, completed=120, failed=3, dead_letter=1, created_at="2026-10-04T09:12:44Z")
    assert summarize(OPENAI_BATCH) == JobSummary(  # no name or model yet; a tier
        id="batch_1", status="in_progress", name="", model="", priority="",
        tier="expedited", total=10, completed=4, failed=1, dead_letter=None,
        created_at="2026-10-04T09:12:44Z")
    settled = summarize({**OPENAI_BATCH, "model": "gpt-4o-mini",
                         "metadata": {"name": "Nightly", "team": "support"}})
    assert (settled.name, settled.model, settled.tier) == ("Nightly", "gpt-4o-mini",
                                                           "expedited")


def test_a_message_batch_names_no_model_name_priority_or_tier() -> None:
    batch = summarize({"id": "msgbatch_1", "type": "message_batch",
                       "processing_status": "ended", "created_at": "2026-10-04T09:12:44Z",
                       "request_counts": {"processing": 0, "succeeded": 2, "errored": 1,
                                          "canceled": 0, "expired": 0}})
    assert (batch.status, batch.name, batch.model, batch.priority, batch.tier) == (
        "ended", "", "", "", "")
    assert (batch.done, batch.total, batch.failed, batch.dead_letter) == (3, 3, 1, None)


def test_status_is_worded_once_for_the_cli_and_the_tui() -> None:
    done = {**RELAY_JOB, "status": "completed", "completed": 297, "failed": 3}
    assert shown_status("completed", 3) == "completed with errors"
    assert shown_status("completed", 0) == "completed"
    assert shown_status("failed", 3) == "failed"
    assert summarize(done).shown_status == JobView.from_batch(done).shown_status == (
        "completed with errors")
    openai = {**OPENAI_BATCH, "status": "completed"}
    assert summarize(openai).shown_status == JobView.from_batch(openai).shown_status == (
        "completed with errors")


def test_ended_covers_both_dialects() -> None:
    for status in ("completed", "failed", "canceled", "cancelled", "expired"):
        assert summarize({**RELAY_JOB, "status": status}).ended
    for status in ("queued", "scheduled", "running", "in_progress", "validating",
                   "finalizing", "cancelling"):
        assert not summarize({**RELAY_JOB, "status": status}).ended


def test_the_line_and_the_outcome() -> None:
    view = summarize(RELAY_JOB)
    pad = " " * (STATUS_WIDTH - len("running"))
    assert line(view) == (f"running{pad} [########............] 123/300  failed 3    "
                          "dead-letter 1")
    assert line(summarize(OPENAI_BATCH)) == (
        f"{'in_progress':<{STATUS_WIDTH}} [##########..........]  5/10  failed 1 ")
    assert line(summarize({**RELAY_JOB, "total": 0, "completed": 0, "failed": 0})) \
        .startswith(f"running{pad} [....................] 0/0")
    assert outcome(view) == "9f2c: running (120 completed, 3 failed, 1 dead-lettered)"


def test_a_jobs_lines_keep_their_columns_as_its_status_and_counts_change() -> None:
    """The no-TUI output (`--wait` into a pipe, the demo's printing mode): the bar, the
    counts and what follows them start in the same column whatever the status says."""
    views = [{**RELAY_JOB, "status": "running", "completed": 5, "failed": 0},
             {**RELAY_JOB, "status": "running", "completed": 150, "failed": 12},
             {**RELAY_JOB, "status": "completed", "completed": 297, "failed": 3},
             {**RELAY_JOB, "status": "completed", "completed": 300, "failed": 0}]
    lines = [line(summarize(v)) for v in views]
    for mark in ("[", "/300", "dead-letter"):
        assert len({text.index(mark) for text in lines}) == 1, (mark, lines)
    several = [summarize(RELAY_JOB), summarize({**OPENAI_BATCH, "status": "completed"})]
    shared = [line(v, count_width=7, failed_width=3) for v in several]
    for mark in ("[", "  failed"):  # the counts right-aligned in their column
        assert len({text.index(mark) for text in shared}) == 1, (mark, shared)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Feed:
    """Successive views of one job, and a clock that `sleep` advances."""

    def __init__(self, done: list[int]) -> None:
        self.views = [{**RELAY_JOB, "completed": d, "failed": 0, "dead_letter": 0,
                       "status": "completed" if d == 300 else "running"} for d in done]
        self.now = 0.0

    def fetch(self) -> dict:
        return self.views.pop(0)

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_log_gets_a_line_every_few_seconds_and_the_last_one() -> None:
    feed, log = Feed([0, 10, 20, 30, 40, 50, 60, 300]), io.StringIO()
    job = watch(feed.fetch, stream=log, every=1.0, log_every=3.0, sleep=feed.sleep,
                clock=lambda: feed.now)
    assert job["status"] == "completed"
    counts = [text.split("]")[1].split()[0] for text in log.getvalue().splitlines()]
    assert counts == ["0/300", "30/300", "60/300", "300/300"]
    assert feed.now == 7.0


def test_a_log_line_tells_the_rate_and_the_eta() -> None:
    feed, log = Feed([0, 30, 60, 300]), io.StringIO()
    watch(feed.fetch, stream=log, every=1.0, log_every=0.0, sleep=feed.sleep,
          clock=lambda: feed.now)
    lines = log.getvalue().splitlines()
    assert lines[0].endswith("failed 0    dead-letter 0  - rows/s  ETA -")  # one poll: no rate
    assert lines[1].endswith("30.0 rows/s  ETA 0:00:09")  # 270 rows left at 30/s
    assert lines[2].endswith("30.0 rows/s  ETA 0:00:08")
    assert lines[3].endswith("100.0 rows/s  ETA -")  # ended: no ETA


def test_pace_and_eta() -> None:
    running = summarize({**RELAY_JOB, "completed": 100, "failed": 0})
    assert eta(running, 2.0) == 100.0
    assert pace(running, 2.0) == "2.0 rows/s  ETA 0:01:40"
    assert pace(running, None) == "- rows/s  ETA -"
    assert pace(running, 0.0) == "0.0 rows/s  ETA -"
    assert hms(3725.4) == "1:02:05"


def test_a_terminal_gets_a_rich_bar_with_the_rate_and_eta_redrawn_in_place() -> None:
    feed, tty = Feed([0, 150, 300]), Terminal()
    watch(feed.fetch, stream=tty, every=1.0, sleep=feed.sleep, clock=lambda: feed.now)
    text = tty.getvalue()
    frames = [f for f in text.split("\r") if "/300" in f]
    assert text.count("\n") == 1 and text.endswith("\x1b[?25h")  # one line, left at the end
    assert "━" in text  # rich's bar, not `[###...]`
    assert all(f.removeprefix("\x1b[2K").startswith(("running", "completed")) for f in frames)
    assert "150/300" in text and "150.0 rows/s  ETA 0:00:01" in text  # 150 in 1 s
    assert "completed" in frames[-1] and "300/300" in frames[-1] and "ETA -" in frames[-1]
