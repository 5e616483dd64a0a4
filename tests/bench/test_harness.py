"""The benchmark harness runs end to end at a tiny scale and writes every figure.
Nothing here asserts on speed: CI times nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import fixed_pacing
from bench.procs import simulator
from bench.scenarios import SCENARIOS, figures

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def run_bench(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", "--quick", "--scale", "0.05",
                           "--runs", "1", "--out", str(out), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=240)


def test_quick_tiny_run_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = run_bench(out)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(out.read_text())
    by_name = {f["name"]: f for f in doc["figures"]}
    assert set(by_name) == set(figures())
    for figure in by_name.values():
        assert figure["runs"] == 1
        for key in ("value", "min", "max"):
            assert isinstance(figure[key], int | float), (figure["name"], key)
        assert figure["min"] <= figure["value"] <= figure["max"]
        assert isinstance(figure["unit"], str)
        assert figure["passed"] in (True, False, None)
        assert (figure["target"] is None) == (figure["passed"] is None)
        if figure["unit"] == "%":  # the 429 shares of the rate- and capacity-limited runs
            assert 0 <= figure["value"] <= 100, figure
    assert doc["sizes"]["rate_rpm"] == 6000  # --scale leaves the limit alone
    assert isinstance(doc["machine"]["nproc"], int)
    assert doc["machine"]["python"].startswith("3.")
    assert doc["errors"] == {}
    for figure in figures().values():  # the table shows every figure too
        assert figure.label in done.stdout


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
