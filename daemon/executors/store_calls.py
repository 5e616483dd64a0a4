"""Store calls that rows make on the I/O loop (tool rounds, workflow states, a workflow's
signing secret): each runs in a worker thread, and a storage fault (a full disk, a
database that dropped the connection: a `StoreError`, store/faults.py) is waited out, with the
supervisor's backoff for outcomes, until the store takes the call. The row meanwhile
goes no further, so it never sends a call whose result it could not keep; if the
process stops first, the row stays pending and resumes from what is stored.

Any other error is a bug: it is raised to the row, which the worker ends
`internal_error`, with its traceback logged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from itertools import count
from typing import Protocol, TypeVar

from daemon.domain.run import write_retry_delay
from daemon.store.faults import StoreError

log = logging.getLogger("relay.store_calls")

R = TypeVar("R")


class FaultRecorder(Protocol):
    """Where a storage fault is reported (the daemon's `Health`)."""

    def record(self, fault: StoreError | None, *, now: float) -> None: ...


class StoreCalls:
    def __init__(self, *, health: FaultRecorder | None = None,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
                 clock: Callable[[], float] = time.time) -> None:
        self.health = health
        self.sleep = sleep
        self.clock = clock

    async def run(self, what: str, call: Callable[[], R]) -> R:
        """`call()` in a worker thread, tried again after each storage fault."""
        for failures in count(1):
            try:
                return await asyncio.to_thread(call)
            except StoreError as fault:
                delay = write_retry_delay(failures)
                log.warning("%s: waiting for the store, trying again in %.1f s (%s: %s)",
                            what, delay, fault.code, fault.detail)
                if self.health is not None:
                    self.health.record(fault, now=self.clock())
                await self.sleep(delay)
        raise AssertionError("unreachable: count() never ends")
