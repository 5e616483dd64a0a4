"""Fixtures of the TUI tests: the end-to-end harness (real `relayd serve` and `relayd
simulate` processes), an app factory and a Pilot helper that waits on a condition."""

from __future__ import annotations

import itertools
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from relaytui.app import RelayApp, build_app
from relaytui.client import RelayClient
from relaytui.settings import Settings
from tests.e2e.harness import (
    RELAYD,
    Relayd,
    Simulator,
    config_text,
    free_port,
    relayd_factory,
    simulator_factory,
)

__all__ = ["relayd_factory", "simulator_factory"]

HERE = Path(__file__).parent
SIZE = (160, 45)


async def wait_for(pilot: Pilot[Any], check: Callable[[], Any], *, timeout: float = 15.0,
                   what: str = "condition") -> Any:
    """Let the app run until `check()` is truthy (its value is returned)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout}s")
        await pilot.pause(0.05)


@pytest.fixture(scope="module")
def shared_relayd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Relayd]:
    """One simulator and one relayd for a whole module (starting them is most of a
    test's time); each test takes its own workspace with `workspace_key`."""
    root = tmp_path_factory.mktemp("relayd")
    port = free_port()
    sim_proc = subprocess.Popen([*RELAYD, "simulate", "--port", str(port)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert sim_proc.stdout is not None and "SIMULATED" in sim_proc.stdout.readline()
    config, api_port = root / "relay.toml", free_port()
    config.write_text(config_text(data_dir=root / "data", port=api_port,
                                  sim=Simulator(port, sim_proc), attempts=1))
    daemon = Relayd(config=config, port=api_port, log=root / "relayd.log")
    try:
        yield daemon.start()
    finally:
        if daemon.proc is not None:
            daemon.proc.send_signal(signal.SIGTERM)
            daemon.proc.wait(timeout=15)
        sim_proc.terminate()
        sim_proc.wait(timeout=10)


_workspaces = itertools.count()


@pytest.fixture
def workspace(shared_relayd: Relayd) -> str:
    """A fresh workspace of the shared daemon: its jobs are this test's alone."""
    name = f"tui-{next(_workspaces)}"
    shared_relayd.key(name)
    return name


@pytest.fixture
def saved() -> list[Settings]:
    """Settings the app saved (never the operator's real config file)."""
    return []


@pytest.fixture
def make_app(saved: list[Settings]) -> Callable[..., RelayApp]:
    clients: list[RelayClient] = []

    def make(url: str, key: str | None, **options: Any) -> RelayApp:
        client = RelayClient(url, key) if key else None
        if client is not None:
            clients.append(client)
        options.setdefault("start_dir", HERE / "fixtures")
        return build_app(client, Settings(url, key), save=saved.append, **options)

    yield make
    for client in clients:
        client.close()
