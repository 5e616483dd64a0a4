"""Row events of `GET /v1/events?rows=true`: each finished row of the workspace's jobs,
read from the store in finish order (`Store.finished_rows`), never carried by actors.

A stream keeps its place in each job's finish order. Whenever a job event comes (the
notifier's coalesced job.progress, job.ended; on PostgreSQL from any node, over the
bus), the stream reads that job's rows past its place, and sends them before the job
event. So a row's event is never lost or repeated, whichever node ran it. The buffer is
bounded: a stream more than `ROW_BUFFER` rows behind one job skips them, and sends one
`lagged` event with the cursor the skipped rows start at, for the partial results
route; it goes on from the job's latest row."""

from __future__ import annotations

from dataclasses import dataclass, field

from daemon.api.events import Event
from daemon.api.shapes import RowEvent, RowsLagged
from daemon.domain import finish_order
from daemon.domain.jobs import Job, RowRecord
from daemon.store.interface import Store

ROW_BUFFER = 1000  # row events one job's catch-up may send at once
ENDED_KEPT = 10_000  # ended jobs a stream remembers, so a late event of one is ignored
JOB_EVENTS = frozenset({"job.created", "job.progress", "job.ended"})


@dataclass
class RowFeed:
    """One stream's place in each job's finish order."""

    repo: Store
    workspace_id: int
    places: dict[str, int] = field(default_factory=dict)  # job id -> finish sequence
    # Jobs whose every row was sent: another node's job.progress can arrive over the bus
    # after job.ended (it read the job before the end); it must not start them again.
    ended: dict[str, None] = field(default_factory=dict)  # insertion-ordered, bounded

    def start(self, job: Job) -> None:
        """A job the stream first sees in its snapshot: its rows from now on."""
        self.places[job.id] = job.finished_seq

    def catch_up(self, event: Event) -> list[Event]:
        """The row events (or one `lagged`) of the job `event` is about, up to now.
        Blocking: runs in a worker thread."""
        if event.type not in JOB_EVENTS:
            return []
        job_id = event.data["id"]
        if job_id in self.ended:
            return []
        place = self.places.get(job_id, 0)  # a job created since: from its first row
        job = self.repo.get_job(job_id, workspace_id=self.workspace_id)
        if job is None:
            self.places.pop(job_id, None)
            return []
        rows = self.repo.finished_rows(job.seq, after_seq=place, limit=ROW_BUFFER + 1)
        if len(rows) > ROW_BUFFER:
            self._moved(job, job.finished_seq, ended=event.type == "job.ended")
            return [lagged(job, place)]
        self._moved(job, rows[-1].finished_seq or place if rows else place,
                    ended=event.type == "job.ended")
        return [row_event(job, r) for r in rows]

    def catch_up_all(self) -> list[Event]:
        """The row events of every job the stream follows, up to now: after job events
        were dropped (the stream fell behind), so no row waits for an event that will
        not come. Blocking: runs in a worker thread."""
        return [e for job_id in list(self.places)
                for e in self.catch_up(Event("job.progress", {"id": job_id}))]

    def _moved(self, job: Job, place: int, *, ended: bool) -> None:
        if not ended:
            self.places[job.id] = place
            return
        self.places.pop(job.id, None)
        self.ended[job.id] = None
        if len(self.ended) > ENDED_KEPT:
            del self.ended[next(iter(self.ended))]


def row_event(job: Job, row: RowRecord) -> Event:
    data: RowEvent = {"job_id": job.id, "custom_id": row.custom_id,
                      "status": "completed" if row.status == "completed" else "failed",
                      "error_code": row.error_code}
    return Event("row", dict(data))


def lagged(job: Job, place: int) -> Event:
    data: RowsLagged = {"job_id": job.id, "cursor": finish_order.cursor(place)}
    return Event("lagged", dict(data))
