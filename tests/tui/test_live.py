"""`relaytui.live`: the feed's sessions, backoff and fallbacks, stepped by hand (no
threads, no Textual, no network)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any

from relaytui.client import Event, RelayError
from relaytui.live import (
    Backoff,
    Connection,
    JobEvent,
    JobsListed,
    LiveFeed,
    Workspace,
)

DOWN = RelayError(None, "cannot reach relayd at http://x: connection refused")


class Stream:
    def __init__(self, events: list[Event], *, then: Exception | None = None) -> None:
        self.events, self.then, self.closed = events, then, False

    def __iter__(self) -> Iterator[Event]:
        yield from self.events
        if self.then is not None:
            raise self.then

    def close(self) -> None:
        self.closed = True


class Source:
    """Answers `all_jobs` and `open_events` from scripts; an exception is raised."""

    url = "http://x"

    def __init__(self, listings: list[list[dict[str, Any]] | Exception],
                 streams: Iterable[Stream | Exception] = ()) -> None:
        self.listings, self.streams = list(listings), list(streams)
        self.listed = 0

    def all_jobs(self) -> list[dict[str, Any]]:
        self.listed += 1
        answer = self.listings.pop(0) if len(self.listings) > 1 else self.listings[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def open_events(self) -> Stream:
        answer = self.streams.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def feed(source: Source) -> tuple[LiveFeed, list[Any]]:
    """The feed on `source`, and what it posts (any kind of update; tests read them by
    position)."""
    posted: list[Any] = []
    clock = iter(range(100, 1000)).__next__
    return LiveFeed(source, posted.append, clock=lambda: float(clock())), posted


def test_backoff_doubles_to_five_and_resets() -> None:
    backoff = Backoff()
    assert [backoff.next() for _ in range(6)] == [1, 2, 4, 5, 5, 5]
    backoff.reset()
    assert backoff.next() == 1


def test_a_daemon_that_is_down_is_retried_with_backoff_and_announced_each_time() -> None:
    live, posted = feed(Source([DOWN]))
    assert [live.step() for _ in range(6)] == [1, 2, 4, 5, 5, 5]
    assert all(p.state == "down" for p in posted)
    assert posted[0].detail == "cannot reach relayd at http://x" and posted[0].retry_in == 1


def test_a_session_lists_then_follows_events_until_the_stream_breaks() -> None:
    jobs = [{"id": "a"}]
    stream = Stream([Event("job.created", {"id": "b"}), Event("job.progress", {"id": "b"})],
                    then=DOWN)
    live, posted = feed(Source([jobs], [stream]))
    assert live.step() == 1
    assert posted[0] == JobsListed(jobs, 100.0)
    assert posted[1] == Connection("live", "live events")
    assert posted[2:4] == [JobEvent("job.created", {"id": "b"}, 101.0),
                           JobEvent("job.progress", {"id": "b"}, 102.0)]
    assert posted[4].state == "down"


def test_success_resets_the_backoff() -> None:
    source = Source([DOWN, DOWN, [], []], [Stream([], then=DOWN)])
    live, _ = feed(source)
    assert [live.step(), live.step(), live.step()] == [1, 2, 1]


def test_a_dropped_stream_refetches_the_list() -> None:
    stream = Stream([Event("stream.dropped", {"count": 1200}), Event("keepalive", {})])
    source = Source([[{"id": "a"}], [{"id": "a"}, {"id": "b"}]], [stream])
    live, posted = feed(source)
    live.step()
    listed = [p for p in posted if isinstance(p, JobsListed)]
    assert [len(p.jobs) for p in listed] == [1, 2]
    assert not any(isinstance(p, JobEvent) for p in posted)
    assert posted[-1] == Connection("down", "the event stream ended", 1)


def test_without_an_event_stream_it_polls_every_two_seconds() -> None:
    source = Source([[{"id": "a"}]], [RelayError(404, "Not Found")])
    live, posted = feed(source)
    assert live.step() == 2.0 and live.polling
    assert posted[-1].state == "polling" and "Not Found" in posted[-1].detail
    assert live.step() == 2.0 and live.step() == 2.0
    assert source.listed == 3
    assert sum(isinstance(p, Connection) for p in posted) == 3  # live, no stream, polling


def test_a_refused_key_and_odd_answers_are_retried_not_raised() -> None:
    live, posted = feed(Source([RelayError(401, "Invalid API key."), ValueError("bad json"),
                                RelayError(500, "boom")]))
    assert [live.step(), live.step(), live.step()] == [1, 2, 4]
    assert [p.state for p in posted] == ["refused", "down", "down"]
    assert posted[0].detail == "Invalid API key."
    assert "ValueError: bad json" in posted[1].detail
    assert posted[2].detail == "relayd answered 500: boom"


def test_stop_ends_a_waiting_stream_and_the_loop() -> None:
    started = threading.Event()

    class Blocking(Stream):
        def __iter__(self) -> Iterator[Event]:
            started.set()
            while not self.closed:
                started.wait(0.01)
            return iter(())

    stream = Blocking([])
    live, posted = feed(Source([[]], [stream]))
    thread = threading.Thread(target=live.run)
    thread.start()
    assert started.wait(5)
    live.stop()
    thread.join(5)
    assert not thread.is_alive() and stream.closed
    assert posted[0] == Connection("connecting", "connecting to http://x")


def test_the_stream_names_the_workspace() -> None:
    stream = Stream([Event("stream.hello", {"workspace": "acme"}),
                     Event("stream.hello", {"workspace": 7})], then=DOWN)
    live, posted = feed(Source([[]], [stream]))
    live.step()
    assert [p for p in posted if isinstance(p, Workspace)] == [Workspace("acme")]


async def test_while_disconnected_the_numbers_read_stale_until_relayd_is_back() -> None:
    from relaytui.app import build_app
    from relaytui.live import Connection
    from relaytui.messages import FeedUpdate
    from relaytui.settings import Settings
    from relaytui.testing import FakeRelay
    from tests.tui.conftest import SIZE, jobs_screen, wait_for

    fake = FakeRelay(replay=False)
    app = build_app(fake.client(), Settings("http://relay", "rk_x"), clock=fake.clock,
                    save=lambda _: None)
    async with app.run_test(size=SIZE) as pilot:
        jobs = jobs_screen(app)
        await wait_for(pilot, lambda: len(jobs.board) > 0)
        table, detail = jobs.query_one("#jobs"), jobs.query_one("#detail")
        assert not table.has_class("-stale")
        jobs.post_message(FeedUpdate(Connection("down", "cannot reach relayd", 5.0)))
        await wait_for(pilot, lambda: table.has_class("-stale"))
        assert detail.has_class("-stale") and "stale since" in str(table.border_title)
        jobs.post_message(FeedUpdate(Connection("live", "live events")))
        await wait_for(pilot, lambda: not table.has_class("-stale"))
        assert not detail.has_class("-stale") and "stale" not in str(table.border_title)
