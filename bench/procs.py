"""The bench's processes: simulators and relayd daemons (started through
`daemon.testing`), the seed data every daemon starts from, and what `/proc` says about
a process (CPU time, peak RSS, context switches)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from daemon import testing
from daemon.testing import Simulator, simulated_model

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
WORKSPACE = "bench"


class BenchError(RuntimeError):
    """A run that cannot give a valid figure (a process died, a row failed, a timeout)."""


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


def thread_switches(pid: int) -> dict[int, tuple[int, int]]:
    """Each live thread's context switches so far: {tid: (voluntary, involuntary)}."""
    counts: dict[int, tuple[int, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        voluntary = involuntary = 0
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    voluntary = int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    involuntary = int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):  # the thread ended meanwhile
            continue
        counts[int(task.name)] = (voluntary, involuntary)
    return counts


@dataclass
class Switches:
    """Context switches of a process's threads over a stretch of time: voluntary (the
    thread waited: a lock, a queue, a socket) and involuntary (the kernel took its core
    away). Threads that end meanwhile are counted up to their last reading."""

    voluntary: int = 0
    involuntary: int = 0


@contextlib.contextmanager
def counting_switches(pid: int, *, every_s: float | None = 0.05) -> Iterator[Switches]:
    """Count `pid`'s context switches while the block runs, read every `every_s` (a
    thread that starts and ends between two readings is missed: a job's threads live
    as long as the job). `every_s=None` reads only at the start and the end, for a
    process whose threads all outlive the block (the simulator): no poller thread's
    wake-ups then add to the bench process's own counts and CPU."""
    counted = Switches()
    before = thread_switches(pid)
    last: dict[int, tuple[int, int]] = {}
    done = threading.Event()

    def read() -> None:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # it exited
            last.update(thread_switches(pid))

    def poll(interval: float) -> None:
        while not done.wait(interval):
            read()

    poller = None
    if every_s is not None:
        poller = threading.Thread(target=poll, args=(every_s,), name="bench-switches",
                                  daemon=True)
        poller.start()
    try:
        yield counted
    finally:
        done.set()
        if poller is not None:
            poller.join()
        read()
        for tid, (voluntary, involuntary) in last.items():
            was = before.get(tid, (0, 0))
            counted.voluntary += voluntary - was[0]
            counted.involuntary += involuntary - was[1]


# --- the processes ------------------------------------------------------------------


def simulator(latency_ms: float, *flags: str, seed: int = 1) -> Simulator:
    """A SIMULATED upstream adding `latency_ms` to every answer; `flags` are more
    `relayd simulate` flags (`--rpm 3000`, `--capacity 16`)."""
    return Simulator.start("--latency-ms", str(latency_ms), "--seed", str(seed), *flags)


def config_tables(models: dict[str, Simulator], *, transport: str | None = None,
                  keys: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The bench config (`Relayd.write_config`'s keywords): `batch_concurrency` 32,
    `[retry]` defaults, and one alias per simulator with `max_concurrency` 64 so the
    model limit is never the bottleneck, plus the alias's `keys` (`rpm`, ...);
    `transport`, the upstream client, if not the default."""
    gateway = {"batch_concurrency": 32, "max_running_jobs": 2}
    keys = keys or {}
    return {"gateway": gateway | ({"transport": transport} if transport else {}),
            "security": {"allow_private_targets": True},  # the tool executor on loopback
            "models": [simulated_model(alias, sim, max_concurrency=64, **keys.get(alias, {}))
                       for alias, sim in models.items()]}


@dataclass(kw_only=True)
class Relayd(testing.Relayd):
    """A bench daemon, logging warnings only, with the seed's key and pooled clients."""

    key: str
    serve_args: tuple[str, ...] = ("--log-level", "WARNING")
    _clients: list[httpx.Client] = field(default_factory=list, init=False, repr=False)

    @classmethod
    def create(cls, home: Path, models: dict[str, Simulator], *, seed: Seed,
               transport: str | None = None,
               keys: Mapping[str, Mapping[str, Any]] | None = None,
               tables: Mapping[str, Mapping[str, Any]] | None = None) -> Relayd:
        """A daemon whose data dir starts as a copy of the seed's (one workspace, one key);
        `tables`: config tables beside the bench's own (`config_tables`)."""
        daemon = cls(home=home, key=seed.key)
        shutil.copytree(seed.data, daemon.data)
        return daemon.write_config(**config_tables(models, transport=transport, keys=keys)
                                   | dict(tables or {}))

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

    def stop(self, timeout: float = 15) -> None:
        for client in self._clients:
            client.close()
        self._clients.clear()
        super().stop(timeout)

    def state(self) -> str:
        """'running', or how the last process ended (a negative code is the signal)."""
        if self.proc is None:
            return "not started"
        code = self.proc.poll()
        return "running" if code is None else f"exited with {code}"


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
        config.write_text(testing.config_toml(port=0, data_dir=data))  # never served
        key = testing.create_key(config, WORKSPACE)
        subprocess.run([*testing.RELAYD, "workspaces", "set", WORKSPACE, "--workflows", "on",
                        "--config", str(config)], check=True, capture_output=True)
        return cls(data, key)
