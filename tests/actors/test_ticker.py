"""The timer every chore hangs off (runtime.Ticker) outlives a target that fails, a
dead actor included; and a dead core part is noticed once (actors/vitals.py)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pykka
import pytest

from daemon.actors.health import Health
from daemon.actors.vitals import Vitals, dead_parts
from daemon.runtime import Ticker


class Chore(pykka.ThreadingActor):
    def tick(self, now: float) -> None:
        pass


@pytest.fixture
def dead_chore() -> Iterator[pykka.ActorProxy[Chore]]:
    chore = Chore.start().proxy()
    chore.actor_ref.stop(block=True)
    yield chore


class Calls:
    """A target that records the `now` of each call and sets `reached` at the `n`th."""

    def __init__(self, n: int = 0) -> None:
        self.seen: list[float] = []
        self.n = n
        self.reached = threading.Event()

    def __call__(self, now: float) -> None:
        self.seen.append(now)
        if len(self.seen) >= self.n:
            self.reached.set()


def broken(now: float) -> None:
    raise ValueError("a bug in a chore")


def test_a_dead_actor_and_a_failing_target_stop_neither_the_round_nor_the_next(
        dead_chore: pykka.ActorProxy[Chore], caplog: pytest.LogCaptureFixture) -> None:
    before, after = Calls(), Calls()
    ticker = Ticker({"before": before, "dead chore": dead_chore.tick.defer,
                     "broken": broken, "after": after}, interval=1.0, clock=lambda: 0.0)
    with caplog.at_level(logging.WARNING, logger="relay.daemon"):
        for now in (1.0, 2.0, 3.0):
            ticker.tick(now)
    assert before.seen == after.seen == [1.0, 2.0, 3.0]
    dead = [r for r in caplog.records if "dead chore" in r.getMessage()]
    assert len(dead) == 1 and "the actor is dead" in dead[0].getMessage()
    assert len([r for r in caplog.records if "broken" in r.getMessage()]) == 1  # once a streak


def test_a_target_that_recovers_is_said_to_tick_again(caplog: pytest.LogCaptureFixture) -> None:
    failing = [True]

    def flaky(now: float) -> None:
        if failing[0]:
            raise OSError("disk gone")

    ticker = Ticker({"flaky": flaky}, interval=1.0, clock=lambda: 0.0)
    with caplog.at_level(logging.WARNING, logger="relay.daemon"):
        ticker.tick(1.0)
        failing[0] = False
        ticker.tick(2.0)
    assert "the ticker ticks the flaky again" in caplog.text
    assert ticker.failing == set()


def test_the_ticker_thread_keeps_calling_the_live_after_a_dead_one(
        dead_chore: pykka.ActorProxy[Chore]) -> None:
    times = iter(range(1, 10_000))
    live = Calls(n=5)
    ticker = Ticker({"dead chore": dead_chore.tick.defer, "live": live},
                    interval=0.001, clock=lambda: float(next(times)))
    ticker.start()
    try:
        assert live.reached.wait(10), "the ticker stopped after the dead actor"
        assert ticker.thread.is_alive()
    finally:
        ticker.stop()
    assert live.seen[:5] == [1.0, 2.0, 3.0, 4.0, 5.0]  # the clock's, round after round


def test_dead_parts_names_those_whose_check_says_no() -> None:
    assert dead_parts({"scheduler": lambda: True, "notifier": lambda: False,
                       "heartbeat": lambda: False}) == ("notifier", "heartbeat")


def test_vitals_report_a_death_once_and_make_health_degraded(
        dead_chore: pykka.ActorProxy[Chore]) -> None:
    health, deaths = Health(), []
    vitals = Vitals({"scheduler": lambda: True, "validator": dead_chore.actor_ref.is_alive},
                    health=health, on_death=lambda: deaths.append(1))
    vitals.check(10.0)
    vitals.check(11.0)
    assert deaths == [1]
    assert health.death is not None
    assert (health.death.parts, health.death.at) == (("validator",), 10.0)


def test_vitals_say_nothing_while_every_part_lives() -> None:
    health, deaths = Health(), []
    Vitals({"scheduler": lambda: True}, health=health,
           on_death=lambda: deaths.append(1)).check(1.0)
    assert deaths == [] and health.death is None
