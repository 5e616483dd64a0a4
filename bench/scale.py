"""The scale scenario: one OpenAI-dialect job of a million rows on the instant simulator
(`--quick`: a hundred thousand), as a JSONL upload with `[limits] max_batch_rows` and
`[server] max_upload_mb` raised to fit. It times the upload and the validation (to the
batch's `in_progress`), reads relayd's peak RSS over the whole job, the status read's p99
while the file validates and while the job runs, downloads the output file, and reports
the database's bytes a row. Side by side, a fresh relayd runs a job of 50,000 rows (or
the scale job's size, if smaller) the same way, for its peak RSS: a job's memory should
not grow with its rows. Minutes at full size: not in CI (its test runs a tiny one)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench import jobs
from bench.harness import Bench
from bench.procs import BenchError
from bench.report import Figure, at_least, at_most

CHAT = "/v1/chat/completions"
STATUS_EVERY_S = 0.05  # a status read every 50 ms while the file validates and the job runs
SMALL_ROWS = 50_000  # the job whose peak RSS the scale job's is measured against
ENDED = ("completed", "failed", "expired", "cancelled")


def figures() -> list[Figure]:
    return [
        Figure("scale_upload_validate_s", "scale", "upload + validation, to in_progress", "s",
               at_most(60)),
        Figure("scale_peak_rss_mb", "scale", "relayd peak RSS (VmHWM) over the whole job",
               "MB", at_most(300)),
        Figure("scale_rss_ratio", "scale", "its peak RSS ÷ a 50,000-row job's", "×",
               at_most(1.2)),
        Figure("scale_validate_status_p99_ms", "scale",
               "GET /v1/batches/{id} p99 while the file validates", "ms", at_most(50)),
        Figure("scale_status_p99_ms", "scale", "GET /v1/batches/{id} p99 while it runs", "ms",
               at_most(20)),
        Figure("scale_rows_per_s", "scale", "rows/s once validated", "rows/s"),
        Figure("scale_download_mb_per_s", "scale", "output file download", "MB/s",
               at_least(50)),
        Figure("scale_db_bytes_per_row", "scale", "database bytes per stored row", "B"),
    ]


def scale(b: Bench) -> None:
    n = b.sizes.scale_rows
    small = min(n, SMALL_ROWS)
    upload = write_records(b.home / f"scale-{n}.jsonl", n)
    small_upload = write_records(b.home / f"scale-{small}.jsonl", small)
    megabytes = upload.stat().st_size / 1e6
    for i in range(b.runs["scale"]):
        big = run_job(b, upload, n, megabytes)
        alone = run_job(b, small_upload, small, megabytes)
        b.figures["scale_upload_validate_s"].add(big.validate_s)
        b.figures["scale_peak_rss_mb"].add(big.peak_mb)
        b.figures["scale_rss_ratio"].add(big.peak_mb / alone.peak_mb)
        b.figures["scale_validate_status_p99_ms"].add(
            jobs.percentile(big.validate_reads or [0.0], 99))
        b.figures["scale_status_p99_ms"].add(jobs.percentile(big.run_reads or [0.0], 99))
        b.figures["scale_rows_per_s"].add(n / max(1e-6, big.run_s))
        b.figures["scale_download_mb_per_s"].add(big.output_bytes / 1e6
                                                 / max(1e-6, big.download_s))
        b.figures["scale_db_bytes_per_row"].add(big.db_bytes / n)
        b.say(f"[scale] run {i + 1}: {n:,} rows ({megabytes:.0f} MB) validated in "
              f"{big.validate_s:.1f} s, ran in {big.run_s:.1f} s, peak RSS "
              f"{big.peak_mb:.0f} MB ({small:,} rows: {alone.peak_mb:.0f} MB), output "
              f"{big.output_bytes / 1e6:.0f} MB in {big.download_s:.2f} s")


@dataclass
class Run:
    validate_s: float
    run_s: float
    peak_mb: float
    validate_reads: list[float]
    run_reads: list[float]
    download_s: float
    output_bytes: int
    db_bytes: int


def run_job(b: Bench, upload: Path, n: int, megabytes: float) -> Run:
    """One fresh relayd runs the file's batch to its end."""
    daemon = b.daemon({"fast": b.sim(0)}, tables={
        "limits": {"max_batch_rows": max(n, 50_000)},
        "server": {"max_upload_mb": max(512, int(megabytes * 2))}}).start()
    try:
        client = daemon.client()
        started = time.perf_counter()
        batch = submit_file(client, upload)
        validate_reads = poll(client, batch["id"], until=("in_progress", "completed"),
                              timeout=600)
        validated = time.perf_counter()
        run_reads = poll(client, batch["id"], until=ENDED, timeout=max(600.0, n / 500))
        done = jobs.status(client, batch["id"])
        ran = time.perf_counter()
        if done["status"] != "completed" or done["request_counts"]["completed"] != n:
            raise BenchError(f"the scale job ended {done['status']}: "
                             f"{done['request_counts']}")
        download_s, size = download(client, done["output_file_id"])
        return Run(validate_s=validated - started, run_s=ran - validated,
                   peak_mb=daemon.peak_rss_mb(), validate_reads=validate_reads,
                   run_reads=run_reads, download_s=download_s, output_bytes=size,
                   db_bytes=database_bytes(daemon.data))
    finally:
        daemon.kill()
        daemon.stop()


def write_records(path: Path, n: int) -> Path:
    """`n` chat records on the "fast" alias, about 250 bytes each, written once a run."""
    if path.exists():
        return path
    with path.open("w") as out:
        for i in range(n):
            out.write(json.dumps({"custom_id": f"s-{i}", "method": "POST", "url": CHAT,
                                  "body": {"model": "fast", "max_tokens": 8, "messages": [
                                      {"role": "user",
                                       "content": f"Classify the sentiment of review {i}: "
                                                  "the tent kept us dry all week."}]}})
                      + "\n")
    return path


def submit_file(client: httpx.Client, path: Path) -> dict[str, Any]:
    with path.open("rb") as data:
        uploaded = client.post("/v1/files", files={"file": (path.name, data)},
                               data={"purpose": "batch"}, timeout=600)
    if uploaded.status_code != 200:
        raise BenchError(f"the upload was refused: {uploaded.status_code} {uploaded.text}")
    made = client.post("/v1/batches", json={"input_file_id": uploaded.json()["id"],
                                            "endpoint": CHAT, "completion_window": "24h"})
    if made.status_code != 200:
        raise BenchError(f"the batch was refused: {made.status_code} {made.text}")
    answer: dict[str, Any] = made.json()
    return answer


def poll(client: httpx.Client, batch_id: str, *, until: tuple[str, ...],
         timeout: float) -> list[float]:
    """Each status read's milliseconds, every STATUS_EVERY_S until the batch is in one of
    `until` (a batch that ends otherwise is an error)."""
    reads: list[float] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        started = time.perf_counter()
        status = str(jobs.status(client, batch_id)["status"])
        reads.append((time.perf_counter() - started) * 1000)
        if status in until:
            return reads
        if status in ENDED:
            raise BenchError(f"the scale batch ended {status}")
        time.sleep(STATUS_EVERY_S)
    raise BenchError(f"the scale batch was not {' or '.join(until)} in {timeout:.0f} s")


def download(client: httpx.Client, file_id: str) -> tuple[float, int]:
    """Seconds to read the output file's content whole, and its bytes."""
    started, size = time.perf_counter(), 0
    with client.stream("GET", f"/v1/files/{file_id}/content", timeout=600) as answer:
        for chunk in answer.iter_bytes(1 << 20):
            size += len(chunk)
    return time.perf_counter() - started, size


def database_bytes(data: Path) -> int:
    """The SQLite database's bytes, its write-ahead log included."""
    return sum(p.stat().st_size for p in data.glob("relay.db*"))
