"""The scale scenario: one OpenAI-dialect job of a million rows on the instant simulator
(`--quick`: a hundred thousand), as a JSONL upload with `[limits] max_batch_rows` and
`[server] max_upload_mb` raised to fit. It times the upload and the validation (to the
batch's `in_progress`), reads relayd's peak RSS over the whole job and the status read's
p99 while the job runs, downloads the output file, and reports the database's bytes a
row. Minutes at full size: not in CI (its test runs a tiny one)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from bench import jobs
from bench.harness import Bench
from bench.procs import BenchError
from bench.report import Figure, at_least, at_most

CHAT = "/v1/chat/completions"
STATUS_EVERY_S = 0.05  # a status read every 50 ms while the job runs


def figures() -> list[Figure]:
    return [
        Figure("scale_upload_validate_s", "scale", "upload + validation, to in_progress", "s",
               at_most(60)),
        Figure("scale_peak_rss_mb", "scale", "relayd peak RSS (VmHWM) over the whole job",
               "MB", at_most(300)),
        Figure("scale_status_p99_ms", "scale", "GET /v1/batches/{id} p99 while it runs", "ms",
               at_most(20)),
        Figure("scale_rows_per_s", "scale", "rows/s once validated", "rows/s"),
        Figure("scale_download_mb_per_s", "scale", "output file download", "MB/s",
               at_least(50)),
        Figure("scale_db_bytes_per_row", "scale", "database bytes per stored row", "B"),
    ]


def scale(b: Bench) -> None:
    n = b.sizes.scale_rows
    upload = write_records(b.home / f"scale-{n}.jsonl", n)
    megabytes = upload.stat().st_size / 1e6
    for i in range(b.runs["scale"]):
        daemon = b.daemon({"fast": b.sim(0)}, tables={
            "limits": {"max_batch_rows": max(n, 50_000)},
            "server": {"max_upload_mb": max(512, int(megabytes * 2))}}).start()
        try:
            client = daemon.client()
            started = time.perf_counter()
            batch = submit_file(client, upload)
            status = wait_for(client, batch["id"], ("in_progress", "completed"),
                              timeout=600)
            validated = time.perf_counter()
            reads = poll_while_running(client, batch["id"], timeout=max(600.0, n / 500))
            done = jobs.status(client, batch["id"])
            ran = time.perf_counter()
            if done["status"] != "completed" or done["request_counts"]["completed"] != n:
                raise BenchError(f"the scale job ended {done['status']}: "
                                 f"{done['request_counts']}")
            download_s, size = download(client, done["output_file_id"])
            peak = daemon.peak_rss_mb()
            db_bytes = database_bytes(daemon.data)
        finally:
            daemon.kill()
            daemon.stop()
        b.figures["scale_upload_validate_s"].add(validated - started)
        b.figures["scale_peak_rss_mb"].add(peak)
        b.figures["scale_status_p99_ms"].add(jobs.percentile(reads or [0.0], 99))
        b.figures["scale_rows_per_s"].add(n / max(1e-6, ran - validated))
        b.figures["scale_download_mb_per_s"].add(size / 1e6 / max(1e-6, download_s))
        b.figures["scale_db_bytes_per_row"].add(db_bytes / n)
        b.say(f"[scale] run {i + 1}: {n:,} rows ({megabytes:.0f} MB) validated in "
              f"{validated - started:.1f} s ({status}), ran in {ran - validated:.1f} s, "
              f"peak RSS {peak:.0f} MB, output {size / 1e6:.0f} MB in {download_s:.2f} s")


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


def wait_for(client: httpx.Client, batch_id: str, statuses: tuple[str, ...], *,
             timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = str(jobs.status(client, batch_id)["status"])
        if status in statuses:
            return status
        if status in ("failed", "expired", "cancelled"):
            raise BenchError(f"the scale batch ended {status} while validating")
        time.sleep(0.2)
    raise BenchError(f"the scale batch was not {' or '.join(statuses)} in {timeout:.0f} s")


def poll_while_running(client: httpx.Client, batch_id: str, *, timeout: float) -> list[float]:
    """Each status read's milliseconds, every STATUS_EVERY_S until the batch ends."""
    reads: list[float] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        started = time.perf_counter()
        status = jobs.status(client, batch_id)["status"]
        reads.append((time.perf_counter() - started) * 1000)
        if status in ("completed", "failed", "expired", "cancelled"):
            return reads
        time.sleep(STATUS_EVERY_S)
    raise BenchError(f"the scale batch did not end in {timeout:.0f} s")


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
