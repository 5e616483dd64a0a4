"""`relayd serve` under a service manager's notify protocol (daemon/notify.py): a real
relayd with `NOTIFY_SOCKET` naming a datagram socket the test holds, as systemd does
for `Type=notify`, and `WATCHDOG_USEC` for `WatchdogSec=`."""

from __future__ import annotations

import signal
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from daemon.testing import Simulator
from tests.e2e.harness import Relayd

pytestmark = pytest.mark.e2e

WATCHDOG_USEC = "200000"  # pings every 0.1 s


@pytest.fixture
def manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """The manager's end: a bound datagram socket, named in the environment the relayd
    started next inherits."""
    path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        sock.settimeout(20)
        monkeypatch.setenv("NOTIFY_SOCKET", str(path))
        monkeypatch.setenv("WATCHDOG_USEC", WATCHDOG_USEC)
        yield sock


def receive_until(sock: socket.socket, wanted: Callable[[bytes], bool]) -> list[bytes]:
    """The datagrams up to the first one `wanted` (a timeout if it never comes)."""
    got = [sock.recv(4096)]
    while not wanted(got[-1]):
        got.append(sock.recv(4096))
    return got


def the_rest(sock: socket.socket) -> list[bytes]:
    """What is queued still (the sender has exited: nothing more can come)."""
    sock.setblocking(False)
    got = []
    while True:
        try:
            got.append(sock.recv(4096))
        except BlockingIOError:
            return got


def test_relayd_says_ready_then_pings_the_watchdog_and_says_stopping_on_sigterm(
        manager: socket.socket, simulator_factory: Callable[..., Simulator],
        relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()

    ready = receive_until(manager, lambda d: d.startswith(b"READY=1"))[-1]
    assert ready == f"READY=1\nSTATUS=serving {relayd.url}".encode()
    pings = [manager.recv(4096) for _ in range(5)]
    assert pings == [b"WATCHDOG=1"] * 5

    relayd.terminate()
    said = [*receive_until(manager, lambda d: d.startswith(b"STOPPING=1")),
            *the_rest(manager)]
    assert said[-1] == b"STOPPING=1\nSTATUS=draining"  # and no ping once it drains
    assert set(said[:-1]) <= {b"WATCHDOG=1"}
    assert relayd.proc is not None and relayd.proc.returncode == 0


def test_a_core_actor_death_ends_the_pings_with_stopping_and_status_70(
        manager: socket.socket, simulator_factory: Callable[..., Simulator],
        relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory())
    relayd.command = (sys.executable, "-m", "tests.e2e.actor_killer", "Scheduler")
    relayd.start()
    receive_until(manager, lambda d: d.startswith(b"READY=1"))
    assert manager.recv(4096) == b"WATCHDOG=1"
    assert relayd.proc is not None

    relayd.proc.send_signal(signal.SIGUSR1)

    assert relayd.proc.wait(timeout=30) == 70
    said = the_rest(manager)
    assert said[-1] == b"STOPPING=1\nSTATUS=draining"
    assert set(said[:-1]) <= {b"WATCHDOG=1"}
    assert "scheduler died" in relayd.log_tail(50_000)
