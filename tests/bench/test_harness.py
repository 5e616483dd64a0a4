"""The benchmark harness runs end to end at a tiny scale and writes every figure.
Nothing here asserts on speed: CI times nothing.

The cluster scenario runs on its own, against the PostgreSQL server of the store tests:
where that cannot be reached its test skips, saying why (fails under CI=true)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bench import cluster, fixed_pacing
from bench.procs import simulator
from bench.scenarios import SCENARIOS, figures
from tests.store import postgres

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
APART = {"cluster"}  # scenarios with a test of their own


def run_bench(out: Path, *args: str, env: Mapping[str, str] | None = None,
              scale: float = 0.05) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", "--quick", "--scale", str(scale),
                           "--runs", "1", "--out", str(out), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=240,
                          env={**os.environ, **(env or {})})


def check_written(done: subprocess.CompletedProcess[str], out: Path, scenarios: set[str], *,
                  optional: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The run passed and wrote one sample of every figure of `scenarios` (`optional`
    ones may be unmeasured), each shown in the table; returns the JSON."""
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(out.read_text())
    expected = {name: f for name, f in figures().items() if f.scenario in scenarios}
    by_name = {f["name"]: f for f in doc["figures"]}
    assert set(by_name) == set(expected)
    for figure in by_name.values():
        if figure["name"] in optional and figure["value"] is None:
            continue
        assert figure["runs"] == 1
        for key in ("value", "min", "max"):
            assert isinstance(figure[key], int | float), (figure["name"], key)
        assert figure["min"] <= figure["value"] <= figure["max"]
        assert isinstance(figure["unit"], str)
        assert figure["passed"] in (True, False, None)
        assert (figure["target"] is None) == (figure["passed"] is None)
        if figure["unit"] == "%":  # the 429 shares of the rate- and capacity-limited runs
            assert 0 <= figure["value"] <= 100, figure
    assert doc["errors"] == {}
    for figure in expected.values():  # the table shows every figure too
        assert figure.label in done.stdout
    return doc


@pytest.mark.timeout(300)  # `run_bench` itself gives the run 240 s
def test_quick_tiny_run_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    chosen = set(SCENARIOS) - APART
    done = run_bench(out, *(arg for name in SCENARIOS if name in chosen
                            for arg in ("--only", name)), scale=0.01)  # every size its least
    doc = check_written(done, out, chosen)
    assert doc["sizes"]["rate_rpm"] == 6000  # --scale leaves the limit alone
    assert isinstance(doc["machine"]["nproc"], int)
    assert doc["machine"]["python"].startswith("3.")


@pytest.mark.timeout(300)
def test_quick_tiny_cluster_run_writes_its_figures(tmp_path: Path) -> None:
    server = postgres.require_server()
    out = tmp_path / "cluster.json"
    done = run_bench(out, "--only", "cluster", env={"RELAY_BENCH_POSTGRES_URL": server})
    doc = check_written(done, out, {"cluster"}, optional=cluster.OPTIONAL)
    assert doc["sizes"]["cluster_lease_s"] == 5  # --scale leaves the lease alone
    takeover = next(f for f in doc["figures"] if f["name"] == "cluster_takeover_s")
    assert takeover["target"] == "<= 7"  # the run's lease_s + 2


@pytest.mark.timeout(300)
def test_only_runs_one_scenario(tmp_path: Path) -> None:
    out = tmp_path / "submit.json"
    done = run_bench(out, "--only", "submit")
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(out.read_text())
    assert [f["name"] for f in doc["figures"]] == ["submit_s"]
    assert set(doc["runs"]) == {"submit"}
    assert "submit" in SCENARIOS


def test_fixed_pacing_pauses_after_a_429_and_sends_every_row() -> None:
    sim = simulator(0)
    try:
        texts = ["Classify: one", "Classify: two [sim:fail=429 times=1]", "Classify: three",
                 "Classify: four"]
        seconds = fixed_pacing.run(sim.base_url, texts, rpm=600, pause_s=0.5)  # 0.1 s apart
        calls = sim.requests()
    finally:
        sim.stop()
    assert [c["status"] for c in calls] == [200, 429, 200, 200, 200]
    assert calls[2]["at"] - calls[1]["at"] >= 0.5  # nothing went during the pause
    assert calls[-1]["prompt"].endswith("times=1]")  # the refused row went again, last
    assert seconds >= 0.5


def test_cluster_without_postgresql_says_so_and_fails_nothing(tmp_path: Path) -> None:
    out = tmp_path / "none.json"
    done = run_bench(out, "--only", "cluster",
                     env={"RELAY_BENCH_POSTGRES_URL": "postgresql://postgres@127.0.0.1:1/none"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[cluster] SKIPPED" in done.stderr and "unreachable" in done.stderr
    doc = json.loads(out.read_text())
    assert doc["errors"] == {}
    assert doc["figures"] and all(f["value"] is None for f in doc["figures"])
