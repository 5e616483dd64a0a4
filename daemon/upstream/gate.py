"""Each model's gate: its concurrency slots and its pace, shared by every job.

A call takes a slot (`Slots`: at most `limit` at once), then `admit` waits until it
may go: past any pause, within the rpm/tpm buckets. The rules are pure and live in
`domain/`: the pace in `ratelimit.ModelPace`, the limit in `concurrency.AdaptiveLimit`
(learned from 429s, timeouts and successes; fixed at `max_concurrency` when the
model sets `adaptive = false`). This module only waits and counts.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from daemon.config import ModelConfig
from daemon.domain.cluster import Part
from daemon.domain.concurrency import AdaptiveLimit, Signal, Ticket
from daemon.domain.ratelimit import ModelPace

FIXED = Ticket(-1)  # what a call holds when the model's limit does not adapt


class Slots:
    """A semaphore whose size can change: waiters are served in order, and a smaller
    limit only stops new calls (those in flight finish)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.taken = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        if self.taken < self.limit and not self._waiters:
            self.taken += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot as it was cancelled: pass it on
            elif waiter in self._waiters:  # `_wake` may have dropped it already
                self._waiters.remove(waiter)
            raise

    @property
    def waiting(self) -> int:
        """Calls waiting for a slot."""
        return len(self._waiters)

    def release(self) -> None:
        self.taken -= 1
        self._wake()

    def resize(self, limit: int) -> None:
        self.limit = limit
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.taken < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.taken += 1
                waiter.set_result(None)


class ModelGate:
    """One model's slots, limit and pace; every job's calls to the model pass here."""

    def __init__(self, model: ModelConfig) -> None:
        self.model = model
        self.maximum = model.max_concurrency
        self.control = AdaptiveLimit(model.max_concurrency) if model.adaptive else None
        self.slots = Slots(model.max_concurrency)
        self.pace = ModelPace(rpm=model.rpm, tpm=model.tpm, sheds_overload=model.adaptive)

    @property
    def in_flight(self) -> int:
        return self.slots.taken

    @property
    def waiting(self) -> int:
        """Calls held at the gate by the model's limit."""
        return self.slots.waiting

    def slot(self) -> Slot:
        """Hold a slot for one call (`async with gate.slot() as ticket`); report its end
        with `finish(ticket, signal)`."""
        return Slot(self)

    def finish(self, ticket: Ticket, signal: Signal) -> None:
        if self.control is not None:
            self.control.finish(ticket, signal)
            self.slots.resize(self.control.limit)

    def share(self, part: Part, now: float) -> None:
        """This node's part of the model's cluster-wide limits: its share of
        `max_concurrency` (the ceiling the limit adapts under) and of rpm/tpm."""
        self.maximum = part.of(self.model.max_concurrency)
        if self.control is not None:
            self.control.cap(self.maximum)
        self.slots.resize(self.control.limit if self.control else self.maximum)
        self.pace.share(part, now)

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
        learned = self.control.snapshot() if self.control else {
            "concurrency": self.maximum, "concurrency_good": None, "concurrency_failed": None}
        return {**self.pace.snapshot(now), **learned, "adaptive": self.control is not None,
                "in_flight": self.in_flight}


class Slot:
    """One call's hold on its model's slot: a class, not a generator-based context
    manager, as every upstream call takes one (half the cost)."""

    __slots__ = ("gate",)

    def __init__(self, gate: ModelGate) -> None:
        self.gate = gate

    async def __aenter__(self) -> Ticket:
        gate = self.gate
        await gate.slots.acquire()
        if gate.control is None:
            return FIXED
        try:
            return gate.control.start(gate.slots.taken)
        except BaseException:
            gate.slots.release()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.gate.slots.release()
