"""The job summary shared by both dialects, the progress line, and `watch`'s cadence
(time is passed in; nothing sleeps)."""

from __future__ import annotations

import io

from relaytui.progress import JobSummary, eta, hms, line, outcome, pace, summarize, watch

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
    assert summarize(OPENAI_BATCH) == JobSummary(
        id="batch_1", status="in_progress", name="", model="/v1/embeddings",
        priority="expedited", total=10, completed=4, failed=1, dead_letter=None,
        created_at="2026-10-04T09:12:44Z")


def test_ended_covers_both_dialects() -> None:
    for status in ("completed", "failed", "canceled", "cancelled", "expired"):
        assert summarize({**RELAY_JOB, "status": status}).ended
    for status in ("queued", "scheduled", "running", "in_progress", "validating",
                   "finalizing", "cancelling"):
        assert not summarize({**RELAY_JOB, "status": status}).ended


def test_the_line_and_the_outcome() -> None:
    view = summarize(RELAY_JOB)
    assert line(view) == "running    [########............] 123/300  failed 3  dead-letter 1"
    assert line(summarize(OPENAI_BATCH)) == "in_progress [##########..........]  5/10  failed 1"
    assert line(summarize({**RELAY_JOB, "total": 0, "completed": 0, "failed": 0})) \
        .startswith("running    [....................] 0/0")
    assert outcome(view) == "9f2c: running (120 completed, 3 failed, 1 dead-lettered)"


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
    assert lines[0].endswith("failed 0  dead-letter 0  - rows/s  ETA -")  # one poll: no rate
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
