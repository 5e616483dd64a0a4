"""relayd's store health in the TUI: `/healthz` answers read into a `StoreHealth`, the
watch that posts only changes, and the red banner on the jobs screen (Pilot, on the
in-memory `FakeRelay`) that shows while the store cannot write and leaves once it heals."""

from __future__ import annotations

import threading
from typing import Any

from daemon.testing import wait_until
from relaytui.app import build_app
from relaytui.client import RelayError
from relaytui.health import HealthWatch, StoreHealth
from relaytui.settings import Settings
from relaytui.testing import FakeRelay
from relaytui.widgets.header import StoreBanner
from tests.tui.conftest import HERE, SIZE, jobs_screen, wait_for

FULL = {"status": "degraded", "reason": "insufficient_storage",
        "detail": "No space left on device", "since": 1_791_105_164.0}  # 09:12:44Z


def test_a_degraded_answer_reads_as_a_banner() -> None:
    health = StoreHealth.from_answer(FULL)
    assert health.degraded
    assert health.banner() == ("relayd cannot write to its store: insufficient_storage — "
                               "No space left on device (since 2026-10-04 09:12:44Z)")
    assert StoreHealth.from_answer({"status": "ok"}) == StoreHealth()
    assert StoreHealth().banner() == ""


def test_a_dead_actor_reads_as_a_restart_not_as_the_store() -> None:
    health = StoreHealth.from_answer({
        "status": "degraded", "reason": "actor_dead", "actors": ["scheduler"],
        "detail": "scheduler died; relayd exits with status 70 for its manager to restart "
                  "it", "since": 1_791_105_164.0})
    assert health.degraded
    assert health.banner() == ("relayd is restarting: scheduler died; relayd exits with "
                               "status 70 for its manager to restart it")


class Answers:
    """`health()` answering each of `answers` in turn (an exception is raised)."""

    def __init__(self, *answers: dict[str, Any] | Exception) -> None:
        self.answers = list(answers)

    def health(self) -> dict[str, Any]:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_the_watch_posts_changes_and_learns_nothing_from_a_relayd_it_cannot_reach() -> None:
    posted: list[StoreHealth] = []
    watch = HealthWatch(Answers({"status": "ok"}, {"status": "ok"}, FULL,
                                RelayError(None, "cannot reach relayd"), ValueError("html"),
                                FULL, {"status": "ok"}), posted.append)
    for _ in range(7):
        watch.step()
    assert posted == [StoreHealth(), StoreHealth.from_answer(FULL), StoreHealth()]


def test_stop_ends_the_wait_at_once() -> None:
    posted: list[StoreHealth] = []
    watch = HealthWatch(Answers({"status": "ok"}, FULL), posted.append, every=3600)
    running = threading.Thread(target=watch.run, daemon=True)
    running.start()
    wait_until(lambda: posted, timeout=5)  # it asked once, and waits an hour for the next
    watch.stop()
    running.join(timeout=5)
    assert not running.is_alive(), "stop() did not end the wait"
    assert posted == [StoreHealth()]  # the second answer was never asked for


def test_a_watch_stopped_before_it_runs_asks_nothing() -> None:
    posted: list[StoreHealth] = []
    watch = HealthWatch(Answers({"status": "ok"}), posted.append, every=3600)
    watch.stop()
    running = threading.Thread(target=watch.run, daemon=True)
    running.start()
    running.join(timeout=5)
    assert not running.is_alive()
    assert posted == []  # an ask would have posted the first answer


async def test_a_red_banner_shows_while_the_store_cannot_write() -> None:
    fake = FakeRelay(replay=False)
    fake.health_answer = FULL
    app = build_app(fake.client(), Settings("http://127.0.0.1:8080", "rk_test_key_123"),
                    clock=fake.clock, save=lambda _: None, start_dir=HERE / "fixtures",
                    health_every=0.05)
    async with app.run_test(size=SIZE) as pilot:
        banner = jobs_screen(app).query_one(StoreBanner)
        await wait_for(pilot, lambda: banner.display, what="the banner")
        text = str(banner.render())
        assert text.startswith("relayd cannot write to its store: insufficient_storage — "
                               "No space left on device")
        assert banner.region.y == 1  # under the top line, above the jobs
        await wait_for(pilot, lambda: any(n.severity == "error" and "insufficient_storage"
                                          in n.message for n in app._notifications))

        fake.health_answer = {"status": "ok"}
        await wait_for(pilot, lambda: not banner.display, what="the banner leaves")
        await wait_for(pilot, lambda: any("takes writes again" in n.message
                                          for n in app._notifications))
