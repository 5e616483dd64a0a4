"""The service manager's notify protocol (daemon/notify.py): the messages, where they
go, the watchdog's cadence and what counts as alive. Time is stepped by hand; the
sender is a real AF_UNIX datagram socket only where the socket itself is tested."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.actors.health import Health
from daemon.notify import (
    NotifySocket,
    Watchdog,
    message,
    ping_due,
    serving,
    socket_address,
    watchdog_every,
)
from daemon.store.faults import StoreUnavailable


def test_a_message_is_key_value_lines_and_a_value_stays_on_its_line() -> None:
    assert message(READY=1, STATUS="serving http://h:1") == b"READY=1\nSTATUS=serving http://h:1"
    assert message(STATUS="two\nlines") == b"STATUS=two lines"


@pytest.mark.parametrize(("value", "address"), [
    ("/run/systemd/notify", "/run/systemd/notify"),
    ("@relay/notify", "\0relay/notify"),
    ("", None), ("@", None), ("vsock:2:1234", None), ("relative/path", None)])
def test_the_socket_address_is_a_path_or_an_abstract_name(value: str,
                                                          address: str | None) -> None:
    assert socket_address(value) == address


@pytest.mark.parametrize(("env", "every"), [
    ({"WATCHDOG_USEC": "30000000"}, 15.0),
    ({"WATCHDOG_USEC": "200000", "WATCHDOG_PID": "42"}, 0.1),
    ({"WATCHDOG_USEC": "200000", "WATCHDOG_PID": "43"}, None),  # asked of another process
    ({"WATCHDOG_USEC": "0"}, None), ({"WATCHDOG_USEC": "soon"}, None), ({}, None)])
def test_the_watchdog_pings_at_half_its_timeout_when_asked_of_this_process(
        env: dict[str, str], every: float | None) -> None:
    assert watchdog_every(env, pid=42) == every


def test_a_ping_is_due_first_then_at_the_last_tick_before_it_would_be_late() -> None:
    assert ping_due(100.0, last=None, every=15.0, tick=0.25)
    assert not ping_due(114.5, last=100.0, every=15.0, tick=0.25)
    assert ping_due(114.75, last=100.0, every=15.0, tick=0.25)
    assert ping_due(99.0, last=100.0, every=15.0, tick=0.25)  # the clock went back
    assert ping_due(100.1, last=100.0, every=0.1, tick=0.1)  # a tick per ping: every tick


def pings(watchdog: Watchdog, sent: list[bytes], times: list[float]) -> list[float]:
    """The times among `times` at which `watchdog` pinged."""
    at = []
    for now in times:
        before = len(sent)
        watchdog.tick(now)
        if len(sent) > before:
            at.append(now)
    return at


def test_the_watchdog_pings_on_ticks_while_alive_and_stops_when_not() -> None:
    sent: list[bytes] = []
    alive = [True]
    watchdog = Watchdog(sent.append, every=1.0, tick=0.25, alive=lambda: alive[0])
    ticks = [i * 0.25 for i in range(13)]  # 0 .. 3 s

    assert pings(watchdog, sent, ticks) == [0.0, 0.75, 1.5, 2.25, 3.0]
    assert set(sent) == {b"WATCHDOG=1"}
    alive[0] = False
    assert pings(watchdog, sent, [3.25 + i * 0.25 for i in range(12)]) == []


def test_a_store_fault_being_waited_out_is_alive_a_dead_part_or_a_death_is_not() -> None:
    health = Health()
    health.record(StoreUnavailable("disk I/O error"), now=1.0)
    parts = {"scheduler": lambda: True, "I/O loop": lambda: True}
    assert serving(parts, health)
    assert not serving({**parts, "notifier": lambda: False}, health)
    health.died(("scheduler",), now=2.0)
    assert not serving(parts, health)


@pytest.fixture
def abstract_receiver() -> Iterator[tuple[str, socket.socket]]:
    name = f"relay-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        yield "@" + name, sock


def test_notify_socket_sends_to_an_abstract_name(
        abstract_receiver: tuple[str, socket.socket]) -> None:
    value, receiver = abstract_receiver
    sender = NotifySocket.from_env({"NOTIFY_SOCKET": value})
    assert sender is not None
    sender.send(message(READY=1))
    assert receiver.recv(4096) == b"READY=1"


def test_notify_socket_is_none_without_a_socket_and_never_raises_on_a_gone_one(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert NotifySocket.from_env({}) is None
    assert NotifySocket.from_env({"NOTIFY_SOCKET": "vsock:2:1"}) is None
    gone = NotifySocket(str(tmp_path / "gone.sock"))
    gone.send(message(WATCHDOG=1))
    gone.send(message(WATCHDOG=1))
    assert gone.failing
    assert sum("cannot notify" in r.message for r in caplog.records) == 1  # once a streak
