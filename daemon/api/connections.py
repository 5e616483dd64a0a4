"""The rules the HTTP listener keeps its connections by, as plain code over `now`.

A client that trickles its request head (or stalls its body) holds a file descriptor
for as long as it likes unless something closes it; enough of them and every other
client is refused at `accept()`. So each connection has a phase, and:

- a connection awaiting a request head (`HEAD`) is closed once the head takes longer
  than `[server] header_timeout_s`: timed from the connect, or on a kept-alive
  connection from the first byte of its next request;
- a request whose body is still arriving is closed when no byte came for
  `[server] body_timeout_s` (time the server itself stopped reading does not count);
- past `[server] max_connections`, the connections that are not handling a request
  are closed, the longest waiting first, so a new client (and `/healthz`) gets in.

The guard only decides; `listener.py` wires it into aiohttp and does the closing.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

H = TypeVar("H", bound=Hashable)

# Descriptors kept back from the connection cap: the database (with its WAL and
# shared-memory files, per thread), the upstream and outbound pools, result files,
# the loop's own; and a flood's overshoot, as asyncio accepts up to the listen
# backlog (128) per turn of the loop while the evictions those make room for take
# effect a few turns later. A cap that ate them would fail requests in stranger places.
RESERVED_FDS = 512


class Phase(enum.Enum):
    HEAD = "head"  # awaiting a request head
    BUSY = "busy"  # handling a request (reading its body, working, answering)
    IDLE = "idle"  # kept alive between requests, nothing of the next one received


@dataclass
class Connection:
    """One connection's phase, since when, and when a byte last arrived."""

    phase: Phase
    since: float
    last_byte_at: float

    @classmethod
    def opened(cls, now: float) -> Connection:
        return cls(Phase.HEAD, now, now)

    def received(self, now: float) -> None:
        self.last_byte_at = now
        if self.phase is Phase.IDLE:  # the next request's head has begun
            self.phase, self.since = Phase.HEAD, now

    def request_started(self, now: float) -> None:
        self.phase, self.since, self.last_byte_at = Phase.BUSY, now, now

    def request_ended(self, now: float) -> None:
        self.phase, self.since = Phase.IDLE, now


@dataclass(frozen=True)
class Deadlines:
    head_s: float
    body_s: float


def overdue(conn: Connection, now: float, deadlines: Deadlines, *,
            body_pending: bool) -> str | None:
    """Why `conn` must be closed at `now` ("request head" or "request body"), or None.
    `body_pending`: its request's body is still arriving and the server is reading it."""
    if conn.phase is Phase.HEAD and now - conn.since >= deadlines.head_s:
        return "request head"
    if conn.phase is Phase.BUSY and body_pending and now - conn.last_byte_at >= deadlines.body_s:
        return "request body"
    return None


def evictions(conns: Mapping[H, Connection], cap: int) -> list[H]:
    """The connections to close so that at most `cap` stay open: those not handling a
    request, the longest waiting first (the newest comer is the last choice). A
    connection mid-request is never evicted, so fewer may come back than asked."""
    excess = len(conns) - cap
    if excess <= 0:
        return []
    waiting = [(c.since, i, h) for i, (h, c) in enumerate(conns.items())
               if c.phase is not Phase.BUSY]
    return [h for _, _, h in sorted(waiting)[:excess]]


def fd_limit_wanted(soft: int, hard: int, *, connections: int, infinity: int) -> int:
    """The soft RLIMIT_NOFILE to ask for: enough for `connections` plus the reserve,
    never lower than `soft`, never above `hard` (`infinity`: no hard limit)."""
    needed = connections + RESERVED_FDS
    ceiling = needed if hard == infinity else min(needed, hard)
    return max(soft, ceiling)


def connection_cap(wanted: int, fd_limit: int) -> int:
    """`wanted` clamped so the connections leave the reserve free under `fd_limit`
    (half of a limit too small for the reserve)."""
    room = fd_limit - RESERVED_FDS if fd_limit >= 2 * RESERVED_FDS else fd_limit // 2
    return max(1, min(wanted, room))


def sweep_interval(deadlines: Deadlines) -> float:
    """How often deadlines are checked: a tenth of the shorter one, 50 ms to 1 s."""
    return min(1.0, max(0.05, min(deadlines.head_s, deadlines.body_s) / 10))


class ConnectionGuard(Generic[H]):
    """The open connections (by any handle) and their phases. Each report takes the
    time from `clock`; a report about a connection it does not know is ignored (a
    connection it evicted may still report on its way out)."""

    def __init__(self, deadlines: Deadlines, cap: int, *, clock: Callable[[], float]) -> None:
        self.deadlines = deadlines
        self.cap = cap
        self.clock = clock
        self.conns: dict[H, Connection] = {}

    def opened(self, handle: H) -> list[H]:
        """Track a new connection; return the ones to close to stay within the cap."""
        self.conns[handle] = Connection.opened(self.clock())
        victims = evictions(self.conns, self.cap)
        for victim in victims:
            del self.conns[victim]
        return victims

    def closed(self, handle: H) -> None:
        self.conns.pop(handle, None)

    def received(self, handle: H) -> None:
        if conn := self.conns.get(handle):
            conn.received(self.clock())

    def request_started(self, handle: H) -> None:
        if conn := self.conns.get(handle):
            conn.request_started(self.clock())

    def request_ended(self, handle: H) -> None:
        if conn := self.conns.get(handle):
            conn.request_ended(self.clock())

    def sweep(self, body_pending: Callable[[H], bool]) -> list[tuple[H, str]]:
        """The connections past a deadline now, with why; they are forgotten here."""
        now = self.clock()
        late = [(h, why) for h, c in self.conns.items()
                if (why := overdue(c, now, self.deadlines,
                                   body_pending=c.phase is Phase.BUSY and body_pending(h)))]
        for handle, _ in late:
            del self.conns[handle]
        return late


class LogThrottle:
    """At most one log line per `interval_s`, counting the lines it held back."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.held = 0
        self._last: float | None = None

    def admit(self, now: float) -> int | None:
        """None: hold this line back. Otherwise write it, with the returned count of
        lines held back since the last one written."""
        if self._last is not None and now - self._last < self.interval_s:
            self.held += 1
            return None
        held, self.held, self._last = self.held, 0, now
        return held
