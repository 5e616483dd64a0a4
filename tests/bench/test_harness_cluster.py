"""The bench's cluster scenario end to end at a tiny scale, against the PostgreSQL
server of the store tests: where that cannot be reached its test skips, saying why
(fails under CI=true); and without one, the run says so and fails nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import cluster
from tests.bench.running import check_written, run_bench
from tests.store import postgres

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(300)
def test_quick_tiny_cluster_run_writes_its_figures(tmp_path: Path) -> None:
    server = postgres.require_server()
    out = tmp_path / "cluster.json"
    done = run_bench(out, "--only", "cluster", env={"RELAY_BENCH_POSTGRES_URL": server})
    doc = check_written(done, out, {"cluster"}, optional=cluster.OPTIONAL)
    assert doc["sizes"]["cluster_lease_s"] == 5  # --scale leaves the lease alone
    takeover = next(f for f in doc["figures"] if f["name"] == "cluster_takeover_s")
    assert takeover["target"] == "<= 7"  # the run's lease_s + 2


def test_cluster_without_postgresql_says_so_and_fails_nothing(tmp_path: Path) -> None:
    out = tmp_path / "none.json"
    done = run_bench(out, "--only", "cluster",
                     env={"RELAY_BENCH_POSTGRES_URL": "postgresql://postgres@127.0.0.1:1/none"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[cluster] SKIPPED" in done.stderr and "unreachable" in done.stderr
    doc = json.loads(out.read_text())
    assert doc["errors"] == {}
    assert doc["figures"] and all(f["value"] is None for f in doc["figures"])
