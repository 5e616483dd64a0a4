"""The many-jobs scenario: a workspace with 10,000 finished jobs (half Relay, half
OpenAI, five rows each), stored into a fresh daemon's data dir before it starts, then
the reads an operator's tools make all the time: the list (`?limit=100`, every dialect),
the workspace's stats, `relay ls` as a new process (its start, one list, its table),
and the `relay` TUI as a new process in a terminal (its start, until the newest job's
name is on its screen), each timed one after another."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench import jobs
from bench.harness import Bench
from bench.procs import WORKSPACE, BenchError
from bench.report import Figure, at_most
from bench.terminal import seconds_until_shown
from daemon.domain import ids
from daemon.domain.jobs import JobDraft, RowDraft
from daemon.store.interface import Ending
from daemon.store.sqlite import open_sqlite

READS = 200  # timed reads of each kind
# The console script, as an operator runs it: the one installed beside this Python.
RELAY = shutil.which("relay") or str(Path(sys.executable).parent / "relay")


def figures() -> list[Figure]:
    return [
        Figure("many_jobs_list_p99_ms", "many-jobs", "GET /v1/batches?limit=100 p99", "ms",
               at_most(50)),
        Figure("many_jobs_stats_p99_ms", "many-jobs", "GET /v1/stats p99", "ms", at_most(100)),
        Figure("many_jobs_ls_s", "many-jobs", "relay ls (a new process) start to table", "s",
               at_most(2.0)),
        Figure("many_jobs_tui_s", "many-jobs",
               "relay TUI (a new process in a terminal) start to the newest job shown", "s",
               at_most(2.0)),
    ]


def many_jobs(b: Bench) -> None:
    n = b.sizes.many_jobs
    daemon = b.daemon({"fast": b.sim(0)})
    fill(daemon.data / "relay.db", n)
    daemon.start()
    client = daemon.client(pool=1)
    for i in range(b.runs["many-jobs"]):
        listed = timed(lambda: client.get("/v1/batches", params={"limit": 100,
                                                                 "dialect": "all"}))
        stats = timed(lambda: client.get("/v1/stats"))
        started = time.perf_counter()
        subprocess.run([RELAY, "ls", "--url", daemon.url],
                       env={**os.environ, "RELAY_API_KEY": daemon.key}, check=True,
                       capture_output=True, timeout=60)
        ls_s = time.perf_counter() - started
        tui_s = tui_start(daemon.url, daemon.key, newest=f"night {n - 1}")
        b.figures["many_jobs_list_p99_ms"].add(jobs.percentile(listed, 99))
        b.figures["many_jobs_stats_p99_ms"].add(jobs.percentile(stats, 99))
        b.figures["many_jobs_ls_s"].add(ls_s)
        b.figures["many_jobs_tui_s"].add(tui_s)
        b.say(f"[many-jobs] run {i + 1}: {n:,} jobs; list p99 "
              f"{jobs.percentile(listed, 99):.1f} ms, stats p99 "
              f"{jobs.percentile(stats, 99):.1f} ms, relay ls {ls_s:.2f} s, "
              f"the TUI {tui_s:.2f} s")


def tui_start(url: str, key: str, *, newest: str) -> float:
    """Seconds from spawning the `relay` TUI in a 160×45 terminal to `newest` (the
    newest job's name, first in its table) on its screen. Its settings file goes to a
    scratch dir, so the bench leaves the operator's own alone."""
    with tempfile.TemporaryDirectory(prefix="relay-bench-tui-") as home:
        env = {**os.environ, "RELAY_API_KEY": key, "XDG_CONFIG_HOME": home}
        return seconds_until_shown([RELAY, "--url", url], newest, env=env)


def timed(read: Callable[[], httpx.Response]) -> list[float]:
    """Milliseconds of each of `READS` reads, one after another; each must be a 200."""
    took = []
    for _ in range(READS):
        started = time.perf_counter()
        resp = read()
        took.append((time.perf_counter() - started) * 1000)
        if resp.status_code != 200:
            raise BenchError(f"{resp.request.url}: {resp.status_code} {resp.text[:300]}")
    return took


def fill(path: Path, n: int) -> None:
    """`n` finished jobs of five rows in the bench's workspace, as the store writes
    them (a job and its rows in one transaction, then its end)."""
    repo = open_sqlite(path)
    try:
        ws = repo.ensure_workspace(WORKSPACE, now=time.time())
        start = time.time() - 2 * 86_400
        for i in range(n):
            job = repo.create_job(JobDraft(
                id=ids.relay_job_id() if i % 2 else ids.openai_batch_id(), workspace_id=ws.id,
                dialect="relay" if i % 2 else "openai", name=f"night {i}", model="fast",
                endpoint="/v1/chat/completions", status="running", priority=0,
                created_at=start + i), [RowDraft(custom_id=f"r{k}", body={"messages": [
                    {"role": "user", "content": f"row {k}"}]}) for k in range(5)])
            repo.end_job(job.seq, Ending("completed"), now=start + i + 1)
    finally:
        repo.close()
