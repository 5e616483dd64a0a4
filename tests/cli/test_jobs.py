"""`relay ls | status | cancel | results | dead-letter` against a real relayd, in text
and with --json, for Relay jobs and OpenAI-dialect batches."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from daemon import testing
from relaytui import cli
from relaytui import cli as relay_cli  # the module, beside the `cli` fixture
from relaytui.client import RelayClient
from tests.cli.conftest import Run
from tests.e2e.harness import Relayd, rows, wait_for_status

pytestmark = pytest.mark.e2e

DEAD = {"custom_id": "dead", "messages": [{"role": "user", "content": "x [sim:fail=503]"}]}
QUOTED = {"custom_id": "quoted", "messages": [{"role": "user", "content": 'say "hi", then go'}]}
Submit = Callable[..., dict[str, Any]]  # `submit`: (rows, *options, wait=) -> the job


def slow_rows(n: int) -> list[dict]:
    return rows(n, text="Classify slowly [sim:sleep=1500]")


@pytest.fixture
def submit(relay: Callable[..., Run], write: Callable[[str, Any], Path]) -> Submit:
    """Submit rows as a new job (`--wait`s unless told otherwise) and return its JSON:
    without an idempotency key, so the same rows twice are two jobs."""

    def run(lines: list[dict], *options: str, wait: bool = True) -> dict:
        path = write("rows.jsonl", lines)
        done = relay("submit", path, "--model", "gpt-4o-mini", "--json", "--no-idempotency",
                     *options,
                     *(["--wait"] if wait else []))
        failed_rows = wait and any(row is DEAD for row in lines)
        assert done.code == (cli.ROWS_FAILED if failed_rows else cli.OK), done.err
        return done.json()

    return run


@pytest.fixture
def openai_batch(http: httpx.Client) -> dict[str, Any]:
    batch = http.post("/v1/batches", json={
        "endpoint": "/v1/chat/completions", "completion_window": "24h",
        "metadata": {"name": "From the SDK"},
        "requests": [{"custom_id": "o-1", "method": "POST", "url": "/v1/chat/completions",
                      "body": {"model": "gpt-4o-mini",
                               "messages": [{"role": "user", "content": "hi"}]}}]}).json()
    return wait_for_status(http, batch["id"], "completed")


def test_ls_shows_both_dialects_in_one_table(relay: Callable[..., Run], submit: Submit,
                                             openai_batch: dict[str, Any]) -> None:
    job = submit([*rows(3), DEAD], "--name", "Reviews", "--priority", "2")
    run = relay("ls")
    assert run.code == 0
    header, newest, older = run.out.splitlines()  # the OpenAI batch was made first
    assert header.split() == ["ID", "STATUS", "NAME", "MODEL", "PRI", "TIER", "DONE/TOTAL",
                              "FAILED", "DEAD", "CREATED"]
    assert newest.split() == [job["id"], "completed", "with", "errors", "Reviews",
                              "gpt-4o-mini", "2", "-", "4/4",
                              "1", "1", job["created_at"]]
    # An OpenAI batch: its metadata name, its settled model, no priority, its tier.
    assert older.split()[:10] == [openai_batch["id"], "completed", "From", "the", "SDK",
                                  "gpt-4o-mini", "-", "standard", "1/1", "0"]
    assert older.split()[10] == "-"  # OpenAI batches have no dead-letter count
    assert older.split()[11].endswith("Z")  # Unix seconds shown as ISO


def test_ls_json_status_filter_and_limit(relay: Callable[..., Run], submit: Submit) -> None:
    first, second = submit(rows(1)), submit(rows(1))
    template = submit(rows(1), "--cron", "0 3 * * *", wait=False)
    listed = relay("ls", "--json")
    assert [j["id"] for j in listed.json()] == [template["id"], second["id"], first["id"]]
    assert [j["id"] for j in relay("ls", "--json", "--limit", "1").json()] == [template["id"]]
    scheduled = relay("ls", "--status", "scheduled", "--json").json()
    assert [j["id"] for j in scheduled] == [template["id"]]
    none = relay("ls", "--status", "running")
    assert (none.code, none.out, none.err) == (0, "", "no jobs with status running\n")
    bogus = relay("ls", "--status", "bogus")
    assert bogus.code == 1 and "(field: status)" in bogus.err


def test_status_prints_key_value_lines_or_json(relay: Callable[..., Run], submit: Submit,
                                               openai_batch: dict[str, Any]) -> None:
    job = submit(rows(2), "--name", "Two rows")
    failing = submit([*rows(1), DEAD])
    worded = dict(line.split(":", 1) for line in relay("status", failing["id"]).out.splitlines())
    assert worded["status"].strip() == "completed with errors"  # as `relay ls` says it
    assert relay("status", failing["id"], "--json").json()["status"] == "completed"
    run = relay("status", job["id"])
    assert run.code == 0
    fields = dict(line.split(":", 1) for line in run.out.splitlines())
    assert fields["id"].strip() == job["id"]
    assert (fields["status"].strip(), fields["total"].strip()) == ("completed", "2")
    assert fields["name"].strip() == "Two rows"
    assert fields["error"].strip() == "-"
    as_json = relay("status", job["id"], "--json")
    assert (as_json.json()["id"], as_json.json()["completed"], as_json.err) == (job["id"], 2, "")
    assert relay("--json", "status", job["id"]).json()["name"] == "Two rows"
    openai = relay("status", openai_batch["id"]).out
    assert "request_counts:" in openai and '"completed": 1' in openai
    assert "created_at:" in openai and "Z\n" in openai  # Unix seconds shown as ISO


def test_status_of_an_unknown_job_is_the_daemons_404(relay: Callable[..., Run]) -> None:
    run = relay("status", "0" * 32)
    assert run.code == 1
    assert run.err == f"relay: No batch found with id '{'0' * 32}'.\n"


def test_cancel_a_template_ends_it_and_a_second_cancel_is_refused(relay: Callable[..., Run],
                                                                  submit: Submit) -> None:
    template = submit(rows(1), "--cron", "*/5 * * * *", wait=False)
    run = relay("cancel", template["id"])
    assert (run.code, run.out) == (0, f"{template['id']}: canceled\n")
    again = relay("cancel", template["id"], "--json")
    assert again.code == 1
    error = again.json()["error"]
    assert "has already ended (canceled)" in error["message"] and again.err == ""
    assert (error["status"], error["code"], error["exit_code"]) == (
        409, "batch_already_ended", 1)


def test_cancel_a_running_job_then_results_once_it_ends(relay: Callable[..., Run],
                                                        http: httpx.Client, submit: Submit) -> None:
    job = submit(slow_rows(16), wait=False)
    wait_for_status(http, job["id"], "running")
    early = relay("results", job["id"])
    assert early.code == 1
    assert f"job {job['id']} has not ended yet (running)" in early.err
    run = relay("cancel", job["id"])
    assert run.code == 0
    assert run.out.startswith(f"{job['id']}: cancelling (rows in flight may still finish")
    ended = wait_for_status(http, job["id"], "canceled", timeout=10)
    assert ended["completed"] < 16
    results = relay("results", job["id"], "--json").json()
    assert len(results) == 16
    assert {r.get("error") for r in results if "error" in r} == {"canceled"}


def test_results_as_jsonl_on_stdout_and_to_files(relay: Callable[..., Run], submit: Submit,
                                                 tmp_path: Path) -> None:
    job = submit([*rows(2), DEAD, QUOTED])
    run = relay("results", job["id"])
    assert run.code == 0
    lines = [json.loads(line) for line in run.out.splitlines()]
    assert [line["custom_id"] for line in lines] == ["r-0", "r-1", "dead", "quoted"]
    assert lines[0] == {"custom_id": "r-0", "content": "neutral"}
    assert lines[2]["error"].startswith("upstream_error: 503")
    assert relay("results", job["id"], "--json").json() == lines

    out = tmp_path / "out.jsonl"
    saved = relay("results", job["id"], "-o", out)
    assert saved.out == f"wrote 4 results of job {job['id']} to {out}\n"
    assert [json.loads(line) for line in out.read_text().splitlines()] == lines

    table = tmp_path / "out.csv"
    assert relay("results", job["id"], "-o", table, "--json").json()["rows"] == 4
    with table.open(newline="") as f:
        records = list(csv.reader(f))
    assert records[0] == ["custom_id", "content", "error"]
    assert records[1] == ["r-0", "neutral", ""]
    assert records[3][0] == "dead" and records[3][1] == ""
    assert records[3][2].startswith("upstream_error: 503")
    assert records[4] == ["quoted", lines[3]["content"], ""]
    assert 'say "hi", then go' in records[4][1]


def test_results_are_read_a_page_at_a_time(relay: Callable[..., Run], submit: Submit,
                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pages: list[list[str]] = []
    whole_pages = RelayClient.result_pages

    def small_pages(self: RelayClient, job_id: str, *,
                    page: int = 2) -> Iterator[dict[str, Any]]:
        for answer in whole_pages(self, job_id, page=2):
            pages.append([r["custom_id"] for r in answer["data"]])
            yield answer

    monkeypatch.setattr(RelayClient, "result_pages", small_pages)
    job = submit(rows(5))
    run = relay("results", job["id"])
    assert [json.loads(line)["custom_id"] for line in run.out.splitlines()] == [
        f"r-{i}" for i in range(5)]
    assert pages == [["r-0", "r-1"], ["r-2", "r-3"], ["r-4"]]
    out = tmp_path / "all.csv"
    assert relay("results", job["id"], "-o", out, "--json").json()["rows"] == 5
    assert len(out.read_text().splitlines()) == 6
    assert [len(page) for page in pages[3:]] == [2, 2, 1]


def test_results_refuses_other_extensions_and_templates(relay: Callable[..., Run], submit: Submit,
                                                        tmp_path: Path) -> None:
    job = submit(rows(1))
    bad = relay("results", job["id"], "-o", tmp_path / "out.txt")
    assert bad.code == 2 and "must end in .jsonl or .csv" in bad.err
    template = submit(rows(1), "--cron", "*/5 * * * *", wait=False)
    early = relay("results", template["id"])
    assert early.code == 1 and "is a cron template" in early.err
    followed = relay("results", template["id"], "--follow")  # it would never end
    assert followed.code == 1 and "is a cron template" in followed.err


def test_dead_letter_table_and_json(relay: Callable[..., Run], submit: Submit) -> None:
    job = submit([*rows(2), DEAD])
    run = relay("dead-letter", job["id"])
    assert run.code == 0
    header, entry = run.out.splitlines()
    assert header.split() == ["CUSTOM_ID", "ATTEMPTS", "STATE", "MODELS", "LAST", "ERROR"]
    assert entry.split()[:5] == ["dead", "6", "open", "gpt-4o-mini,backup", "upstream_error:"]
    [data] = relay("dead-letter", job["id"], "--json").json()
    assert (data["custom_id"], data["attempts"]) == ("dead", 6)
    clean = submit(rows(1))
    empty = relay("dead-letter", clean["id"])
    assert (empty.code, empty.out) == (0, "")
    assert "has no dead-lettered rows" in empty.err
    assert relay("dead-letter", clean["id"], "--json").json() == []


def test_a_job_of_another_workspace_is_not_found(relay: Callable[..., Run], shared_relayd: Relayd,
                                                 submit: Submit) -> None:
    job = submit(rows(1))
    other = relay("status", job["id"], "--key", shared_relayd.key("stranger"))
    assert other.code == 1 and "No batch found" in other.err


def test_dead_letter_retry_discard_and_every_job(relay: Callable[..., Run], submit: Submit) -> None:
    first = submit([*rows(1), DEAD])
    second = submit([DEAD, {**DEAD, "custom_id": "dead-2"}])

    every = relay("dead-letter")
    assert every.code == 0
    assert every.out.splitlines()[0].split()[:3] == ["JOB", "CUSTOM_ID", "ATTEMPTS"]
    assert [line.split()[0] for line in every.out.splitlines()[1:]] == [
        second["id"], second["id"], first["id"]]

    retry = relay("dead-letter", first["id"], "--retry", "--json")
    assert retry.code == 0, retry.err
    assert (retry.json()["retry_of"], retry.json()["total"]) == (first["id"], 1)
    again = relay("dead-letter", first["id"], "--retry")
    assert again.code == cli.REFUSED and "force" in again.err
    state = relay("dead-letter", first["id"]).out.splitlines()[1]
    assert f"redriven → {retry.json()['id']}" in state

    gone = relay("dead-letter", second["id"], "--discard", "--rows", "dead-2")
    assert (gone.code, gone.out) == (0, f"{second['id']}: discarded 1 row(s); 1 still open\n")
    assert relay("dead-letter", first["id"], "--rows", "dead").code == cli.USAGE
    assert relay("dead-letter", "--retry").code == cli.USAGE


def test_a_job_with_failed_rows_reads_completed_with_errors(relay: Callable[..., Run],
                                                            submit: Submit) -> None:
    submit([*rows(1), DEAD])
    listed = relay("ls").out.splitlines()[1]
    assert "completed with errors" in listed


def test_a_message_batch_is_listed_shown_and_read_like_any_job(
        relay: Callable[..., Run], http: httpx.Client) -> None:
    """Anthropic's Message Batches are jobs like the others to `relay ls / status /
    results` (through Relay's own routes, which take any dialect's job)."""
    created = http.post("/v1/messages/batches", headers={"anthropic-version": "2023-06-01"},
                        json={"requests": [{"custom_id": f"m-{i}", "params": {
                            "model": "gpt-4o-mini", "max_tokens": 16,
                            "messages": [{"role": "user", "content": "Classify: great"}]}}
                            for i in range(3)]})
    assert created.status_code == 200, created.text
    batch_id = created.json()["id"]
    testing.wait_until(
        lambda: http.get(f"/v1/batches/{batch_id}").json()["processing_status"] == "ended",
        timeout=30, message=f"{batch_id} to end")
    listed = relay("ls", "--json").json()  # each job in its own dialect's shape
    mine = next(job for job in listed if job["id"] == batch_id)
    assert (mine["processing_status"], mine["request_counts"]["succeeded"]) == ("ended", 3)
    row = next(line for line in relay("ls").out.splitlines() if line.startswith(batch_id))
    assert row.split()[1:2] + row.split()[-4:-1] == ["ended", "3/3", "0", "-"]
    assert row.split()[2:6] == ["-", "-", "-", "-"]  # no name, model, priority or tier
    shown = dict(line.split(":", 1) for line in relay("status", batch_id).out.splitlines())
    assert shown["processing_status"].strip() == "ended"
    assert shown["results_url"].strip().endswith(f"/v1/messages/batches/{batch_id}/results")
    lines = [json.loads(line) for line in relay("results", batch_id).out.splitlines()]
    assert [(line["custom_id"], line["content"]) for line in lines] == [
        (f"m-{i}", "positive") for i in range(3)]


def test_relay_cancel_ends_a_message_batch(relay: Callable[..., Run],
                                           http: httpx.Client) -> None:
    created = http.post("/v1/messages/batches", headers={"anthropic-version": "2023-06-01"},
                        json={"requests": [{"custom_id": f"s-{i}", "params": {
                            "model": "gpt-4o-mini", "max_tokens": 16, "messages": [
                                {"role": "user", "content": "Classify slowly [sim:sleep=1500]"}]}}
                            for i in range(20)]})
    batch_id = created.json()["id"]
    run = relay("cancel", batch_id)
    assert run.code == 0 and run.out.startswith(f"{batch_id}: ")
    testing.wait_until(
        lambda: http.get(f"/v1/batches/{batch_id}").json()["processing_status"] == "ended",
        timeout=30, message=f"{batch_id} to end")
    assert relay("cancel", batch_id).code != 0  # ended: the daemon refuses a second cancel


def test_results_follow_prints_each_row_as_it_finishes_then_exits(
        relay: Callable[..., Run], submit: Submit, tmp_path: Path) -> None:
    job = submit([*rows(2), {"custom_id": "slow", "messages": [{"role": "user",
                                                      "content": "late [sim:sleep=1500]"}]},
                  DEAD], wait=False)
    run = relay("results", job["id"], "--follow")
    assert run.code == 0, run.err
    lines = [json.loads(line) for line in run.out.splitlines()]
    assert sorted(line["custom_id"] for line in lines) == ["dead", "r-0", "r-1", "slow"]
    assert lines[-1]["custom_id"] == "slow"  # the slow row finished last
    assert relay("results", job["id"], "--json").json() == sorted(  # ended: the same
        lines, key=lambda line: ["r-0", "r-1", "slow", "dead"].index(line["custom_id"]))
    out = tmp_path / "followed.csv"
    again = relay("results", job["id"], "--follow", "-o", out)
    assert again.out == f"wrote 4 results of job {job['id']} to {out}\n"


def test_pause_then_resume_a_running_job(relay: Callable[..., Run], http: httpx.Client,
                                         submit: Submit) -> None:
    job = submit(slow_rows(8), wait=False)
    wait_for_status(http, job["id"], "running")
    run = relay("pause", job["id"][:12])  # a prefix, as every command takes
    assert run.code == 0
    assert run.out.startswith(f"{job['id']}: paused (rows in flight finish")
    shown = relay("status", job["id"], "--json").json()
    assert (shown["status"], shown["paused"]) == ("running", "operator")
    resumed = relay("resume", job["id"], "--json")
    assert (resumed.code, resumed.json()["paused"]) == (0, None)
    wait_for_status(http, job["id"], "completed")
    again = relay("pause", job["id"], "--json")
    assert again.code == 1
    error = again.json()["error"]
    assert (error["status"], error["code"]) == (409, "batch_already_ended")
    assert "it cannot be paused" in error["message"]


def test_a_tool_rows_attempts_count_its_executor_calls(
        cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch) -> None:
    """`1+3`: one model attempt and three executor calls, as the TUI counts them, not
    a lone `1` beside "after 3 attempts"."""
    calls = [{"round": 1, "executor": "http", "status_code": 503, "error": "down",
              "duration_ms": 3, "started_at": "2026-10-04T09:12:44.125Z"}] * 3
    entry = {"custom_id": "t-1", "attempts": 1, "models": ["gpt-4o-mini"], "state": "open",
             "last_error": "tool_error: executor down (after 3 attempts)",
             "executor_calls": calls}
    monkeypatch.setattr(RelayClient, "dead_letter",
                        lambda self, job_id: {"object": "list", "data": [entry]})
    monkeypatch.setattr(relay_cli, "full_id", lambda client, job_id: job_id)
    monkeypatch.setenv("RELAY_API_KEY", "rk_test_key_1234")
    run = cli("dead-letter", "a" * 32, "--url", "http://127.0.0.1:9")
    assert run.code == 0, run.err
    [header, row] = run.out.splitlines()
    assert header.split()[:2] == ["CUSTOM_ID", "ATTEMPTS"]
    assert row.split()[:3] == ["t-1", "1+3", "open"]
