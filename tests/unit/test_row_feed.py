"""`RowFeed`: a stream's place in each job's finish order (api/row_events.py)."""

from __future__ import annotations

from typing import cast

from daemon.api.events import Event
from daemon.api.row_events import RowFeed
from daemon.domain.jobs import Job, RowRecord
from daemon.store.interface import Store


class Rows:
    """The two store reads a feed makes, over one job's finished rows."""

    def __init__(self, job: Job, rows: list[RowRecord]) -> None:
        self.job, self.rows = job, rows

    def get_job(self, job_id: str, *, workspace_id: int | None = None) -> Job | None:
        return self.job if job_id == self.job.id else None

    def finished_rows(self, job_seq: int, *, after_seq: int, limit: int) -> list[RowRecord]:
        return [r for r in self.rows if (r.finished_seq or 0) > after_seq][:limit]


def job_and_rows(n: int) -> tuple[Job, list[RowRecord]]:
    job = Job(id="j" * 32, workspace_id=1, dialect="relay", name="n", model="m",
              endpoint="/v1/chat/completions", status="running", priority=0,
              created_at=0.0, seq=1, finished_seq=n)
    rows = [RowRecord(id=i, position=i, custom_id=f"r-{i}", status="completed", body={},
                      finished_seq=i) for i in range(1, n + 1)]
    return job, rows


def sent(events: list[Event]) -> list[str]:
    return [e.data["custom_id"] for e in events if e.type == "row"]


def test_a_late_event_of_an_ended_job_sends_no_row_again() -> None:
    """On PostgreSQL another node's job.progress can arrive after job.ended: the rows
    were all sent, and none is sent again."""
    job, rows = job_and_rows(5)
    feed = RowFeed(cast(Store, Rows(job, rows)), workspace_id=1)
    assert sent(feed.catch_up(Event("job.ended", {"id": job.id}))) == [
        f"r-{i}" for i in range(1, 6)]
    assert feed.catch_up(Event("job.progress", {"id": job.id})) == []
    assert feed.catch_up_all() == []


def test_a_running_job_sends_each_row_once() -> None:
    job, rows = job_and_rows(4)
    store = Rows(job, rows[:2])
    feed = RowFeed(cast(Store, store), workspace_id=1)
    assert sent(feed.catch_up(Event("job.progress", {"id": job.id}))) == ["r-1", "r-2"]
    store.rows = rows
    assert sent(feed.catch_up(Event("job.progress", {"id": job.id}))) == ["r-3", "r-4"]
    assert sent(feed.catch_up_all()) == []
