"""The workspace stats as the header tells them: `GET /v1/stats` answers read into a
`WorkspaceStats`, the words and numbers shown, the plot's scale and ticks, and the watch
that asks relayd (plain functions, no Textual)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from relaytui.client import RelayError
from relaytui.models import JobView, next_run_text
from relaytui.stats import Failing, QueueLevel, StatsWatch, Usage, WorkspaceStats
from relaytui.stats_text import (
    banner,
    clock_ticks,
    cost_text,
    count_text,
    failing_changes,
    latency_text,
    models_line,
    nonzero_runs,
    percent,
    queue_text,
    scale,
    summary_line,
    window_text,
)
from relaytui.testing import NOW, job_id
from relaytui.testing_stats import canned_stats


def answer(minutes: int = 60, **changes: Any) -> dict[str, Any]:
    return canned_stats(NOW, minutes=minutes, jobs={n: job_id(n) for n in (1, 2, 9)}) \
        | changes


def test_an_answer_is_read_into_the_headers_numbers() -> None:
    stats = WorkspaceStats.from_answer(answer())
    assert stats.minutes == 60 and stats.bucket_s == 60
    assert stats.since == NOW - 3600 and stats.generated_at == NOW
    assert len(stats.completed) == len(stats.failed) == 60
    assert sum(stats.completed) == 785 and sum(stats.failed) == 2
    mini = next(m for m in stats.models if m.model == "gpt-4o-mini")
    assert mini.attempts == 412 and (mini.p50_ms, mini.p95_ms) == (640, 1830)
    assert mini.rates == (0.0218, 0.0073, 0.0049, 0.0922, 0.0)  # 429 5xx t/o conn other
    assert stats.failing == (Failing("gpt-4o-mini", "connection", 1.0, 12,
                                     "gpt-4o-mini: 100% connection errors"),)
    assert stats.total == Usage(18_402_113, 2_118_950, 41.27)
    assert stats.usage_of(job_id(1)) == Usage(75_640, 9_760, 0.017202)
    assert stats.usage_of(job_id(5)) is None  # not in the window
    assert stats.queue == (QueueLevel(1, 1, 80),)


def test_a_thin_or_odd_answer_reads_as_nothing_known() -> None:
    stats = WorkspaceStats.from_answer({"models": [{"model": "m", "latency_ms": {}}],
                                        "usage": {"total": {"cost_nano_usd": 2_500_000_000}},
                                        "throughput": ["nonsense"], "queue": None})
    assert stats.minutes == 60 and stats.completed == () and stats.queue == ()
    assert stats.models[0].p95_ms is None and stats.models[0].error_share == 0
    assert stats.total.cost_usd == 2.5  # from nano-dollars when cost_usd is missing


def test_answers_that_differ_only_in_when_they_were_made_are_equal() -> None:
    first = WorkspaceStats.from_answer(answer())
    later = WorkspaceStats.from_answer(answer(generated_at="2026-10-04T09:30:05Z"))
    assert first == later
    assert first != WorkspaceStats.from_answer(answer(queue=[]))


def test_the_banner_names_each_failing_model_in_relayds_words() -> None:
    stats = WorkspaceStats.from_answer(answer())
    assert banner(stats.failing) == \
        "✗ gpt-4o-mini: 100% connection errors (12 recent attempts)"
    assert banner([]) == ""
    worded = Failing.from_answer({"model": "backup", "error": "5xx", "share": 0.6667,
                                  "attempts": 1})  # an answer without its message
    assert banner([*stats.failing, worded]).endswith(
        " · ✗ backup: 67% 5xx errors (1 recent attempt)")


def test_models_that_start_and_stop_failing_are_told_apart() -> None:
    failing = WorkspaceStats.from_answer(answer())
    fine = WorkspaceStats.from_answer(answer(failing=[]))
    assert failing_changes(fine, failing) == (list(failing.failing), [])
    assert failing_changes(failing, fine) == ([], ["gpt-4o-mini"])
    assert failing_changes(failing, failing) == ([], [])
    assert failing_changes(None, None) == ([], [])


def test_failing_models_come_first_then_the_others_by_name() -> None:
    stats = WorkspaceStats.from_answer(answer())
    assert [m.model for m in stats.models_in_order()] == ["gpt-4o-mini", "backup"]
    calm = WorkspaceStats.from_answer(answer(failing=[]))
    assert [m.model for m in calm.models_in_order()] == ["backup", "gpt-4o-mini"]


def test_numbers_are_short() -> None:
    assert [percent(s) for s in (0, 0.001, 0.0218, 0.5, 1)] == ["0%", "<1%", "2%", "50%",
                                                                 "100%"]
    assert [latency_text(ms) for ms in (None, 410, 1830, 12_400)] == ["—", "410ms", "1.8s",
                                                                      "12s"]
    assert [count_text(n) for n in (0, 7.5, 950, 1_234, 75_640, 2_118_950, 18_402_113)] == \
        ["0", "7.5", "950", "1.2k", "76k", "2.1M", "18M"]
    assert [cost_text(usd) for usd in (0, 0.0021, 0.017202, 0.42, 41.27, 12_345.6)] == \
        ["$0.00", "$0.0021", "$0.017", "$0.42", "$41.27", "$12,346"]
    assert [window_text(m) for m in (15, 60, 360, 1440, 90)] == ["15 min", "60 min", "6 h",
                                                                 "24 h", "90 min"]


def test_the_queue_is_told_highest_priority_first() -> None:
    assert queue_text([QueueLevel(0, 1, 1), QueueLevel(5, 2, 3)]) == \
        ["p5  2 jobs · 3 rows", "p0  1 job · 1 row"]
    assert queue_text([]) == ["empty"]


def test_the_narrow_header_says_it_in_two_lines() -> None:
    stats = WorkspaceStats.from_answer(answer())
    assert summary_line(stats) == ("60 min: 785 done, 2 failed · 46/min now · $41.27 · "
                                   "1 queued · 21M tokens")
    assert models_line(stats) == "gpt-4o-mini 13% err p95 1.8s paused · backup <1% err p95 1.1s"
    empty = WorkspaceStats()
    assert summary_line(empty) == ("60 min: 0 done, 0 failed · 0/min now · $0.00 · "
                                   "queue empty · 0 tokens")
    assert models_line(empty) == "no row finished in the window"
    made = WorkspaceStats.from_answer(answer(models=[], throughput=[]))
    assert made.generated_at is not None
    assert models_line(made) == "no row finished in the window as of 09:30:00Z"
    cancelled = replace(made, completed=(0,), failed=(3,))  # rows that called no model
    assert models_line(cancelled) == "no upstream calls in the window as of 09:30:00Z"


def test_stats_that_saw_no_row_finish_lag_a_job_whose_rows_ran() -> None:
    """The live feed moves a job on while the header's answer (asked every few seconds)
    still says nothing finished: the jobs screen asks for the stats again."""
    quiet = WorkspaceStats()
    before = JobView(id="a" * 32, status="running", total=300)
    after = replace(before, completed=33)
    assert quiet.lags(before, after) and quiet.lags(None, after)
    assert not quiet.lags(after, after)  # nothing new ran
    assert not WorkspaceStats(completed=(33,)).lags(before, after)  # it knows of rows


def test_the_time_axis_is_ticked_at_round_times() -> None:
    hour = WorkspaceStats.from_answer(answer())
    assert clock_ticks(hour, 5) == ([0.0, 15.0, 30.0, 45.0],
                                    ["08:30", "08:45", "09:00", "09:15"])
    assert clock_ticks(hour, 2) == ([0.0, 30.0], ["08:30", "09:00"])
    day = WorkspaceStats.from_answer(answer(minutes=1440))
    at, labels = clock_ticks(day, 5)
    assert labels == ["12:00", "18:00", "00:00", "06:00"]  # every 6 h, from 09:30 a day ago
    assert day.since is not None
    assert at[0] == (datetime(2026, 10, 3, 12, tzinfo=UTC).timestamp() - day.since) / 1440
    assert clock_ticks(WorkspaceStats(), 5) == ([], [])


def test_the_rate_axis_ends_on_a_round_number() -> None:
    assert scale(49) == (60, [0, 20, 40, 60])
    assert scale(49, steps=2) == (50, [0, 50])
    assert scale(3) == (3, [0, 1, 2, 3])
    assert scale(0) == (1.0, [0.0, 1.0])  # a quiet window still has an axis
    assert scale(0.3) == (0.3, [0.0, 0.1, 0.2, 0.3])
    assert scale(1234) == (1500, [0, 500, 1000, 1500])


def test_only_stretches_of_work_are_drawn() -> None:
    assert nonzero_runs([0, 3, 4, 0, 0, 1, 0, 2, 2]) == [[1, 2], [5], [7, 8]]
    assert nonzero_runs([0, 0]) == []


def test_a_templates_next_run_never_reads_as_a_time_to_come_once_it_passed() -> None:
    at = datetime(2026, 10, 5, 2, tzinfo=UTC).timestamp()
    assert next_run_text(at, at - 59_400) == "2026-10-05 02:00:00Z (in 16h30m)"
    assert next_run_text(at, at) == "due since 02:00:00Z"
    assert next_run_text(None, at) == "—"


class Relayd:
    """`stats()` answering each of `answers` in turn (an exception is raised)."""

    def __init__(self, *answers: dict[str, Any] | Exception) -> None:
        self.answers, self.asked = list(answers), list[int | None]()

    def stats(self, *, minutes: int | None = None) -> dict[str, Any]:
        self.asked.append(minutes)
        found = self.answers.pop(0)
        if isinstance(found, Exception):
            raise found
        return found


def test_the_watch_posts_changes_and_none_for_a_relayd_without_stats() -> None:
    posted: list[WorkspaceStats | None] = []
    relayd = Relayd(answer(), answer(generated_at="2026-10-04T09:30:05Z"),
                    RelayError(None, "cannot reach relayd"), RelayError(500, "oops"),
                    answer(failing=[]), RelayError(404, "no such route"))
    watch = StatsWatch(relayd, posted.append)
    for _ in range(6):
        watch.step()
    assert posted == [WorkspaceStats.from_answer(answer()),
                      WorkspaceStats.from_answer(answer(failing=[])), None]
    assert relayd.asked == [60] * 6


def test_w_goes_through_the_windows_and_asks_at_once() -> None:
    watch = StatsWatch(Relayd(), lambda _: None)
    assert [watch.next_window() for _ in range(4)] == [360, 1440, 15, 60]
    assert watch._asked.is_set()  # the waiting thread wakes up for the new window


def test_a_jobs_own_usage_comes_from_its_batch_object_or_events() -> None:
    from relaytui.models import JobView
    from relaytui.stats import Usage

    relay_view = JobView.from_batch({"id": "j1", "usage": {
        "input_tokens": 1200, "output_tokens": 300, "cost_nano_usd": 42_000_000}})
    assert Usage.of_job(relay_view) == Usage(1200, 300, 0.042)
    event = JobView.from_event({"id": "j1", "input_tokens": 5, "output_tokens": 1,
                                "cost_nano_usd": 7})
    assert Usage.of_job(event) == Usage(5, 1, 7e-9)
    assert Usage.of_job(JobView.from_batch({"id": "j2"})) is None  # an older relayd
