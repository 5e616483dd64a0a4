"""Figures: samples from several runs, their median and spread, the target, the table
printed at the end and the JSON written to `bench/results/<date>.json`."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Target:
    op: str  # ">=" or "<="
    value: float

    def met(self, x: float) -> bool:
        return x >= self.value if self.op == ">=" else x <= self.value

    def __str__(self) -> str:
        return f"{'≥' if self.op == '>=' else '≤'} {self.value:g}"


def at_least(value: float) -> Target:
    return Target(">=", value)


def at_most(value: float) -> Target:
    return Target("<=", value)


@dataclass
class Figure:
    """One measured quantity; `samples` holds one value per run."""

    name: str
    scenario: str
    label: str
    unit: str
    target: Target | None = None
    samples: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.samples.append(float(value))

    @property
    def value(self) -> float:
        return statistics.median(self.samples)

    @property
    def passed(self) -> bool | None:
        """None when the figure is only reported, or was not measured."""
        if self.target is None or not self.samples:
            return None
        return self.target.met(self.value)

    def as_json(self) -> dict[str, Any]:
        measured = bool(self.samples)
        return {
            "name": self.name,
            "scenario": self.scenario,
            "label": self.label,
            "value": self.value if measured else None,
            "unit": self.unit,
            "runs": len(self.samples),
            "min": min(self.samples) if measured else None,
            "max": max(self.samples) if measured else None,
            "samples": self.samples,
            "target": str(self.target).replace("≥", ">=").replace("≤", "<=")
            if self.target else None,
            "passed": self.passed,
        }


# --- the table ------------------------------------------------------------------------


def fmt(x: float) -> str:
    if x == 0 or abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3f}" if abs(x) < 1 else f"{x:.2f}"


def table_rows(figures: list[Figure]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [
        ("scenario", "figure", "median", "spread (min–max)", "target", "")]
    for f in figures:
        if not f.samples:
            rows.append((f.scenario, f.label, "—", "not run", str(f.target or "report"), ""))
            continue
        runs = f"{len(f.samples)} run" + ("s" if len(f.samples) > 1 else "")
        spread = f"{fmt(min(f.samples))}–{fmt(max(f.samples))} ({runs})"
        verdict = {True: "pass", False: "FAIL", None: ""}[f.passed]
        rows.append((f.scenario, f.label, f"{fmt(f.value)} {f.unit}", spread,
                     str(f.target or "report"), verdict))
    return rows


def print_table(figures: list[Figure], out: TextIO) -> None:
    rows = table_rows(figures)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip(),
              file=out)
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)


# --- the JSON -------------------------------------------------------------------------


def git_commit() -> str | None:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def machine() -> dict[str, Any]:
    return {"nproc": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "processor": platform.machine()}


def results_path(directory: Path, today: date | None = None) -> Path:
    return directory / f"{(today or date.today()).isoformat()}.json"


def write_json(path: Path, figures: list[Figure], **about: Any) -> None:
    """Write atomically (through a `.tmp` beside it)."""
    doc = {"date": date.today().isoformat(), "commit": git_commit(), "machine": machine(),
           **about, "figures": [f.as_json() for f in figures]}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(path)
