"""A table in, the same table out: the installed `relay` console script (a process of
its own) submits a CSV and a Parquet file through `--template` to a real relayd on the
simulator, and joins the answers back on (CSV and Parquet out, every input row there,
the failed one with its error), then writes the failed rows for a second run."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.e2e.harness import Relayd, running_pair

pytestmark = pytest.mark.e2e

RELAY = Path(sys.executable).parent / "relay"
TABLE = ('review_id,review,stars\n'
         'r1,"Great tent, love it",5\n'
         'r2,"Awful.\nBroke on day two, never again",1\n'
         'r3,"Arrived [sim:fail=400]",2\n'
         'r4,Ünïcödé is fine 🙂,3\n')


@pytest.fixture(scope="module")
def relayd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Relayd]:
    with running_pair(tmp_path_factory.mktemp("tables")) as daemon:
        yield daemon


def relay(daemon: Relayd, home: Path, *argv: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RELAY_URL": daemon.url, "RELAY_API_KEY": daemon.key("tables"),
           "XDG_CONFIG_HOME": str(home / "config")}
    return subprocess.run([str(RELAY), *map(str, argv)], env=env, capture_output=True,
                          text=True, timeout=60, cwd=home)


def test_a_csv_goes_in_and_comes_back_joined(relayd: Relayd, tmp_path: Path) -> None:
    (tmp_path / "reviews.csv").write_text(TABLE, encoding="utf-8")
    submitted = relay(relayd, tmp_path, "submit", "reviews.csv", "--model", "gpt-4o-mini",
                      "--template", "Classify the sentiment of: {review} ({stars} stars)",
                      "--id-column", "review_id", "--set", "temperature=0", "--wait",
                      "--json")
    assert submitted.returncode == 4, submitted.stderr  # completed, one row failed
    batch = json.loads(submitted.stdout)
    assert batch["request_counts"] == {"total": 4, "completed": 3, "failed": 1}

    joined = relay(relayd, tmp_path, "results", batch["id"][:12], "--join", "reviews.csv",
                   "-o", "labelled.csv")
    assert joined.returncode == 0, joined.stderr
    rows = list(csv.DictReader(io.StringIO((tmp_path / "labelled.csv").read_text(
        encoding="utf-8"), newline="")))
    assert [r["review_id"] for r in rows] == ["r1", "r2", "r3", "r4"]
    assert rows[1]["review"] == "Awful.\nBroke on day two, never again"
    assert [r["content"] for r in rows] == ["positive", "negative", "", "neutral"]
    assert "400" in rows[2]["error"] and rows[2]["finish_reason"] == ""
    assert all(int(r["total_tokens"]) > 0 for r in rows if r["content"])

    retry = relay(relayd, tmp_path, "results", batch["id"], "--failed-only", "-o",
                  "retry.csv")
    assert retry.returncode == 0, retry.stderr
    assert (tmp_path / "retry.csv").read_text(encoding="utf-8").splitlines() == [
        "review_id,review,stars", 'r3,Arrived [sim:fail=400],2']
    again = relay(relayd, tmp_path, "submit", "retry.csv", "--model", "gpt-4o-mini",
                  "--template", "{review}", "--id-column", "review_id", "--json")
    assert again.returncode == 0, again.stderr
    assert [p.name for p in tmp_path.glob(".*.part")] == []  # written whole


def test_a_parquet_goes_in_and_comes_back_as_parquet(relayd: Relayd, tmp_path: Path) -> None:
    pq.write_table(pa.table({
        "n": pa.array([1, 2, 3], pa.int16()),
        "text": pa.array(["good value", "terrible, broken", "okay"]),
        "score": pa.array([0.5, None, 2.0]),
    }), tmp_path / "items.parquet")
    submitted = relay(relayd, tmp_path, "submit", "items.parquet", "--model", "gpt-4o-mini",
                      "--template", "Classify: {text}", "--system", "One word.", "--wait",
                      "--json")
    assert submitted.returncode == 0, submitted.stderr
    batch_id = json.loads(submitted.stdout)["id"]
    joined = relay(relayd, tmp_path, "results", batch_id, "--join", "-o", "out.parquet",
                   "--json")
    assert joined.returncode == 0, joined.stderr
    assert json.loads(joined.stdout) == {"id": batch_id, "path": "out.parquet", "rows": 3,
                                         "failed": 0}
    back = pq.read_table(tmp_path / "out.parquet")
    assert back.column_names == ["n", "text", "score", "content", "error", "finish_reason",
                                 "prompt_tokens", "completion_tokens", "total_tokens"]
    assert back.schema.field("n").type == pa.int16()
    assert back.column("score").to_pylist() == [0.5, None, 2.0]
    assert back.column("content").to_pylist() == ["positive", "negative", "neutral"]
    assert back.column("error").to_pylist() == [None, None, None]
