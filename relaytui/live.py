"""The TUI's live feed: list the jobs, then follow `GET /v1/events`; when relayd cannot be
reached, say so and try again with backoff (1 s doubling, at most 5 s: an operator waits
for it); when it has no event
stream, poll the list every 2 s. Runs in one thread and reports through a `post`
callback with plain dataclasses, so it is tested without Textual.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from relaytui.client import Event, RelayError

# A stream answered with one of these means "no event stream here": poll instead.
_NO_STREAM = frozenset({404, 405, 501})


@dataclass(frozen=True)
class Connection:
    """How the feed stands: connecting, live, polling, down (retrying) or refused (401)."""

    state: str
    detail: str = ""
    retry_in: float | None = None


@dataclass(frozen=True)
class Workspace:
    """The workspace the key belongs to, as relayd's event stream names it."""

    name: str


@dataclass(frozen=True)
class JobsListed:
    """A full list of jobs (newest first), at start, after a reconnect or when polling."""

    jobs: list[dict[str, Any]]
    at: float


@dataclass(frozen=True)
class JobEvent:
    """One `job.*` event, stamped with the time it arrived."""

    type: str
    data: dict[str, Any]
    at: float


# Everything the feed posts.
Update: TypeAlias = Connection | Workspace | JobsListed | JobEvent


class Stream(Protocol):
    def __iter__(self) -> Any: ...
    def close(self) -> None: ...


class Source(Protocol):
    """What the feed needs of `RelayClient`."""

    url: str

    def all_jobs(self) -> list[dict[str, Any]]: ...
    def open_events(self) -> Stream: ...


class Backoff:
    """1, 2, 4, 5, 5, … seconds until `reset()`."""

    def __init__(self, *, first: float = 1.0, cap: float = 5.0) -> None:
        self.first, self.cap = first, cap
        self._next = first

    def next(self) -> float:
        delay = self._next
        self._next = min(self._next * 2, self.cap)
        return delay

    def reset(self) -> None:
        self._next = self.first


class LiveFeed:
    def __init__(self, client: Source, post: Callable[[Update], object], *,
                 clock: Callable[[], float] = time.time, poll_every: float = 2.0,
                 backoff: Backoff | None = None) -> None:
        self.client = client
        self.post = post
        self.clock = clock
        self.poll_every = poll_every
        self.backoff = backoff or Backoff()
        self.polling = False
        self._stopped = threading.Event()
        self._stream: Stream | None = None
        self._announced: Connection | None = None

    def run(self) -> None:
        """Until `stop()`: one session at a time, waiting between them."""
        self._announce(Connection("connecting", f"connecting to {self.client.url}"))
        while not self._stopped.is_set():
            delay = self.step()
            if delay:
                self._stopped.wait(delay)

    def stop(self) -> None:
        """Thread-safe; ends a waiting read or a backoff pause at once."""
        self._stopped.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def step(self) -> float:
        """One listing-and-streaming session (or one poll); returns seconds to wait."""
        try:
            return self._poll() if self.polling else self._session()
        except RelayError as exc:
            return self._failed(exc)
        except Exception as exc:  # an odd reply (a proxy's HTML, bad JSON) is not a crash
            return self._down(f"unexpected answer from {self.client.url}: "
                              f"{type(exc).__name__}: {exc}")

    def _list(self) -> None:
        self.post(JobsListed(self.client.all_jobs(), self.clock()))

    def _session(self) -> float:
        self._list()
        self.backoff.reset()
        self._announce(Connection("live", "live events"))
        try:
            self._follow(self.client.open_events())
        except RelayError as exc:
            if exc.status not in _NO_STREAM:
                raise
            self.polling = True
            self._announce(Connection("polling", f"no live events ({exc.message}); "
                                                 f"polling every {self.poll_every:g}s"))
            return self.poll_every
        finally:
            self._stream = None
        if self.stopped:
            return 0.0
        return self._down("the event stream ended")

    def _follow(self, stream: Stream) -> None:
        self._stream = stream
        if self.stopped:  # stop() came before the stream existed
            stream.close()
        for event in stream:
            if self.stopped:
                return
            self._forward(event)

    def _forward(self, event: Event) -> None:
        if event.type == "stream.dropped":  # events were lost: the list is the truth
            self._list()
        elif event.type == "stream.hello" and isinstance(event.data.get("workspace"), str):
            self.post(Workspace(event.data["workspace"]))
        elif event.type.startswith("job."):
            self.post(JobEvent(event.type, event.data, self.clock()))

    def _poll(self) -> float:
        self._list()
        self.backoff.reset()
        self._announce(Connection("polling", f"polling every {self.poll_every:g}s"))
        return self.poll_every

    def _failed(self, exc: RelayError) -> float:
        if exc.status == 401:
            delay = self.backoff.next()
            self._announce(Connection("refused", exc.message, delay))
            return delay
        if exc.unreachable:
            return self._down(f"cannot reach relayd at {self.client.url}")
        return self._down(f"relayd answered {exc.status}: {exc.message}")

    def _down(self, detail: str) -> float:
        delay = self.backoff.next()
        self._announce(Connection("down", detail, delay))
        return delay

    def _announce(self, connection: Connection) -> None:
        """Post a new state; a retry is always posted (its countdown starts again)."""
        if connection.retry_in is not None or connection != self._announced:
            self._announced = connection
            self.post(connection)
