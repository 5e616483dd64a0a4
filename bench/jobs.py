"""Talking to relayd as a client does: build rows, submit a job, watch it end."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import Any

import httpx

from bench.procs import BenchError

POLL_S = 0.05
ENDED = frozenset({"completed", "failed", "canceled"})
JSON = {"Content-Type": "application/json"}


def prompts(n: int, tag: str) -> list[str]:
    """Short, distinct prompts (the simulator answers them with a sentiment label)."""
    return [f"Classify: fine product {tag}-{i}" for i in range(n)]


def job_body(model: str, texts: Sequence[str], *, tag: str) -> bytes:
    """A Relay-dialect submit, encoded in advance so no timing includes the encoding."""
    rows = [{"custom_id": f"{tag}-{i}", "messages": [{"role": "user", "content": text}]}
            for i, text in enumerate(texts)]
    return json.dumps({"name": f"bench {tag}", "model": model, "requests": rows},
                      separators=(",", ":")).encode()


TOOL_ROUNDS = 2  # each tool-calling record: 2 rounds, 3 model calls, 2 executor calls
LOOKUP = {"type": "function", "function": {
    "name": "lookup", "parameters": {"type": "object",
                                     "properties": {"query": {"type": "string"}}}}}


def tool_job_body(model: str, texts: Sequence[str], *, tag: str, executor: str) -> bytes:
    """A Relay-dialect submit of tool-calling records (OpenAI chat records with
    `openrelay.tool_config`) on the simulator's HTTP executor, `TOOL_ROUNDS` rounds each."""
    rows = [{"custom_id": f"{tag}-{i}", "method": "POST", "url": "/v1/chat/completions",
             "body": {"model": model, "tools": [LOOKUP], "messages": [
                 {"role": "user", "content": f"{text} [sim:tool_rounds={TOOL_ROUNDS}]"}],
                 "openrelay": {"tool_config": {"url": executor}}}}
            for i, text in enumerate(texts)]
    return json.dumps({"name": f"bench {tag}", "model": model, "requests": rows},
                      separators=(",", ":")).encode()


FLOW_TEXT = "Relay runs batches. It retries failures. It falls back. It keeps dead letters."
FLOW_STEPS, FLOW_REQUESTS = 2, 5  # the simulator's map-reduce: 4 map requests, 1 reduce


def workflow_file(model: str, n: int, *, tag: str, callback: str) -> bytes:
    """An OpenAI-dialect input file of workflow records on the simulator's callback."""
    records = [{"custom_id": f"{tag}-{i}", "method": "POST", "url": "/v1/chat/completions",
                "body": {"model": model, "messages": [
                    {"role": "user", "content": f"{FLOW_TEXT} ({tag}-{i})"}],
                    "openrelay": {"workflow": {"url": callback,
                                               "authorization": "Bearer bench"}}}}
               for i in range(n)]
    return "\n".join(json.dumps(r, separators=(",", ":")) for r in records).encode()


def timed_batch(client: httpx.Client, data: bytes, *, timeout: float) -> float:
    """An OpenAI-dialect batch from an uploaded file: seconds from the create's 200 to
    the poll that sees it completed (every record succeeded)."""
    upload = client.post("/v1/files", files={"file": ("bench.jsonl", data)},
                         data={"purpose": "batch"})
    upload.raise_for_status()
    created = client.post("/v1/batches", json={
        "input_file_id": upload.json()["id"], "endpoint": "/v1/chat/completions",
        "completion_window": "24h"})
    if created.status_code != 200:
        raise BenchError(f"batch refused: {created.status_code} {created.text[:500]}")
    started, batch_id = time.perf_counter(), created.json()["id"]
    deadline = started + timeout
    while True:
        batch = status(client, batch_id)
        seen = time.perf_counter()
        if batch["status"] in ("completed", "failed", "expired", "cancelled"):
            counts = batch["request_counts"]
            if batch["status"] != "completed" or counts["failed"]:
                raise BenchError(f"batch {batch_id} ended {batch['status']} with {counts}")
            return seen - started
        if seen > deadline:
            raise BenchError(f"batch {batch_id} still {batch['status']} after {timeout:g}s")
        time.sleep(POLL_S)


def submit(client: httpx.Client, body: bytes) -> dict[str, Any]:
    resp = client.post("/v1/batches", content=body, headers=JSON)
    if resp.status_code != 200:
        raise BenchError(f"submit refused: {resp.status_code} {resp.text[:500]}")
    return resp.json()


def status(client: httpx.Client, job_id: str) -> dict[str, Any]:
    resp = client.get(f"/v1/batches/{job_id}")
    resp.raise_for_status()
    return resp.json()


def wait_end(client: httpx.Client, job_id: str, *, timeout: float,
             every: float = POLL_S) -> tuple[float, dict[str, Any]]:
    """Poll `GET /v1/batches/{id}` until the job has ended; return (perf_counter at the
    read that saw it end, the job). Every row must have completed."""
    deadline = time.perf_counter() + timeout
    while True:
        job = status(client, job_id)
        seen = time.perf_counter()
        if job["status"] in ENDED:
            return seen, check_completed(job)
        if seen > deadline:
            raise BenchError(f"job {job_id} still {job['status']} after {timeout:g}s "
                             f"({job['completed']}/{job['total']} rows)")
        time.sleep(every)


def check_completed(job: dict[str, Any]) -> dict[str, Any]:
    if job["status"] != "completed" or job["completed"] != job["total"]:
        raise BenchError(f"job {job['id']} ended {job['status']} with {job['completed']}/"
                         f"{job['total']} rows completed, {job['failed']} failed")
    return job


def timed_job(client: httpx.Client, body: bytes, *, timeout: float) -> float:
    """Seconds from the 200 of the submit to the poll that sees the job completed."""
    job = submit(client, body)
    started = time.perf_counter()
    ended, _ = wait_end(client, job["id"], timeout=timeout)
    return ended - started


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0–100) of a non-empty sample."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]
