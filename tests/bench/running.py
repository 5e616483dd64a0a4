"""Running the bench as a process at a tiny scale, and checking what it wrote: shared
by the harness's test files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.scenarios import figures

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
