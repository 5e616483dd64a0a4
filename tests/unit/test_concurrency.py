"""Adaptive concurrency: the controller's decisions, call by call, and against a
simulated capacity-limited upstream stepped by hand (no clock, no sleeping)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from daemon.domain.concurrency import FIRST_PATIENCE, MAX_PATIENCE, AdaptiveLimit, Ticket


def fill(ctl: AdaptiveLimit) -> list[Ticket]:
    """Start calls up to the limit, as a saturated gate would."""
    return [ctl.start(in_flight=n) for n in range(1, ctl.limit + 1)]


def window(ctl: AdaptiveLimit) -> None:
    """One whole window at the current level: the level filled, every call ok."""
    for ticket in fill(ctl):
        ctl.finish(ticket, "ok")


def overload(ctl: AdaptiveLimit) -> None:
    ctl.finish(ctl.start(in_flight=ctl.limit), "overload")


def test_it_starts_at_the_maximum() -> None:
    assert AdaptiveLimit(64).limit == 64


def test_an_overload_with_nothing_known_halves() -> None:
    ctl = AdaptiveLimit(64)
    overload(ctl)
    assert (ctl.limit, ctl.failed, ctl.good) == (32, 64, None)


def test_the_overloads_of_one_burst_decrease_once() -> None:
    ctl = AdaptiveLimit(64)
    burst = fill(ctl)
    for ticket in burst[16:]:  # 48 calls past a capacity of 16, answered 429
        ctl.finish(ticket, "overload")
    assert ctl.limit == 32
    for ticket in burst[:16]:  # their successes are stale too: nothing learned at 32
        ctl.finish(ticket, "ok")
    assert (ctl.limit, ctl.good) == (32, None)


def test_it_never_goes_below_one() -> None:
    ctl = AdaptiveLimit(4)
    for _ in range(5):
        overload(ctl)
    assert ctl.limit == 1


def test_a_whole_window_makes_a_level_good_and_grows_it_by_one() -> None:
    ctl = AdaptiveLimit(8, limit=4)
    window(ctl)
    assert (ctl.good, ctl.limit) == (4, 5)


def test_it_does_not_grow_past_the_maximum() -> None:
    ctl = AdaptiveLimit(4)
    window(ctl)
    assert ctl.limit == 4


def test_it_grows_only_when_the_level_is_filled() -> None:
    ctl = AdaptiveLimit(8, limit=4)
    for _ in range(10):  # two calls at a time: the level of 4 is never tried
        for ticket in [ctl.start(in_flight=1), ctl.start(in_flight=2)]:
            ctl.finish(ticket, "ok")
    assert (ctl.limit, ctl.good) == (4, None)


def test_neutral_ends_change_nothing() -> None:
    ctl = AdaptiveLimit(8)
    for ticket in fill(ctl):
        ctl.finish(ticket, "neutral")
    assert (ctl.limit, ctl.good, ctl.failed, ctl.successes) == (8, None, None, 0)


def test_an_overload_goes_back_to_the_last_level_that_worked() -> None:
    ctl = AdaptiveLimit(64, limit=16)
    window(ctl)
    assert ctl.limit == 17
    overload(ctl)
    assert (ctl.limit, ctl.good, ctl.failed) == (16, 16, 17)


def test_it_climbs_halfway_to_the_level_that_failed() -> None:
    ctl = AdaptiveLimit(64, limit=8, failed=24)
    levels = []
    for _ in range(5):
        window(ctl)
        levels.append(ctl.limit)
    assert levels == [16, 20, 22, 23, 23]  # then it waits below 24


def test_the_failed_level_is_probed_after_patience_windows() -> None:
    ctl = AdaptiveLimit(64, limit=16, good=16, failed=17)
    for _ in range(FIRST_PATIENCE - 1):
        window(ctl)
    assert ctl.limit == 16
    window(ctl)
    assert ctl.limit == 17


def test_each_failed_probe_doubles_the_patience() -> None:
    ctl = AdaptiveLimit(64, limit=16, good=16, failed=17)
    waits = []
    for _ in range(6):
        windows = 0
        while ctl.limit == 16:
            window(ctl)
            windows += 1
        waits.append(windows)
        overload(ctl)  # the probe at 17 fails
        assert ctl.limit == 16
    assert waits == [4, 8, 16, 32, 64, 64]
    assert waits[-1] == MAX_PATIENCE


def test_a_probe_that_holds_forgets_the_ceiling() -> None:
    ctl = AdaptiveLimit(64, limit=17, good=16, failed=17, patience=32)
    window(ctl)
    assert (ctl.good, ctl.failed, ctl.patience, ctl.limit) == (17, None, FIRST_PATIENCE, 18)


def test_an_overload_at_the_good_level_steps_down_one_then_halves() -> None:
    ctl = AdaptiveLimit(64, limit=16, good=16, failed=17)
    overload(ctl)  # noise, or less capacity: one step, and the good level is forgotten
    assert (ctl.limit, ctl.good, ctl.failed) == (15, None, 16)
    overload(ctl)  # again, with nothing known to work: halve
    assert ctl.limit == 7


def test_the_level_that_fails_is_the_one_in_flight() -> None:
    ctl = AdaptiveLimit(64)  # 64 allowed, only 32 ever sent
    ctl.finish(ctl.start(in_flight=32), "overload")
    assert (ctl.limit, ctl.failed) == (16, 32)


def test_an_overload_below_a_proven_level_steps_below_it_not_to_half() -> None:
    ctl = AdaptiveLimit(64, limit=33, good=32)
    ctl.finish(ctl.start(in_flight=5), "overload")  # the level ran at 5 when it failed
    assert (ctl.limit, ctl.good, ctl.failed) == (4, None, 5)  # not 2: one step under 5


# -- against a simulated upstream ----------------------------------------------------------

TICKS_PER_SECOND = 100  # a tick is 10 ms; calls take 100 ms ± 20 ms


class HalvingAIMD(AdaptiveLimit):
    """The reference: halve on an overload, +1 after a whole window."""

    def _overloaded(self) -> None:
        self._move(self.limit // 2)

    def _next_level(self) -> int:
        return min(self.maximum, self.limit + 1)


@dataclass
class CapacityUpstream:
    """Answers 429 at once past `capacity` calls at once; else ok after 8–12 ticks.
    Demand never runs out: the client keeps every slot it is allowed filled."""

    capacity: int
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    serving: list[tuple[int, Ticket]] = field(default_factory=list)  # (ends at tick, ticket)
    rejected: list[Ticket] = field(default_factory=list)  # answered next tick
    served: int = 0
    refused: int = 0

    def step(self, ctl: AdaptiveLimit, now: int) -> None:
        for ticket in self.rejected:
            ctl.finish(ticket, "overload")
        self.rejected = []
        done = [t for end, t in self.serving if end <= now]
        self.serving = [(end, t) for end, t in self.serving if end > now]
        for ticket in done:
            ctl.finish(ticket, "ok")
        self.served += len(done)
        while (in_flight := len(self.serving) + len(self.rejected)) < ctl.limit:
            ticket = ctl.start(in_flight=in_flight + 1)
            if len(self.serving) < self.capacity:
                self.serving.append((now + self.rng.randint(8, 12), ticket))
            else:
                self.rejected.append(ticket)
                self.refused += 1


def run(ctl: AdaptiveLimit, *, capacity: int, seconds: int) -> tuple[float, float, float]:
    """(share of the capacity used, mean limit, share of calls refused), past the first
    second."""
    upstream = CapacityUpstream(capacity)
    limits: list[int] = []
    for now in range(seconds * TICKS_PER_SECOND):
        if now == TICKS_PER_SECOND:
            upstream.served = upstream.refused = 0
        upstream.step(ctl, now)
        limits.append(ctl.limit)
    measured = (seconds - 1) * TICKS_PER_SECOND
    ideal = capacity * measured / 10  # calls of 10 ticks on average
    calls = upstream.served + upstream.refused
    return (upstream.served / ideal, sum(limits[TICKS_PER_SECOND:]) / measured,
            upstream.refused / calls)


def test_it_holds_the_ceiling_where_halving_saws_below_it() -> None:
    used, mean_limit, refused = run(AdaptiveLimit(64), capacity=16, seconds=30)
    halving_used, halving_limit, _ = run(HalvingAIMD(64), capacity=16, seconds=30)
    print(f"adaptive: {used:.3f} of capacity, limit {mean_limit:.2f}, {refused:.2%} refused; "
          f"halving: {halving_used:.3f}, limit {halving_limit:.2f}")
    assert used >= 0.9 and 15 <= mean_limit <= 17
    assert refused <= 0.02
    assert halving_used <= 0.85


def test_it_finds_ceilings_of_any_size() -> None:
    for capacity in (1, 3, 10, 25, 50):
        used, _, refused = run(AdaptiveLimit(64), capacity=capacity, seconds=30)
        assert used >= 0.9, (capacity, used)
        assert refused <= 0.05, (capacity, refused)


def test_a_capacity_above_the_maximum_keeps_the_maximum() -> None:
    ctl = AdaptiveLimit(8)
    _, mean_limit, refused = run(ctl, capacity=16, seconds=5)
    assert (mean_limit, refused, ctl.limit) == (8, 0, 8)
