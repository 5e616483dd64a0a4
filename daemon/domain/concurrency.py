"""Adaptive concurrency: how many calls a model may have in flight, learned from its answers.

Pure: no clock, no I/O. The gate (`upstream/gate.py`) reports each call as it starts
(`start`) and how it ended (`finish`: ok, overload, or neutral), and holds the
calls in flight to `limit`.

Halving on overload (AIMD) averages about 0.75 of a hard capacity limit: it saws
between half the limit and the limit. This controller remembers instead:

- `good`, the highest level at which a whole window of calls (`limit` of them,
  with the level filled) succeeded, and `failed`, the level that last met an
  overload (a 429 or a timeout);
- an overload drops the limit to `good`; only when no good level is known below
  does it halve (and a good level that itself fails steps down one, then forgets);
- a window of successes climbs halfway to `failed` (+1 when none is known), and
  `failed` itself is probed only after `patience` windows, a patience that doubles
  with each probe that fails again, so a ceiling once found costs a 429 rarely.

One decision per level: a call that started before the limit last moved says
nothing about the current level (else one burst's 429s would drive it to 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Signal = Literal["ok", "overload", "neutral"]
FIRST_PATIENCE = 4  # windows at the level below a known failure before probing it again
MAX_PATIENCE = 64


@dataclass(frozen=True)
class Ticket:
    """Handed to a call as it starts: the level (epoch) it was sent under."""

    epoch: int


@dataclass
class AdaptiveLimit:
    """One model's concurrency limit, between 1 and `maximum` (its `max_concurrency`)."""

    maximum: int
    limit: int = 0  # 0: start at `maximum`
    good: int | None = None
    failed: int | None = None
    patience: int = FIRST_PATIENCE
    epoch: int = 0  # bumped whenever the limit moves
    peak: int = 0  # most calls in flight seen at this level
    successes: int = 0  # at this level, towards the next window
    windows: int = 0  # whole windows at this level

    def __post_init__(self) -> None:
        self.limit = self.limit or self.maximum

    def start(self, in_flight: int) -> Ticket:
        """A call goes now; `in_flight` counts it."""
        self.peak = max(self.peak, in_flight)
        return Ticket(self.epoch)

    def finish(self, ticket: Ticket, signal: Signal) -> None:
        """Learn from how a call ended. Stale tickets and neutral ends change nothing."""
        if ticket.epoch != self.epoch or signal == "neutral":
            return
        if signal == "overload":
            self._overloaded()
        else:
            self._succeeded()

    def cap(self, maximum: int) -> None:
        """A new ceiling (this node's share of a cluster-wide limit changed): what was
        learned above it no longer counts."""
        self.maximum = maximum
        if self.good is not None and self.good > maximum:
            self.good = maximum
        if self.failed is not None and self.failed > maximum + 1:
            self.failed = None
        if self.limit > maximum:
            self._move(maximum)

    def snapshot(self) -> dict[str, int | None]:
        return {"concurrency": self.limit, "concurrency_good": self.good,
                "concurrency_failed": self.failed}

    def _succeeded(self) -> None:
        self.successes += 1
        if self.successes < self.limit or self.peak < self.limit:
            return  # not a whole window, or the level was never filled (too little demand)
        self.successes, self.windows, self.good = 0, self.windows + 1, self.limit
        if self.failed is not None and self.limit >= self.failed:
            self.failed, self.patience = None, FIRST_PATIENCE  # a probe held: the ceiling rose
        target = self._next_level()
        if target != self.limit:
            self._move(target)

    def _next_level(self) -> int:
        if self.failed is None:
            return min(self.maximum, self.limit + 1)
        unproven = self.failed - 1 - self.limit  # levels between this one and the failure
        if unproven > 0:
            return self.limit + (unproven + 1) // 2
        return self.failed if self.windows >= self.patience else self.limit

    def _overloaded(self) -> None:
        # The level that failed is what was in flight, not an allowance never filled
        # (64 allowed, 32 sent, 429: the ceiling is below 32, and halving 64 says 32).
        level = min(self.limit, self.peak) if self.peak else self.limit
        again = level == self.failed  # a probe of the known ceiling failed once more
        self.patience = min(MAX_PATIENCE, self.patience * 2) if again else FIRST_PATIENCE
        self.failed = level
        if self.good is not None and self.good < level:
            self._move(self.good)
        elif self.good is not None:  # at or below what worked: noise, or the capacity fell
            self.good = None
            self._move(level - 1)
        else:
            self._move(level // 2)

    def _move(self, level: int) -> None:
        self.limit = max(1, min(self.maximum, level))
        self.epoch += 1
        self.peak = self.successes = self.windows = 0
