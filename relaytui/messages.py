"""App-wide messages. Widget-local ones live in their widgets; results of modal screens
come back through `dismiss`."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from relaytui.health import StoreHealth
from relaytui.live import JobEvent, Update
from relaytui.stats import WorkspaceStats


@dataclass
class FeedUpdate(Message):
    """What the live feed reported: a `Connection` state, the `Workspace`, a `JobsListed`
    or a `JobEvent`.

    A flood of progress for one job is merged: a progress event still waiting in the
    queue is superseded by the next one for the same job (its counters are newer)."""

    update: Update

    def can_replace(self, message: Message) -> bool:
        mine, theirs = self.update, getattr(message, "update", None)
        return (isinstance(message, FeedUpdate) and isinstance(mine, JobEvent)
                and isinstance(theirs, JobEvent) and mine.type == theirs.type == "job.progress"
                and mine.data.get("id") == theirs.data.get("id"))


@dataclass
class HealthUpdate(Message):
    """relayd's store health changed (`HealthWatch`): ok, or degraded and why."""

    health: StoreHealth


@dataclass
class StatsUpdate(Message):
    """What `GET /v1/stats` says changed (`StatsWatch`); None: relayd has no stats."""

    stats: WorkspaceStats | None


@dataclass
class KeyRefused(Message):
    """relayd refused the key (401) on the jobs screen: the app asks for another."""

    reason: str
