"""Real processes: `relayd simulate` and `relayd serve` on free ports, each daemon with
its own temporary data dir, and what `/proc` says about them (CPU time, peak RSS)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

_SCRIPT = Path(sys.executable).parent / "relayd"
# The installed console script, as a user runs it; `python -m daemon` is the same entry point.
RELAYD = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "daemon"]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
WORKSPACE = "bench"


class BenchError(RuntimeError):
    """A run that cannot give a valid figure (a process died, a row failed, a timeout)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: Callable[[], Any], *, timeout: float, every: float = 0.05,
               what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise BenchError(f"{what} not met within {timeout:g}s")
        time.sleep(every)


# --- /proc ------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (utime + stime in /proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()  # the name may hold spaces
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM in /proc/PID/status), in MB (10^6 bytes)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e6
    raise BenchError(f"no VmHWM for pid {pid}")


# --- the simulator ------------------------------------------------------------------


@dataclass
class Simulator:
    """One `relayd simulate` process (SIMULATED upstream)."""

    port: int
    latency_ms: float
    proc: subprocess.Popen[str]

    @classmethod
    def start(cls, *, latency_ms: float = 0, seed: int = 1) -> Simulator:
        port = free_port()
        proc = subprocess.Popen(
            [*RELAYD, "simulate", "--port", str(port), "--latency-ms", str(latency_ms),
             "--seed", str(seed)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if "SIMULATED" not in line:
            proc.kill()
            raise BenchError(f"relayd simulate did not start: {line!r}")
        return cls(port, latency_ms, proc)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.root + "/v1"

    def stats(self) -> dict[str, Any]:
        return httpx.get(self.root + "/_sim/stats", timeout=10).json()

    def requests(self) -> list[dict[str, Any]]:
        return httpx.get(self.root + "/_sim/requests", timeout=30).json()["data"]

    def reset(self) -> None:
        httpx.post(self.root + "/_sim/reset", timeout=10).raise_for_status()

    def stop(self) -> None:
        stop_process(self.proc)


# --- the daemon ---------------------------------------------------------------------


def config_text(*, data_dir: Path, port: int, models: dict[str, Simulator]) -> str:
    """The bench config: `batch_concurrency` 32, `[retry]` defaults, and one alias per
    simulator with `max_concurrency` 64 so the model limit is never the bottleneck."""
    blocks = "".join(f"""
[[models]]
alias = "{alias}"
base_url = "{sim.base_url}"
model = "sim-small"
max_concurrency = 64
""" for alias, sim in models.items())
    return f"""[server]
port = {port}
data_dir = "{data_dir}"

[gateway]
batch_concurrency = 32
max_running_jobs = 2
{blocks}"""


@dataclass
class Relayd:
    """One `relayd serve` with its own data dir; `start()` again after `kill()` restarts it
    on the same data."""

    home: Path
    port: int
    key: str
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0  # time.time() just before the process was spawned
    _clients: list[httpx.Client] = field(default_factory=list)

    @classmethod
    def create(cls, home: Path, models: dict[str, Simulator], *, seed: Seed) -> Relayd:
        """A daemon whose data dir starts as a copy of the seed's (one workspace, one key)."""
        port = free_port()
        data = home / "data"
        shutil.copytree(seed.data, data)
        (home / "relay.toml").write_text(config_text(data_dir=data, port=port, models=models))
        return cls(home=home, port=port, key=seed.key)

    @property
    def config(self) -> Path:
        return self.home / "relay.toml"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def spawn(self) -> None:
        """Start the process and return at once (the restart scenario times from here)."""
        with open(self.home / "relayd.log", "ab") as log:
            self.started_at = time.time()
            self.proc = subprocess.Popen(
                [*RELAYD, "serve", "--config", str(self.config), "--log-level", "WARNING"],
                stdout=log, stderr=subprocess.STDOUT)

    def start(self) -> Relayd:
        self.spawn()
        wait_until(self._healthy, timeout=30, what="relayd /healthz")
        return self

    def _healthy(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise BenchError(f"relayd exited: {self.log_tail()}")
        try:
            return httpx.get(self.url + "/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def client(self, *, pool: int = 4) -> httpx.Client:
        limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
        client = httpx.Client(base_url=self.url, timeout=60, limits=limits,
                              headers={"Authorization": f"Bearer {self.key}"})
        self._clients.append(client)
        return client

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def peak_rss_mb(self) -> float:
        return peak_rss_mb(self.pid)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        for client in self._clients:
            client.close()
        self._clients.clear()
        if self.proc is not None:
            stop_process(self.proc)

    def state(self) -> str:
        """'running', or how the last process ended (a negative code is the signal)."""
        code = None if self.proc is None else self.proc.poll()
        return "not started" if self.proc is None else (
            "running" if code is None else f"exited with {code}")

    def log_tail(self, chars: int = 2000) -> str:
        log = self.home / "relayd.log"
        return log.read_text(errors="replace")[-chars:] if log.exists() else ""


@dataclass(frozen=True)
class Seed:
    """A data dir holding one workspace and its API key. Every daemon starts from a copy,
    so no run pays for a `relayd keys create` process."""

    data: Path
    key: str

    @classmethod
    def make(cls, where: Path) -> Seed:
        data = where / "seed-data"
        data.mkdir(parents=True)
        config = where / "seed.toml"
        config.write_text(f'[server]\ndata_dir = "{data}"\n')
        out = subprocess.run([*RELAYD, "keys", "create", "--workspace", WORKSPACE,
                              "--config", str(config)],
                             check=True, capture_output=True, text=True)
        return cls(data, out.stdout.strip().splitlines()[-1])


def stop_process(proc: subprocess.Popen[Any], timeout: float = 15) -> None:
    """SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
