"""The HTTP listener's connection rules as plain code: deadlines for a request's head
and body, which connections go past the cap, the descriptor arithmetic, and the
throttled accept-error log (daemon/api/connections.py, listener.py)."""

from __future__ import annotations

import asyncio
import errno
import logging
from typing import Any

import pytest

from daemon.api.connections import (
    RESERVED_FDS,
    Connection,
    ConnectionGuard,
    Deadlines,
    LogThrottle,
    Phase,
    connection_cap,
    evictions,
    fd_limit_wanted,
    overdue,
    sweep_interval,
)
from daemon.api.listener import ACCEPT_ERROR, AcceptErrorLog

DEADLINES = Deadlines(head_s=10.0, body_s=30.0)
INFINITY = -1


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_conn(phase: Phase = Phase.HEAD, *, since: float = 0.0,
              last_byte_at: float | None = None) -> Connection:
    return Connection(phase, since, since if last_byte_at is None else last_byte_at)


# --- phases -------------------------------------------------------------------------


def test_a_connection_awaits_its_first_head_from_the_moment_it_opens() -> None:
    conn = Connection.opened(5.0)
    assert (conn.phase, conn.since, conn.last_byte_at) == (Phase.HEAD, 5.0, 5.0)


def test_bytes_of_a_head_do_not_move_its_deadline() -> None:
    conn = Connection.opened(0.0)
    for t in (1.0, 2.0, 9.9):  # a trickle: one byte now and then
        conn.received(t)
    assert (conn.phase, conn.since, conn.last_byte_at) == (Phase.HEAD, 0.0, 9.9)
    assert overdue(conn, 10.0, DEADLINES, body_pending=False) == "request head"


def test_a_request_stops_the_head_clock_and_its_end_leaves_the_connection_idle() -> None:
    conn = Connection.opened(0.0)
    conn.request_started(3.0)
    assert (conn.phase, conn.since, conn.last_byte_at) == (Phase.BUSY, 3.0, 3.0)
    conn.request_ended(500.0)
    assert (conn.phase, conn.since) == (Phase.IDLE, 500.0)


def test_the_next_head_on_a_kept_alive_connection_is_timed_from_its_first_byte() -> None:
    conn = make_conn(Phase.IDLE, since=100.0)
    conn.received(400.0)
    assert (conn.phase, conn.since) == (Phase.HEAD, 400.0)
    assert overdue(conn, 409.9, DEADLINES, body_pending=False) is None
    assert overdue(conn, 410.0, DEADLINES, body_pending=False) == "request head"


# --- deadlines ----------------------------------------------------------------------


@pytest.mark.parametrize(("elapsed", "late"), [(0.0, False), (9.99, False), (10.0, True),
                                               (3600.0, True)])
def test_a_head_is_late_once_the_header_timeout_passes(elapsed: float, late: bool) -> None:
    conn = make_conn(Phase.HEAD, since=50.0)
    assert (overdue(conn, 50.0 + elapsed, DEADLINES, body_pending=False)
            == ("request head" if late else None))


@pytest.mark.parametrize(("silence", "late"), [(0.0, False), (29.9, False), (30.0, True)])
def test_a_body_is_late_after_body_timeout_without_a_byte(silence: float, late: bool) -> None:
    conn = make_conn(Phase.BUSY, since=0.0, last_byte_at=200.0)
    assert (overdue(conn, 200.0 + silence, DEADLINES, body_pending=True)
            == ("request body" if late else None))


@pytest.mark.parametrize("phase", [Phase.BUSY, Phase.IDLE])
def test_no_deadline_without_a_head_or_a_body_to_wait_for(phase: Phase) -> None:
    """A request still being handled (its body all in) and a kept-alive connection with
    nothing sent are never late, however long they take."""
    conn = make_conn(phase, since=0.0)
    assert overdue(conn, 1e6, DEADLINES, body_pending=False) is None


def test_a_pending_body_is_no_deadline_outside_a_request() -> None:
    assert overdue(make_conn(Phase.IDLE), 1e6, DEADLINES, body_pending=True) is None


# --- the cap ------------------------------------------------------------------------


def test_within_the_cap_nothing_is_evicted() -> None:
    conns = {n: make_conn(since=float(n)) for n in range(4)}
    assert evictions(conns, 4) == []
    assert evictions({}, 1) == []


def test_past_the_cap_the_longest_waiting_go_first_whatever_their_order() -> None:
    conns = {"c": make_conn(Phase.HEAD, since=30.0), "a": make_conn(Phase.IDLE, since=10.0),
             "new": make_conn(Phase.HEAD, since=99.0), "b": make_conn(Phase.HEAD, since=20.0)}
    assert evictions(conns, 3) == ["a"]
    assert evictions(conns, 2) == ["a", "b"]
    assert evictions(conns, 1) == ["a", "b", "c"]


def test_a_connection_in_a_request_is_never_evicted() -> None:
    conns = {"busy-old": make_conn(Phase.BUSY, since=0.0),
             "head": make_conn(Phase.HEAD, since=5.0),
             "busy": make_conn(Phase.BUSY, since=6.0),
             "new": make_conn(Phase.HEAD, since=9.0)}
    assert evictions(conns, 2) == ["head", "new"]
    assert evictions(conns, 1) == ["head", "new"]  # fewer than asked: the rest are busy


def test_ties_go_to_the_one_that_came_first() -> None:
    conns = {name: make_conn(since=1.0) for name in ("first", "second", "third")}
    assert evictions(conns, 1) == ["first", "second"]


@pytest.mark.parametrize(("wanted", "fd_limit", "cap"), [
    (1024, 1024 + RESERVED_FDS, 1024),  # raised enough: the cap fits
    (1024, 1024, 1024 - RESERVED_FDS),  # not raised: the reserve comes off the cap
    (50, 100_000, 50),
    (1024, 2 * RESERVED_FDS, RESERVED_FDS),
    (1024, 300, 150),  # a limit too small for the reserve: half of it
    (1024, 1, 1),
])
def test_the_cap_leaves_descriptors_for_the_rest_of_the_daemon(wanted: int, fd_limit: int,
                                                               cap: int) -> None:
    assert connection_cap(wanted, fd_limit) == cap


@pytest.mark.parametrize(("soft", "hard", "wanted"), [
    (1024, 524_288, 1024 + RESERVED_FDS),  # raised just enough
    (1024, 1100, 1100),  # toward the hard limit, not past it
    (1024, INFINITY, 1024 + RESERVED_FDS),
    (65_536, 524_288, 65_536),  # never lowered
])
def test_the_descriptor_limit_asked_for(soft: int, hard: int, wanted: int) -> None:
    assert fd_limit_wanted(soft, hard, connections=1024, infinity=INFINITY) == wanted


@pytest.mark.parametrize(("head", "body", "interval"), [(10, 30, 1.0), (2, 30, 0.2),
                                                        (0.1, 0.1, 0.05)])
def test_deadlines_are_checked_often_enough(head: float, body: float, interval: float) -> None:
    assert sweep_interval(Deadlines(head, body)) == pytest.approx(interval)


# --- the guard ----------------------------------------------------------------------


def test_the_guard_keeps_the_cap_and_forgets_whom_it_evicts() -> None:
    clock = Clock()
    guard: ConnectionGuard[str] = ConnectionGuard(DEADLINES, 2, clock=clock)
    assert guard.opened("slow-1") == []
    clock.now += 1
    guard.opened("working")
    guard.request_started("working")
    clock.now += 1
    assert guard.opened("slow-2") == ["slow-1"]
    clock.now += 1
    assert guard.opened("newcomer") == ["slow-2"]
    assert set(guard.conns) == {"working", "newcomer"}
    guard.received("slow-1")  # a late report from a connection on its way out
    guard.request_ended("slow-1")
    guard.closed("slow-1")
    assert set(guard.conns) == {"working", "newcomer"}


def test_the_sweep_names_the_late_ones_and_why_and_forgets_them() -> None:
    clock = Clock(0.0)
    guard: ConnectionGuard[str] = ConnectionGuard(DEADLINES, 100, clock=clock)
    for name in ("slow-head", "stalled-body", "held-body", "thinking", "idle"):
        guard.opened(name)
    for name in ("stalled-body", "held-body", "thinking", "idle"):
        guard.request_started(name)
    guard.request_ended("idle")
    asked: list[str] = []

    def pending(name: str) -> bool:
        asked.append(name)
        return name in ("stalled-body",)  # held-body: the server stopped reading it

    clock.now = 9.0
    assert guard.sweep(pending) == []
    clock.now = 31.0
    assert sorted(guard.sweep(pending)) == [("slow-head", "request head"),
                                            ("stalled-body", "request body")]
    assert set(guard.conns) == {"held-body", "thinking", "idle"}
    assert "idle" not in asked  # only requests in progress have a body to wait for


def test_a_body_that_keeps_coming_is_never_late() -> None:
    clock = Clock(0.0)
    guard: ConnectionGuard[str] = ConnectionGuard(DEADLINES, 10, clock=clock)
    guard.opened("upload")
    guard.request_started("upload")
    for _ in range(100):
        clock.now += 29.0
        guard.received("upload")
        assert guard.sweep(lambda _: True) == []


# --- the accept-error log -----------------------------------------------------------


@pytest.mark.parametrize("interval", [1.0, 5.0])
def test_the_throttle_admits_one_line_per_interval_and_counts_the_rest(interval: float) -> None:
    throttle = LogThrottle(interval)
    assert throttle.admit(0.0) == 0
    assert [throttle.admit(t / 1000 * interval) for t in range(1, 1000)] == [None] * 999
    assert throttle.admit(interval) == 999
    assert throttle.admit(interval * 1.5) is None
    assert throttle.admit(interval * 2) == 1
    assert throttle.admit(interval * 100) == 0


def accept_error() -> dict[str, Any]:
    return {"message": ACCEPT_ERROR, "exception": OSError(errno.EMFILE, "Too many open files")}


def test_a_flood_of_accept_errors_is_one_line_every_few_seconds(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock(0.0)
    handler = AcceptErrorLog(None, clock=clock, interval_s=5.0)
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.ERROR):
            for step in range(15_000):  # 68,000 a quarter-minute was the attack's rate
                clock.now = step / 1000
                handler(loop, accept_error())
    finally:
        loop.close()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert "Too many open files" in lines[0] and "more" not in lines[0]
    assert all("4999 more since the last report" in line for line in lines[1:])


def test_other_loop_errors_go_to_the_handler_it_replaced() -> None:
    seen: list[dict[str, Any]] = []
    handler = AcceptErrorLog(lambda loop, context: seen.append(context), clock=Clock())
    loop = asyncio.new_event_loop()
    try:
        handler(loop, {"message": "Task exception was never retrieved"})
        handler(loop, accept_error())
    finally:
        loop.close()
    assert seen == [{"message": "Task exception was never retrieved"}]


def test_without_a_handler_before_it_other_errors_go_to_asyncios_default(
        caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            AcceptErrorLog(None, clock=Clock())(loop, {"message": "something else broke"})
    finally:
        loop.close()
    assert [r.getMessage() for r in caplog.records] == ["something else broke"]
