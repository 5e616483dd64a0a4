"""A real full disk under a running relayd: its data directory is a small tmpfs, filled
mid-run and freed again. Nothing is lost or paid twice, `/healthz` tells the truth, a
submit and an upload get a 507 (the upload leaves no partial file), and every job
finishes with no restart."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from daemon.testing import Simulator
from tests.e2e.harness import Relayd, rows, wait_for_status, wait_until

pytestmark = pytest.mark.e2e

ROWS = 200
SIZE = "16m"


@contextlib.contextmanager
def small_filesystem(where: Path) -> Iterator[Path]:
    """A `SIZE` tmpfs mounted at `where`, or the test skipped with the reason."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs",
                              str(where)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(folder: Path) -> Path:
    """Write until the filesystem is full; the file that takes the space."""
    filler = folder / "filler"
    chunk = b"\0" * 65536
    # Unbuffered: a buffered file would keep the chunk that did not fit and raise
    # ENOSPC again when it is closed.
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def health(client: httpx.Client) -> tuple[int, dict[str, Any]]:
    answer = client.get("/healthz")
    return answer.status_code, answer.json()


def test_a_disk_that_fills_mid_run_and_frees_loses_nothing_and_needs_no_restart(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "40")
    relayd: Relayd = relayd_factory(sim, concurrency=4)
    with small_filesystem(relayd.data):
        try:
            relayd.start()
            client = relayd.client()
            job = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                                   "requests": rows(ROWS)}).json()
            wait_until(lambda: client.get(f"/v1/batches/{job['id']}").json()["completed"] >= 20)

            filler = fill(relayd.data)
            degraded = wait_until(lambda: (s := health(client))[0] == 503 and s[1])
            assert degraded["status"] == "degraded"
            assert degraded["reason"] == "insufficient_storage"
            refused = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                                       "requests": rows(3, prefix="late")})
            assert refused.status_code == 507, refused.text
            assert refused.json()["error"]["code"] == "insufficient_storage"
            upload = client.post("/v1/files", data={"purpose": "batch"},
                                 files={"file": ("in.jsonl", b'{"x": 1}\n' * 50_000)})
            assert upload.status_code == 507, upload.text
            assert not any(p.name.endswith(".partial") for p in (relayd.data / "files").glob("*"))
            stalled = client.get(f"/v1/batches/{job['id']}").json()
            assert stalled["status"] == "running" and stalled["completed"] < ROWS

            os.unlink(filler)
            wait_until(lambda: health(client) == (200, {"status": "ok"}))
            done = wait_for_status(client, job["id"], "completed", timeout=30)
            late = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                                    "requests": rows(3, prefix="late")}).json()
            wait_for_status(client, late["id"], "completed", timeout=30)

            data = client.get(f"/v1/batches/{job['id']}/results").json()["data"]
            assert sorted(r["custom_id"] for r in data) == sorted(f"r-{i}" for i in range(ROWS))
            assert done["completed"] == ROWS and done["failed"] == 0
            seen = Counter(r["prompt"] for r in sim.requests())
            assert max(seen.values()) == 1  # no call was paid for twice
            assert len(seen) == ROWS + 3
            assert relayd.proc is not None and relayd.proc.poll() is None  # never restarted
            client.close()
        finally:
            relayd.stop()
