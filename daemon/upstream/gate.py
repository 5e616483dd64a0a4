"""Each model's gate: its concurrency slots and its pace, shared by every job.

A call takes a slot (`max_concurrency` at once), then `admit` waits until it may
go: past any pause, within the rpm/tpm buckets. The rules are
`domain/ratelimit.ModelPace`'s; this module only sleeps. The slots are a plain
semaphore of `concurrency` today; an adaptive controller would own `concurrency`
and replace `slots` here, and `snapshot` already shows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from daemon.config import ModelConfig
from daemon.domain.ratelimit import ModelPace


class ModelGate:
    """One model's slots and pace; every job's calls to the model pass here."""

    def __init__(self, model: ModelConfig) -> None:
        self.concurrency = model.max_concurrency
        self.slots = asyncio.Semaphore(self.concurrency)
        self.in_flight = 0
        self.pace = ModelPace(rpm=model.rpm, tpm=model.tpm)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self.slots:
            self.in_flight += 1
            try:
                yield
            finally:
                self.in_flight -= 1

    async def admit(self, tokens: int, *, clock: Callable[[], float],
                    sleep: Callable[[float], Awaitable[object]]) -> None:
        """Wait until a call of `tokens` may go. A pause that began while it waited
        sends it back to the queue (its reservation returned) behind the pause."""
        while (wait := self.pace.reserve(tokens, clock())) > 0:
            await sleep(wait)
            now = clock()
            if self.pace.paused_for(now) <= 0:
                return
            self.pace.release(tokens, now)

    def snapshot(self, now: float) -> dict[str, Any]:
        return {**self.pace.snapshot(now), "concurrency": self.concurrency,
                "in_flight": self.in_flight}
