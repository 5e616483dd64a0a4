"""The jobs the operator is watching: folds list fetches and live events into one dict
of `JobView`s, keeps each job's throughput samples and says what changed, so the table
updates one row at a time and a job's end is noticed once. Pure: no Textual."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from relaytui.models import JobView, Throughput, average_rate, order_key


@dataclass(frozen=True)
class Change:
    """One job that was added or changed (`before` is None for a new one)."""

    view: JobView
    before: JobView | None

    @property
    def ended(self) -> bool:
        """The job ended now, having been seen before it ended."""
        return self.view.terminal and self.before is not None and not self.before.terminal

    @property
    def moved(self) -> bool:
        """Its place in the running-first, newest-first order may have changed."""
        return self.before is None or order_key(self.before) != order_key(self.view)


class JobBoard:
    def __init__(self) -> None:
        self._views: dict[str, JobView] = {}
        self._rates: dict[str, Throughput] = {}
        self._cancelling: set[str] = set()

    def __len__(self) -> int:
        return len(self._views)

    def __contains__(self, job_id: str) -> bool:
        return job_id in self._views

    def get(self, job_id: str) -> JobView | None:
        return self._views.get(job_id)

    def views(self) -> list[JobView]:
        return sorted(self._views.values(), key=order_key)

    def apply_event(self, kind: str, data: dict[str, Any], *, at: float) -> Change | None:
        """A `job.*` event of `/v1/events`; None for kinds that carry no job."""
        if not kind.startswith("job.") or "id" not in data:
            return None
        return self.put(JobView.from_event(data), at=at)

    def replace_all(self, views: Iterable[JobView], *, at: float) -> tuple[list[Change], list[str]]:
        """A fresh list from the daemon: the changes, and the ids that are gone."""
        fresh = {v.id: v for v in views}
        gone = [job_id for job_id in self._views if job_id not in fresh]
        for job_id in gone:
            self._forget(job_id)
        changes = [c for c in (self.put(v, at=at) for v in fresh.values()) if c is not None]
        return changes, gone

    def put(self, view: JobView, *, at: float) -> Change | None:
        before = self._views.get(view.id)
        if before is not None and before.terminal and not view.terminal:
            return None  # a job never leaves its end: this answer is older than the event
        if before is not None:
            view = before.merge(view)
        if view.terminal:
            self._cancelling.discard(view.id)
        elif view.id in self._cancelling and view.status != "scheduled":
            view = replace(view, status="cancelling")
        if not view.terminal:  # an end (a cancel's unrun rows) is no throughput sample
            self._rates.setdefault(view.id, Throughput()).add(at, view.done)
        if view == before:
            return None
        self._views[view.id] = view
        return Change(view, before)

    def mark_cancelling(self, job_id: str) -> Change | None:
        """Cancel was accepted: show "cancelling…" until the job's end is reported."""
        view = self._views.get(job_id)
        if view is None or view.terminal or view.status in ("queued", "scheduled"):
            return None
        self._cancelling.add(job_id)
        changed = replace(view, status="cancelling")
        self._views[job_id] = changed
        return Change(changed, view)

    def rate(self, job_id: str, *, now: float) -> float | None:
        """Recent rows per second from progress samples, else the average so far."""
        view = self._views.get(job_id)
        if view is None:
            return None
        tracker = self._rates.get(job_id)
        recent = tracker.rate() if tracker is not None and not view.terminal else None
        return recent if recent is not None else average_rate(view, now)

    def samples(self, job_id: str) -> list[float]:
        tracker = self._rates.get(job_id)
        return list(tracker.samples) if tracker is not None else []

    def _forget(self, job_id: str) -> None:
        self._views.pop(job_id, None)
        self._rates.pop(job_id, None)
        self._cancelling.discard(job_id)
