"""What every scenario shares: the sizes, the `Bench` (processes and settings of one
run) and the side-by-side timing.

Processes: a zero-latency and a 100 ms simulator and one shared daemon serve the
latency, overhead, status and small-jobs scenarios (each waits for its jobs to end
before the next starts); submit, rss, restart and the limited-upstream scenarios start
a fresh daemon, since they time a first request, a process's lifetime peak, a process
start or what a daemon learns.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, TextIO, TypeVar

from bench.procs import Relayd, Seed, Simulator, simulator
from bench.report import Figure

CONCURRENCY = 32  # [gateway] batch_concurrency, and the reference's requests in flight
LATENCY_MS = 100

T = TypeVar("T")


@dataclass(frozen=True)
class Sizes:
    latency_rows: int = 3_200
    overhead_rows: int = 20_000
    status_rows: int = 50_000
    small_jobs: int = 1_000
    submit_rows: int = 50_000
    rss_rows: int = 50_000
    restart_rows: int = 50_000
    tool_records: int = 4_000
    workflow_records: int = 1_000
    rate_rows: int = 3_000
    rate_rpm: int = 3_000  # a limit, not a size: `scaled` keeps it
    capacity_rows: int = 3_200
    cluster_rows: int = 6_000
    cluster_lease_s: int = 15  # a setting, not a size: `scaled` keeps it
    retention_rows: int = 200_000  # a nightly cron job's rows
    many_jobs: int = 10_000  # finished jobs in one workspace
    scale_rows: int = 1_000_000  # one OpenAI batch's rows (`--only scale`)

    LIMITS: ClassVar[frozenset[str]] = frozenset({"rate_rpm", "cluster_lease_s"})

    def scaled(self, factor: float) -> Sizes:
        """Every size times `factor`, at least 4 (for tests: `--scale 0.05`)."""
        return replace(self, **{f.name: max(4, round(getattr(self, f.name) * factor))
                                for f in fields(self) if f.name not in self.LIMITS})


FULL = Sizes()
QUICK = Sizes(latency_rows=800, overhead_rows=4_000, status_rows=4_000, small_jobs=200,
              submit_rows=10_000, rss_rows=10_000, restart_rows=10_000, tool_records=800,
              workflow_records=200, rate_rows=1_000, rate_rpm=6_000, capacity_rows=1_600,
              cluster_rows=1_500, cluster_lease_s=5, retention_rows=20_000,
              many_jobs=2_000, scale_rows=100_000)


@dataclass
class Bench:
    """Shared processes and settings for one bench run."""

    sizes: Sizes
    runs: dict[str, int]
    figures: dict[str, Figure]
    profile_dir: Path | None = None
    out: TextIO = sys.stderr
    home: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="relay-bench-")))
    _seed: Seed | None = None
    _sims: dict[tuple[float, tuple[str, ...]], Simulator] = field(default_factory=dict)
    _daemons: list[Relayd] = field(default_factory=list)
    _shared: Relayd | None = None

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def sim(self, latency_ms: float, *flags: str) -> Simulator:
        """The simulator answering in `latency_ms` with `flags` (`--rpm 3000`, ...),
        started on first use."""
        key = (latency_ms, flags)
        if key not in self._sims:
            self._sims[key] = simulator(latency_ms, *flags)
        return self._sims[key]

    def daemon(self, models: dict[str, Simulator], *, transport: str | None = None,
               keys: Mapping[str, Mapping[str, Any]] | None = None,
               tables: Mapping[str, Mapping[str, Any]] | None = None) -> Relayd:
        """A fresh relayd (own data dir, own port), not yet started; `keys` adds
        `[[models]]` keys per alias (`{"paced": {"rpm": 3000}}`), `tables` config tables
        (`{"limits": {...}}`)."""
        if self._seed is None:
            self._seed = Seed.make(self.home)
        home = self.home / f"relayd-{len(self._daemons)}"
        home.mkdir()
        daemon = Relayd.create(home, models, seed=self._seed, transport=transport, keys=keys,
                               tables=tables)
        self._daemons.append(daemon)
        return daemon

    def shared(self) -> Relayd:
        """The daemon with alias "fast" on the 0 ms simulator, "slow" on the 100 ms one."""
        if self._shared is None:
            self._shared = self.daemon({"fast": self.sim(0), "slow": self.sim(LATENCY_MS)})
            self._shared.start()
        return self._shared

    @contextlib.contextmanager
    def fresh(self, models: dict[str, Simulator], *,
              keys: Mapping[str, Mapping[str, Any]] | None = None) -> Iterator[Relayd]:
        """A started fresh daemon, killed afterwards (nothing it leaves matters)."""
        daemon = self.daemon(models, keys=keys).start()
        try:
            yield daemon
        finally:
            daemon.kill()
            daemon.stop()

    def close(self, *, keep: bool = False) -> None:
        for daemon in self._daemons:
            daemon.stop()
        for sim in self._sims.values():
            sim.stop()
        if not keep:
            shutil.rmtree(self.home, ignore_errors=True)

    def log_tails(self) -> str:
        return "\n".join(f"--- {d.home.name}/relayd.log ({d.state()})\n{d.log_tail()}"
                         for d in self._daemons if d.log_tail())


def job_timeout(rows: int) -> float:
    """Generous: a job slower than 100 rows/s is broken, not slow."""
    return 60 + rows / 100


def side_by_side(run: int, sim: Simulator, relay: Callable[[], T],
                 ref: Callable[[], T]) -> tuple[T, T]:
    """Both timings back to back; the order alternates between runs to cancel drift.
    The simulator forgets its request log (and its rate buckets) before each, so both
    meet the same upstream. Returns (Relay's, the reference's)."""

    def fresh(timed: Callable[[], T]) -> T:
        sim.reset()
        return timed()

    if run % 2:
        ref_result = fresh(ref)
        return fresh(relay), ref_result
    relay_result = fresh(relay)
    return relay_result, fresh(ref)
