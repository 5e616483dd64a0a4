"""`relay submit` against a real relayd: files of each format, --wait, and every way a
submission is refused (by the file before anything is sent, or by the daemon)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.conftest import Run
from tests.e2e.harness import closed_port, rows

pytestmark = pytest.mark.e2e

MULTILINE_CSV = 'prompt one\n"a quoted cell\nthat spans\nthree lines"\n"say ""hi"""\n'


def openai_records(n: int) -> list[dict]:
    return [{"custom_id": f"o-{i}", "method": "POST", "url": "/v1/chat/completions",
             "body": {"model": "gpt-4o-mini",
                      "messages": [{"role": "user", "content": f"hello {i}"}]}}
            for i in range(n)]


def test_a_csv_is_one_job_and_a_quoted_multiline_cell_is_one_row(
        relay: Callable[..., Run], write: Callable[[str, Any], Path]) -> None:
    path = write("prompts.csv", MULTILINE_CSV)
    run = relay("submit", path, "--model", "gpt-4o-mini", "--name", "CSV", "--json")
    assert run.code == 0, run.err
    job = run.json()
    assert (job["total"], job["name"], job["status"]) == (3, "CSV", "queued")
    text = relay("submit", path, "--model", "gpt-4o-mini")
    assert text.code == 0
    assert text.out.startswith(f"submitted 3 rows from {path} as job ")


def test_relay_rows_in_jsonl_keep_their_ids_and_priority(relay: Callable[..., Run],
                                                         write: Callable[[str, Any], Path]) -> None:
    path = write("rows.jsonl", rows(4, prefix="mine"))
    run = relay("submit", path, "--model", "gpt-4o-mini", "--priority", "7", "--json",
                "--wait")
    assert run.code == 0, run.err
    assert (run.json()["priority"], run.json()["completed"]) == (7, 4)
    ids = [line["custom_id"] for line in relay("results", run.json()["id"], "--json").json()]
    assert ids == ["mine-0", "mine-1", "mine-2", "mine-3"]


def test_openai_records_in_jsonl_run_as_an_openai_batch_of_their_endpoint(
        relay: Callable[..., Run], write: Callable[[str, Any], Path]) -> None:
    """Every line a record {custom_id, method, url, body}: uploaded, then a batch of the
    endpoint they name; each names its model, so no --model. Every command takes the id."""
    path = write("records.jsonl", openai_records(3))
    run = relay("submit", path, "--wait", "--json")
    assert run.code == 0, run.err
    batch = run.json()
    assert batch["id"].startswith("batch_") and batch["endpoint"] == "/v1/chat/completions"
    assert (batch["metadata"], batch["model"]) == ({"name": "records.jsonl"}, "gpt-4o-mini")
    results = relay("results", batch["id"], "--json").json()
    assert [r["custom_id"] for r in results] == ["o-0", "o-1", "o-2"]
    assert all("Simulated reply" in r["content"] for r in results)
    shown = dict(line.split(":", 1) for line in relay("status", batch["id"][:12]).out
                 .splitlines())
    assert (shown["id"].strip(), shown["status"].strip()) == (batch["id"], "completed")
    [listed] = relay("ls").out.splitlines()[1:]
    assert listed.split()[:9] == [batch["id"], "completed", "records.jsonl", "gpt-4o-mini",
                                  "-", "standard", "3/3", "0", "-"]
    told = relay("submit", path)
    assert told.code == 0 and told.out.startswith(
        f"submitted 3 /v1/chat/completions records from {path} as batch batch_")


def test_openai_records_with_relay_job_options_run_as_a_relay_job(
        relay: Callable[..., Run], write: Callable[[str, Any], Path]) -> None:
    """--priority, --cron and --webhook are a Relay job's: with them the records run as
    one (the Relay Batches API takes OpenAI records), which names its model once."""
    path = write("records.jsonl", openai_records(2))
    run = relay("submit", path, "--model", "gpt-4o-mini", "--priority", "3", "--wait",
                "--json")
    assert run.code == 0, run.err
    assert (run.json()["priority"], run.json()["completed"]) == (3, 2)
    assert not run.json()["id"].startswith("batch_")
    unnamed = relay("submit", path, "--priority", "3")
    assert unnamed.code == 2
    assert unnamed.err.startswith("relay: --priority makes a Relay job") and \
        "pass --model" in unnamed.err


def test_records_that_do_not_fit_one_batch_are_refused_before_anything_is_sent(
        relay: Callable[..., Run], write: Callable[[str, Any], Path],
        http: httpx.Client) -> None:
    chat, embed = openai_records(1), {**openai_records(1)[0], "custom_id": "e",
                                      "url": "/v1/embeddings"}
    cases = [
        (["--endpoint", "/v1/responses"], chat,
         ":1: the record's url '/v1/chat/completions' is not the batch's endpoint "
         "/v1/responses (--endpoint)"),
        ([], [*chat, embed], ":2: the record's url '/v1/embeddings' is not line 1's "
                             "'/v1/chat/completions': a batch has one endpoint"),
        ([], [{**chat[0], "url": "/v1/images"}], ":1: the record's url '/v1/images' is not "
                                                 "an endpoint of the OpenAI Batch API"),
        ([], [{**chat[0], "body": {"messages": []}}], ":1: the body names no model: add "
                                                      "one, or pass --model"),
        (["--cron", "* * * * *", "--endpoint", "/v1/chat/completions"], chat,
         " --cron is for Relay jobs, not OpenAI batches"),
    ]
    for argv, lines, message in cases:
        path = write("records.jsonl", lines)
        run = relay("submit", path, *argv)
        where = "relay:" if message.startswith(" ") else f"relay: {path}"
        assert (run.code, run.out) == (2, ""), run.err
        assert run.err.startswith(where + message), run.err
    assert http.get("/v1/files").json()["data"] == []


def test_wait_shows_progress_on_stderr_and_ends_with_the_outcome(
        relay: Callable[..., Run], write: Callable[[str, Any], Path]) -> None:
    dead = {"custom_id": "dead", "messages": [{"role": "user", "content": "x [sim:fail=503]"}]}
    lines = [*rows(6), dead]
    run = relay("submit", write("rows.jsonl", lines), "--model", "gpt-4o-mini", "--wait")
    assert run.code == 4, run.err  # ROWS_FAILED: completed, but not every row
    assert "waiting for job" in run.err
    assert ("completed with errors [####################] 7/7  failed 1  dead-letter 1"
            in run.err)
    job_id = run.err.split("waiting for job ")[1].split()[0]
    assert run.out == (f"{job_id}: completed with errors (6 completed, 1 failed, "
                       "1 dead-lettered)\n")


@pytest.mark.parametrize(("name", "content", "reason"), [
    ("bad.jsonl", '{"messages": [{"role": "user", "content": "ok"}]}\n{"messages": [\n',
     ":2: not valid JSON"),
    ("wrong.jsonl", '{"prompt": "no messages"}\n', ":1: expected an object with a 'messages'"),
    ("image.csv", b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary", ": not UTF-8 text"),
    ("empty.jsonl", "", ": the file has no rows"),
    ("blank.csv", "\n\n", ": the file has no rows"),
    ("notes.txt", "hello", ": expected a .csv or .jsonl file"),
])
def test_a_bad_file_exits_2_before_anything_is_sent(cli: Callable[..., Run],
                                                    write: Callable[[str, Any], Path],
                                                    name: str, content: str | bytes,
                                                    reason: str) -> None:
    path = write(name, content)
    with closed_port() as port:  # exit 3 would mean it tried to connect
        run = cli("submit", path, "--model", "gpt-4o-mini",
                  "--url", f"http://127.0.0.1:{port}", "--key", "k")
    assert run.code == 2
    assert run.err.startswith(f"relay: {path}{reason}")
    assert run.out == ""


def test_a_missing_file_exits_2(cli: Callable[..., Run], tmp_path: Path) -> None:
    run = cli("submit", tmp_path / "nope.csv", "--model", "m", "--key", "k")
    assert run.code == 2
    assert "nope.csv: cannot read" in run.err


def test_an_unknown_model_prints_the_daemons_message_and_field(
        relay: Callable[..., Run], write: Callable[[str, Any], Path]) -> None:
    run = relay("submit", write("p.csv", "hello\n"), "--model", "nope")
    assert run.code == 1
    assert run.err.startswith("relay: Unknown model 'nope'.")
    assert run.err.rstrip().endswith("(field: model)")
    assert relay("ls", "--json").json() == []


def test_a_bad_cron_is_refused_naming_cron(relay: Callable[..., Run],
                                           write: Callable[[str, Any], Path]) -> None:
    run = relay("submit", write("p.csv", "hello\n"), "--model", "gpt-4o-mini",
                "--cron", "* * *", "--json")
    assert (run.code, run.err) == (1, "")
    error = run.json()["error"]
    assert (error["param"], error["type"], error["exit_code"]) == ("cron", "refused", 1)


def test_a_cron_template_is_scheduled(relay: Callable[..., Run],
                                      write: Callable[[str, Any], Path]) -> None:
    run = relay("submit", write("p.csv", "hello\n"), "--model", "gpt-4o-mini",
                "--cron", "*/5 * * * *", "--name", "Every five")
    assert run.code == 0, run.err
    assert " as cron template " in run.out and "(*/5 * * * *; next run 20" in run.out
    [template] = relay("ls", "--json").json()
    assert (template["status"], template["name"]) == ("scheduled", "Every five")


def test_wait_and_cron_together_is_a_usage_error(relay: Callable[..., Run],
                                                 write: Callable[[str, Any], Path]) -> None:
    run = relay("submit", write("p.csv", "hello\n"), "--model", "gpt-4o-mini",
                "--cron", "*/5 * * * *", "--wait")
    assert run.code == 2
    assert "--wait cannot be used with --cron" in run.err
    assert relay("ls", "--json").json() == []


def test_a_non_integer_priority_is_a_usage_error(cli: Callable[..., Run],
                                                 write: Callable[[str, Any], Path]) -> None:
    run = cli("submit", write("p.csv", "hello\n"), "--model", "m", "--priority", "high")
    assert run.code == 2
    assert "--priority: invalid int value" in run.err


def test_dry_run_prints_the_estimate_and_creates_nothing(
        relay: Callable[..., Run], write: Callable[[str, Any], Path],
        http: httpx.Client) -> None:
    path = write("prompts.csv", MULTILINE_CSV)
    run = relay("submit", path, "--model", "gpt-4o-mini", "--dry-run")
    assert run.code == 0, run.err
    assert run.out.startswith("estimate: 3 rows, ")
    assert "gpt-4o-mini: 3 rows, output from 3 default" in run.out
    records = write("records.jsonl", openai_records(2))
    estimate = relay("submit", records, "--endpoint", "/v1/chat/completions", "--dry-run",
                     "--json")
    assert estimate.code == 0, estimate.err
    assert (estimate.json()["rows"], estimate.json()["discount"]) == (2, "0.5")
    table = write("reviews.csv", "id,review\n1,good tent\n2,bad zip\n3,fine\n")
    templated = relay("submit", table, "--model", "gpt-4o-mini", "--template",
                      "Classify: {review}", "--dry-run", "--json")
    assert templated.code == 0, templated.err
    assert (templated.json()["rows"], templated.json()["discount"]) == (3, "0.5")
    assert http.get("/v1/batches", params={"dialect": "all"}).json()["data"] == []
    assert http.get("/v1/files").json()["data"] == []  # nothing uploaded either


def test_dry_run_of_a_refused_batch_exits_1_naming_the_field(
        relay: Callable[..., Run], write: Callable[[str, Any], Path]) -> None:
    path = write("prompts.csv", "one\ntwo\n")
    run = relay("submit", path, "--model", "no-such-model", "--dry-run")
    assert run.code == 1
    assert "problem: " in run.out and "(model)" in run.out


def test_a_rerun_submit_answers_the_first_job_unless_no_idempotency(
        relay: Callable[..., Run], write: Callable[[str, Any], Path]) -> None:
    """The default Idempotency-Key, from the file's hash and the options: the same
    command again (a script re-run after a network error) is the first job."""
    path = write("again.csv", "one\ntwo\n")
    first = relay("submit", path, "--model", "gpt-4o-mini", "--json")
    again = relay("submit", path, "--model", "gpt-4o-mini", "--json")
    assert first.code == again.code == 0, again.err
    assert again.json()["id"] == first.json()["id"]
    other = relay("submit", path, "--model", "gpt-4o-mini", "--priority", "2", "--json")
    fresh = relay("submit", path, "--model", "gpt-4o-mini", "--json", "--no-idempotency")
    ids = {first.json()["id"], other.json()["id"], fresh.json()["id"]}
    assert len(ids) == 3
    records = write("again.jsonl", openai_records(2))
    batch = relay("submit", records, "--json")
    assert relay("submit", records, "--json").json()["id"] == batch.json()["id"]


def test_a_deadline_goes_with_the_job(relay: Callable[..., Run],
                                      write: Callable[[str, Any], Path]) -> None:
    path = write("deadline.csv", "one\ntwo\n")
    run = relay("submit", path, "--model", "gpt-4o-mini", "--deadline", "6h",
                "--strict-deadline", "--json", "--no-idempotency")
    assert run.code == 0, run.err
    job = run.json()
    assert job["deadline"] and job["deadline_at_risk"] is False
    refused = relay("submit", path, "--model", "gpt-4o-mini", "--deadline", "soon",
                    "--no-idempotency")
    assert refused.code != 0 and "deadline" in refused.err
