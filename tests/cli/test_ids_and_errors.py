"""Job id prefixes (as git takes them), `ls` saying more jobs exist, errors as JSON
under --json with the same exit codes, and ISO 8601 timestamps, against a real relayd."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from relaytui import cli as relay_cli
from tests.cli.conftest import Run
from tests.e2e.harness import rows, wait_for_status

pytestmark = pytest.mark.e2e

DEAD = {"custom_id": "dead", "messages": [{"role": "user", "content": "x [sim:fail=503]"}]}
MakeJob = Callable[[list[dict[str, Any]]], dict[str, Any]]  # `job`: its rows -> the ended job
MakeBatch = Callable[[], dict[str, Any]]  # `openai_batch`: the ended batch


@pytest.fixture
def job(http: httpx.Client) -> MakeJob:
    """`job(lines)`: a Relay job of `lines`, once it ended."""

    def make(lines: list[dict]) -> dict:
        made = http.post("/v1/batches", json={"model": "gpt-4o-mini", "requests": lines})
        return wait_for_status(http, made.json()["id"], "completed")

    return make


@pytest.fixture
def openai_batch(http: httpx.Client) -> MakeBatch:
    def make() -> dict:
        batch = http.post("/v1/batches", json={
            "endpoint": "/v1/chat/completions", "completion_window": "24h",
            "requests": [{"custom_id": "o-1", "method": "POST",
                          "url": "/v1/chat/completions",
                          "body": {"model": "gpt-4o-mini",
                                   "messages": [{"role": "user", "content": "hi"}]}}]})
        return wait_for_status(http, batch.json()["id"], "completed")

    return make


def is_iso(text: str) -> bool:
    return text.endswith("Z") and datetime.fromisoformat(text).tzinfo is not None


def test_a_unique_prefix_names_its_job_in_every_command(relay: Callable[..., Run], job: MakeJob,
                                                        openai_batch: MakeBatch) -> None:
    mine, other = job([*rows(2), DEAD]), openai_batch()
    prefix = mine["id"][:6]  # Relay ids are hex; the other job's starts with batch_
    assert relay("status", prefix, "--json").json()["id"] == mine["id"]
    assert relay("status", other["id"][:10], "--json").json()["id"] == other["id"]
    results = relay("results", prefix)
    assert results.code == 0 and len(results.out.splitlines()) == 3
    dead = relay("dead-letter", prefix, "--json")
    assert [e["custom_id"] for e in dead.json()] == ["dead"]
    ended = relay("cancel", prefix)  # resolved, then refused by relayd: it has ended
    assert ended.code == relay_cli.REFUSED and f"Batch {mine['id']} has already" in ended.err


def test_an_ambiguous_prefix_is_a_usage_error_naming_the_candidates(
        relay: Callable[..., Run], openai_batch: MakeBatch) -> None:
    first, second = openai_batch(), openai_batch()
    run = relay("status", "batch_")
    assert (run.code, run.out) == (relay_cli.USAGE, "")
    assert "job id prefix 'batch_' is ambiguous: 2 jobs start with it" in run.err
    assert first["id"] in run.err and second["id"] in run.err
    as_json = relay("cancel", "batch_", "--json")
    assert (as_json.code, as_json.err) == (relay_cli.USAGE, "")
    error = as_json.json()["error"]
    assert (error["type"], error["exit_code"]) == ("usage", relay_cli.USAGE)
    assert sorted(error["candidates"]) == sorted([first["id"], second["id"]])


def test_an_unknown_id_or_prefix_is_relayds_404(relay: Callable[..., Run], job: MakeJob) -> None:
    job(rows(1))
    run = relay("status", "zzzz")
    assert (run.code, run.out) == (relay_cli.REFUSED, "")
    assert run.err.startswith("relay: ") and "zzzz" in run.err
    error = relay("results", "zzzz", "--json").json()["error"]
    assert (error["status"], error["type"], error["exit_code"]) == (404, "refused", 1)


def test_ls_says_when_more_jobs_exist(relay: Callable[..., Run], job: MakeJob) -> None:
    for _ in range(3):
        job(rows(1))
    short = relay("ls", "--limit", "2")
    assert len(short.out.splitlines()) == 3  # header and two jobs
    assert short.err == "more jobs exist than the 2 shown: --limit 4 shows more\n"
    as_json = relay("ls", "--limit", "2", "--json")
    assert len(as_json.json()) == 2 and "more jobs exist" in as_json.err
    everything = relay("ls", "--limit", "3")
    assert len(everything.out.splitlines()) == 4 and everything.err == ""


def test_json_errors_are_on_stdout_with_the_same_exit_codes(
        cli: Callable[..., Run], relay: Callable[..., Run],
        write: Callable[[str, Any], Path]) -> None:
    usage = cli("ls", "--limit", "0", "--json")
    assert (usage.code, usage.err) == (relay_cli.USAGE, "")
    assert usage.json() == {"error": {"message": "argument --limit: must be at least 1; "
                                      "got 0", "type": "usage", "exit_code": 2}}
    plain = cli("ls", "--limit", "0")
    assert plain.code == 2 and plain.out == "" and "usage: relay ls" in plain.err

    bad_file = write("p.csv", 'a,"unclosed\n')
    located = relay("submit", bad_file, "--model", "gpt-4o-mini", "--json")
    assert (located.code, located.err) == (2, "")
    assert located.json()["error"]["message"].startswith(f"{bad_file}:1:")
    wrong_key = relay("ls", "--key", "rk_wrong", "--json")
    error = wrong_key.json()["error"]
    assert (wrong_key.code, error["status"], error["code"]) == (1, 401, "invalid_api_key")
    assert "relayd keys create" in error["hint"]


def test_timestamps_are_iso_8601_for_people_and_in_relay_json(relay: Callable[..., Run],
                                                              job: MakeJob,
                                                              openai_batch: MakeBatch) -> None:
    mine, other = job([DEAD]), openai_batch()
    shown = dict(line.split(":", 1) for line in relay("status", mine["id"]).out.splitlines())
    assert all(is_iso(shown[k].strip()) for k in ("created_at", "started_at",
                                                  "completed_at"))
    batch = dict(line.split(":", 1) for line in relay("status", other["id"]).out.splitlines())
    assert is_iso(batch["created_at"].strip()) and is_iso(batch["completed_at"].strip())
    assert isinstance(relay("status", other["id"], "--json").json()["created_at"], int)

    entry = relay("dead-letter", mine["id"], "--json").json()[0]
    assert entry["attempt_log"] and all(is_iso(a["started_at"]) for a in entry["attempt_log"])
