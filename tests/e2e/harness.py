"""End-to-end harness: real `relayd simulate` and `relayd serve` processes on free
ports, a real SQLite file in a temp dir, real HTTP."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

_SCRIPT = Path(sys.executable).parent / "relayd"
# The installed console script, as a user runs it; `python -m daemon` is the same entry point.
RELAYD = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "daemon"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: Callable[[], Any], *, timeout: float = 20.0, every: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(every)


@dataclass
class Simulator:
    port: int
    proc: subprocess.Popen[str]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def requests(self) -> list[dict[str, Any]]:
        return httpx.get(f"http://127.0.0.1:{self.port}/_sim/requests").json()["data"]

    def stats(self) -> dict[str, Any]:
        return httpx.get(f"http://127.0.0.1:{self.port}/_sim/stats").json()


@dataclass
class Relayd:
    """One data dir and config; `start()` may be called again after a stop or a kill."""

    config: Path
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    keys: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Relayd:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([*RELAYD, "serve", "--config", str(self.config)],
                                         stdout=log, stderr=subprocess.STDOUT)
        wait_until(self._healthy, timeout=20)
        return self

    def _healthy(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"relayd exited: {self.log.read_text()[-2000:]}")
        try:
            return httpx.get(self.url + "/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def key(self, workspace: str) -> str:
        if workspace not in self.keys:
            out = subprocess.run([*RELAYD, "keys", "create", "--workspace", workspace,
                                  "--config", str(self.config)],
                                 check=True, capture_output=True, text=True)
            self.keys[workspace] = out.stdout.strip().splitlines()[-1]
        return self.keys[workspace]

    def client(self, workspace: str = "acme") -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30,
                            headers={"Authorization": f"Bearer {self.key(workspace)}"})

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def terminate(self, timeout: float = 15) -> float:
        """SIGTERM; returns how long the process took to exit."""
        assert self.proc is not None
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=timeout)
        return time.monotonic() - started


def config_text(*, data_dir: Path, port: int, sim: Simulator, concurrency: int = 8,
                running: int = 2, allow_private: bool = True, attempts: int = 3,
                server: dict[str, int] | None = None,
                gateway: dict[str, int] | None = None) -> str:
    """A config for one test daemon; `server` and `gateway` add keys to those tables."""
    more_server = "".join(f"{k} = {v}\n" for k, v in (server or {}).items())
    more_gateway = "".join(f"{k} = {v}\n" for k, v in (gateway or {}).items())
    return f"""
[server]
port = {port}
data_dir = "{data_dir}"
{more_server}
[gateway]
batch_concurrency = {concurrency}
max_running_jobs = {running}
{more_gateway}
[security]
allow_private_targets = {"true" if allow_private else "false"}

[retry]
attempts = {attempts}
backoff_base_s = 0.01
backoff_cap_s = 0.05
retry_after_cap_s = 0.05
request_timeout_s = 5

[[models]]
alias = "gpt-4o-mini"
base_url = "{sim.base_url}"
model = "sim-small"
fallbacks = ["backup"]
input_usd_per_mtok = 0.15
output_usd_per_mtok = 0.60

[[models]]
alias = "backup"
base_url = "{sim.base_url}"
model = "sim-large"
"""


@pytest.fixture
def simulator_factory() -> Iterator[Callable[..., Simulator]]:
    started: list[Simulator] = []

    def start(*args: str) -> Simulator:
        port = free_port()
        proc = subprocess.Popen([*RELAYD, "simulate", "--port", str(port), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "SIMULATED" in line, line
        sim = Simulator(port, proc)
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.proc.terminate()
        sim.proc.wait(timeout=10)


@pytest.fixture
def relayd_factory(tmp_path: Path) -> Iterator[Callable[..., Relayd]]:
    started: list[Relayd] = []

    def make(sim: Simulator, **options: Any) -> Relayd:
        port = free_port()
        data = tmp_path / f"data-{len(started)}"
        config = tmp_path / f"relay-{len(started)}.toml"
        config.write_text(config_text(data_dir=data, port=port, sim=sim, **options))
        daemon = Relayd(config=config, port=port, log=tmp_path / f"relayd-{len(started)}.log")
        started.append(daemon)
        return daemon

    yield make
    for daemon in started:
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.proc.send_signal(signal.SIGTERM)
            try:
                daemon.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                daemon.proc.kill()


def rows(n: int, *, prefix: str = "r", text: str = "Classify: fine product") -> list[dict]:
    return [{"custom_id": f"{prefix}-{i}", "messages": [{"role": "user",
                                                        "content": f"{text} {prefix}-{i}"}]}
            for i in range(n)]


def wait_for_status(client: httpx.Client, job_id: str, *statuses: str,
                    timeout: float = 30) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        job = client.get(f"/v1/batches/{job_id}").json()
        return job if job["status"] in statuses else None

    return wait_until(check, timeout=timeout)



@contextlib.contextmanager
def running_pair(root: Path, **options: Any) -> Iterator[Relayd]:
    """A simulator and a relayd on free ports under `root`, stopped on exit: for a
    daemon shared by a module or a session (each test taking its own workspace)."""
    sim_port, port = free_port(), free_port()
    sim_proc = subprocess.Popen([*RELAYD, "simulate", "--port", str(sim_port)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert sim_proc.stdout is not None and "SIMULATED" in sim_proc.stdout.readline()
    config = root / "relay.toml"
    config.write_text(config_text(data_dir=root / "data", port=port,
                                  sim=Simulator(sim_port, sim_proc), **options))
    daemon = Relayd(config=config, port=port, log=root / "relayd.log")
    try:
        yield daemon.start()
    finally:
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.proc.send_signal(signal.SIGTERM)
            daemon.proc.wait(timeout=15)
        sim_proc.terminate()
        sim_proc.wait(timeout=10)
