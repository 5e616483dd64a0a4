"""Row executors: what running one row means. A worker asks `Executors.for_row` which
executor a row needs and awaits `run(work)` on the I/O loop; every executor returns a
`RowOutcome`, however many model calls (turns) the row took.

Today every row is one chat call through the router (`ChatExecutor`). Records that
carry an OpenRelay extension (tool calling, workflows) get their own executors
here, chosen per row, without the worker or the supervisor changing.
"""

from __future__ import annotations

from typing import Protocol

from daemon.domain.jobs import RowWork
from daemon.domain.outcome import RowOutcome
from daemon.executors.chat import ChatExecutor

__all__ = ["ChatExecutor", "Executors", "RowExecutor"]


class RowExecutor(Protocol):
    async def run(self, work: RowWork) -> RowOutcome:
        """Run one row to its end: an ok outcome, or a failure that says why."""
        ...


class Executors:
    """Chooses the executor for each row."""

    def __init__(self, *, chat: RowExecutor) -> None:
        self.chat = chat

    def for_row(self, work: RowWork) -> RowExecutor:
        return self.chat
