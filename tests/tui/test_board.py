"""`relaytui.board`: events and lists folded into one set of jobs, changes reported."""

from __future__ import annotations

from relaytui.board import JobBoard
from relaytui.models import JobView
from tests.tui.test_models import event


def test_events_add_then_update_and_the_end_is_noticed_once() -> None:
    board = JobBoard()
    created = board.apply_event("job.created", event(completed=0, failed=0), at=1.0)
    assert created is not None
    assert created.before is None and created.moved and not created.ended
    progress = board.apply_event("job.progress", event(completed=10, failed=0), at=2.0)
    assert progress is not None and progress.before is not None
    assert progress.before.done == 0 and not progress.moved
    assert board.apply_event("job.progress", event(completed=10, failed=0), at=3.0) is None
    ended = board.apply_event("job.ended", event(relay_status="completed", completed=100,
                                                 failed=0), at=4.0)
    assert ended is not None and ended.ended and ended.moved
    again = board.apply_event("job.ended", event(relay_status="completed", completed=100,
                                                 failed=0, dead_letter=2), at=5.0)
    assert again is not None and not again.ended
    assert board.apply_event("stream.dropped", {"count": 3}, at=6.0) is None


def test_a_job_never_leaves_its_end_for_an_older_answer() -> None:
    board = JobBoard()
    board.apply_event("job.ended", event(relay_status="canceled"), at=1.0)
    late = JobView.from_batch({"id": "a" * 32, "status": "running"})
    assert board.put(late, at=2.0) is None
    stored = board.get("a" * 32)
    assert stored is not None and stored.status == "canceled"


def test_replace_all_reports_changes_and_gone_jobs() -> None:
    board = JobBoard()
    board.apply_event("job.created", event(id="x"), at=1.0)
    board.apply_event("job.created", event(id="y"), at=1.0)
    changes, gone = board.replace_all([JobView.from_event(event(id="y", completed=50)),
                                       JobView.from_event(event(id="z"))], at=2.0)
    assert gone == ["x"] and "x" not in board
    assert sorted(c.view.id for c in changes) == ["y", "z"]


def test_cancelling_shows_until_the_end_arrives() -> None:
    board = JobBoard()
    board.apply_event("job.progress", event(), at=1.0)
    marked = board.mark_cancelling("a" * 32)
    assert marked is not None
    assert marked.view.status == "cancelling" and marked.moved is False
    progress = board.apply_event("job.progress", event(completed=41), at=2.0)
    assert progress is not None and progress.view.status == "cancelling"
    ended = board.apply_event("job.ended", event(relay_status="canceled"), at=3.0)
    assert ended is not None and ended.ended and ended.view.status == "canceled"
    assert board.mark_cancelling("a" * 32) is None


def test_rates_come_from_progress_samples_then_the_average() -> None:
    board = JobBoard()
    board.apply_event("job.progress", event(completed=0, failed=0, started_at=0.0), at=10.0)
    assert board.rate("a" * 32, now=10.0) is None
    board.apply_event("job.progress", event(completed=30, failed=0, started_at=0.0), at=12.0)
    assert board.rate("a" * 32, now=12.0) == 15.0
    assert board.samples("a" * 32) == [15.0]
    board.apply_event("job.ended", event(relay_status="completed", completed=100, failed=0,
                                         started_at=0.0, finished_at=20.0), at=13.0)
    assert board.rate("a" * 32, now=99.0) == 5.0  # ended: the whole run's average
    assert board.samples("a" * 32) == [15.0]  # the end is not a sample
    assert board.rate("nope", now=1.0) is None


def test_views_are_ordered_running_first_then_newest() -> None:
    board = JobBoard()
    board.apply_event("job.created", event(id="old", relay_status="completed",
                                           created_at=1.0), at=1.0)
    board.apply_event("job.created", event(id="new", relay_status="queued", created_at=3.0),
                      at=1.0)
    board.apply_event("job.created", event(id="run", created_at=2.0), at=1.0)
    assert [v.id for v in board.views()] == ["run", "new", "old"]
