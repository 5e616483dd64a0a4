"""Fixtures of the TUI tests: the end-to-end harness (real `relayd serve` and `relayd
simulate` processes), an app factory and a Pilot helper that waits on a condition."""

from __future__ import annotations

import itertools
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot

from relaytui.app import RelayApp, build_app
from relaytui.client import RelayClient
from relaytui.models import JobView
from relaytui.screens.jobs import JobsScreen
from relaytui.settings import Settings
from relaytui.testing import FakeRelay
from tests.e2e.harness import Relayd, relayd_factory, running_pair, simulator_factory
from tests.tui.contract import ContractCheck

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


def jobs_screen(app: App[Any]) -> JobsScreen:
    """The Relay app's jobs screen, which it has once it is up."""
    assert isinstance(app, RelayApp) and app.jobs_screen is not None
    return app.jobs_screen


def on_board(jobs: JobsScreen, job_id: str) -> JobView:
    """`job_id`'s view on the jobs screen's board, which has it."""
    view = jobs.board.get(job_id)
    assert view is not None
    return view


@pytest.fixture(scope="module")
def shared_relayd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Relayd]:
    """One simulator and one relayd for a whole module (starting them is most of a
    test's time); each test takes its own workspace with `workspace`."""
    with running_pair(tmp_path_factory.mktemp("relayd"), attempts=1) as daemon:
        yield daemon


@pytest.fixture(scope="module")
def tools_url(shared_relayd: Relayd) -> str:
    """The shared simulator's HTTP tool executor (`POST /_sim/tools`), for the
    `openrelay.tool_config` of tool-calling records; found from the daemon's config."""
    models = tomllib.loads(shared_relayd.config.read_text())["models"]
    return models[0]["base_url"].removesuffix("/v1") + "/_sim/tools"


@pytest.fixture(autouse=True)
def served_contract(monkeypatch: pytest.MonkeyPatch) -> Iterator[ContractCheck]:
    """Every answer a `FakeRelay` serves in a test is checked against relayd's OpenAPI
    document; the test fails if one does not match (a worker thread may have swallowed
    the answer, so the check is made here, after the test)."""
    check = ContractCheck()
    monkeypatch.setattr(FakeRelay, "observe",
                        lambda _relay, *answer: check(*answer))
    yield check
    assert not check.found, "FakeRelay served answers relayd cannot produce:\n" + \
        "\n".join(check.found[:20])


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
def make_app(saved: list[Settings]) -> Iterator[Callable[..., RelayApp]]:
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
