"""The plain row: one request through the router (retries, backoff, fallbacks)."""

from __future__ import annotations

from collections.abc import Callable

from daemon.domain.jobs import RowWork
from daemon.domain.outcome import RowOutcome
from daemon.upstream.router import Router


class ChatExecutor:
    def __init__(self, router: Router) -> None:
        self.router = router

    async def run(self, work: RowWork, *, stopping: Callable[[], bool] = lambda: False,
                  ) -> RowOutcome:
        return await self.router.call(work.model, work.endpoint, work.body)
