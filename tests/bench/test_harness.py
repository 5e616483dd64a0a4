"""The benchmark harness runs end to end at a tiny scale and writes every figure.
Nothing here asserts on speed: CI times nothing. (The cluster scenario has its own
file, `test_harness_cluster.py`, so the two long runs go to two test workers.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import fixed_pacing
from bench.procs import simulator
from bench.scenarios import SCENARIOS
from tests.bench.running import APART, check_written, run_bench

pytestmark = pytest.mark.e2e


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
