"""The plain row: one request through the router (retries, backoff, fallbacks)."""

from __future__ import annotations

from daemon.domain.jobs import RowWork
from daemon.domain.outcome import RowOutcome
from daemon.executors.lane import Lane, not_started
from daemon.upstream.router import Router


class ChatExecutor:
    def __init__(self, router: Router) -> None:
        self.router = router

    async def run(self, work: RowWork, lane: Lane) -> RowOutcome:
        async with lane.slots:
            if lane.stopping:
                return not_started()
            lane.going(work)
            return await self.router.call(work.model, work.endpoint, work.body,
                                          fence=lane.fencer(work))
