"""Asking relayd the same question every few seconds, in one thread, and posting the
answer whenever it changed: the store-health watch (`health.py`) and the stats watch
(`stats.py`) are each one of these. No Textual here."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Watch(Generic[T]):
    """`read()` every `every` seconds until `stop()`; `post(answer)` when it differs from
    the last one posted. A `read()` that raises learns nothing: relayd is down, shutting
    down or answered oddly, and the last word stands (the live feed says relayd is down)."""

    def __init__(self, read: Callable[[], T], post: Callable[[T], object], *,
                 every: float) -> None:
        self.read, self.post, self.every = read, post, every
        self.last: T | None = None
        self._posted = False
        self._stopped = threading.Event()
        self._asked = threading.Event()

    def run(self) -> None:
        """Until `stop()`: ask now, then every `every` seconds (or at once when `ask_now`)."""
        while not self._stopped.is_set():
            self.step()
            self._asked.wait(self.every)
            self._asked.clear()

    def stop(self) -> None:
        """Thread-safe; ends the wait at once."""
        self._stopped.set()
        self._asked.set()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def ask_now(self) -> None:
        """Thread-safe: end the wait, so the next question goes at once."""
        self._asked.set()

    def step(self) -> None:
        """Ask relayd once; post what it says if that changed."""
        try:
            answer = self.read()
        except Exception:  # down, shutting down or an odd answer: nothing learnt
            return
        if not self._posted or answer != self.last:
            self.last, self._posted = answer, True
            self.post(answer)
