"""`Every`: how a timer-driven actor does something at most once every so many seconds
of the `now` it is ticked with (and at its first tick)."""

from __future__ import annotations


class Every:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.due_at: float | None = None  # None: due at the first tick

    def due(self, now: float) -> bool:
        """True, and the next one `seconds` later, when `now` has reached it."""
        if self.due_at is not None and now < self.due_at:
            return False
        self.due_at = now + self.seconds
        return True
