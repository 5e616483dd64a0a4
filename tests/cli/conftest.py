"""Fixtures of the CLI tests, on the end-to-end harness (real `relayd serve` and
`relayd simulate` processes).

Most tests share one daemon for the session and get a workspace of their own (a key
sees only its workspace, so `relay ls` starts empty in every test): starting a daemon
per test would cost most of the time budget. Tests that load or change the daemon
itself use `simulator_factory` / `relayd_factory` for one of their own.
`relay(...)` runs `relaytui.cli.main` in-process and returns the exit code with what
reached stdout and stderr."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from relaytui import cli as relay_cli
from tests.e2e.harness import (
    Relayd,
    Simulator,
    config_tables,
    relayd_factory,
    simulator_factory,
)

__all__ = ["relayd_factory", "simulator_factory"]

_workspaces = itertools.count(1)


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture(autouse=True)
def no_user_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Neither the environment nor the user's config file leaks into a test, and
    `submit --wait` polls quickly (jobs here take milliseconds)."""
    monkeypatch.delenv("RELAY_URL", raising=False)
    monkeypatch.delenv("RELAY_API_KEY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(relay_cli, "POLL_S", 0.05)


@pytest.fixture(scope="session")
def shared_simulator() -> Iterator[Simulator]:
    """The session's simulator, with its MCP tool server (the sample tool records call
    it)."""
    sim = Simulator.start(mcp_port=0)
    yield sim
    sim.stop()


@pytest.fixture(scope="session")
def shared_relayd(shared_simulator: Simulator,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[Relayd]:
    """One relayd for the session, on the shared simulator."""
    daemon = Relayd(home=tmp_path_factory.mktemp("shared-relayd"))
    daemon.write_config(**config_tables(shared_simulator))
    try:
        yield daemon.start()
    finally:
        daemon.stop()


@pytest.fixture
def workspace() -> str:
    return f"ws-{next(_workspaces)}"


@pytest.fixture
def http(shared_relayd: Relayd, workspace: str) -> Iterator[httpx.Client]:
    """Plain HTTP to the shared daemon as the test's workspace (to set up or check)."""
    with shared_relayd.client(workspace) as client:
        yield client


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """`cli("ls", "--json")`: the relay command, in-process, with no daemon chosen."""

    def run(*argv: Any) -> Run:
        capsys.readouterr()
        code = relay_cli.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return Run(code, out, err)

    return run


@pytest.fixture
def relay(cli: Callable[..., Run], shared_relayd: Relayd, workspace: str,
          monkeypatch: pytest.MonkeyPatch) -> Callable[..., Run]:
    """`cli` pointed at the shared daemon, as the test's workspace, through RELAY_URL
    and RELAY_API_KEY."""
    monkeypatch.setenv("RELAY_URL", shared_relayd.url)
    monkeypatch.setenv("RELAY_API_KEY", shared_relayd.key(workspace))
    return cli


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, Any], Path]:
    """`write("rows.jsonl", rows)`: an input file in the test's temp dir, from text,
    bytes, or a list of objects (one JSON line each)."""

    def make(name: str, content: str | bytes | list[dict[str, Any]]) -> Path:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, list):
            path.write_text("".join(json.dumps(row) + "\n" for row in content))
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return make
