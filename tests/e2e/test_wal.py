"""SQLite's write-ahead log under large writes, end to end: a workflow record of 128
requests of 30 KB a step, whose 4 MB state is stored again as each request finishes.
As found (256 requests of 30 KB), the log grew to 953 MB and stayed that size: SQLite
cannot restart the log while a reader holds an older snapshot, and never shrinks it.
Here an outside reader (a backup, an operator's `sqlite3` shell) holds one for a while,
then lets go; from then on the log stays under `WAL_LIMIT` plus one write (one record's
state: 4 MB here, `[limits] max_record_mb` at most), and ends under `WAL_LIMIT`."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable

import pytest

from daemon.store.sqlite import WAL_LIMIT
from daemon.testing import Simulator
from tests.e2e.harness import Relayd, wait_until
from tests.e2e.test_workflows import enable, start_batch
from tests.e2e.test_workflows import record as workflow_record

pytestmark = pytest.mark.e2e

MB = 1024 * 1024
STATE = 128 * 30 * 1024  # the record's requests: most of its state


def test_the_wal_comes_back_under_its_limit_once_a_reader_lets_go(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    enable(relayd)
    wal = relayd.data / "relay.db-wal"

    def size() -> int:
        return os.path.getsize(wal) if wal.exists() else 0

    client, batch = start_batch(relayd, [
        workflow_record("flow", sim, "Flow. [sim:wf_fanout=128 wf_pad=30]")])
    watcher = relayd.client()
    wait_until(lambda: watcher.get(f"/v1/batches/{batch.id}/rows/flow").json().get(
        "workflow", {}).get("phase") == "running")
    reader = sqlite3.connect(relayd.data / "relay.db", isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM job").fetchone()  # holds this snapshot
        wait_until(lambda: size() > WAL_LIMIT, timeout=120)  # the log grows meanwhile
    finally:
        reader.close()
    peak_after = 0

    def ended() -> bool:
        nonlocal peak_after
        peak_after = max(peak_after, size())
        return client.batches.retrieve(batch.id).status in ("completed", "failed")

    wait_until(ended, timeout=120)

    counts = client.batches.retrieve(batch.id).request_counts
    assert counts is not None and counts.completed == 1
    assert peak_after <= WAL_LIMIT + 2 * STATE  # the limit, plus the write that passed it
    assert size() <= WAL_LIMIT
