"""`relay submit --endpoint`: a .jsonl of OpenAI records (or bare request bodies) for one
endpoint, uploaded and run as an OpenAI batch against a real relayd. Whether a Responses
or moderation record is answered is the router's and the upstream's business (see
tests/e2e/test_openai_endpoints_sdk.py); here, what the CLI sends and says."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from relaytui.formats import (
    InputFileError,
    openai_records,
    parse_records,
    records_endpoint,
    records_of,
)
from tests.cli.conftest import Run
from tests.e2e.harness import RELAYD, Relayd, Simulator, wait_until

pytestmark = pytest.mark.e2e

RESPONSES, MODERATIONS = "/v1/responses", "/v1/moderations"
SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"


def ended(http: httpx.Client, batch_id: str) -> dict[str, Any]:
    return wait_until(lambda: (b := http.get(f"/v1/batches/{batch_id}").json())[
        "status"] in ("completed", "failed") and b)


def test_the_responses_sample_is_one_openai_batch(relay: Callable[..., Run],
                                                  http: httpx.Client) -> None:
    run = relay("submit", SAMPLES / "responses.jsonl", "--endpoint", RESPONSES, "--json")
    assert run.code == 0, run.err
    batch = run.json()
    assert (batch["endpoint"], batch["status"], batch["metadata"]) == (
        RESPONSES, "validating", {"name": "responses.jsonl"})
    done = ended(http, batch["id"])
    assert done["status"] == "completed" and done["request_counts"]["total"] == 6
    errors = http.get(f"/v1/files/{done['error_file_id']}/content").text.splitlines()
    codes = {json.loads(e)["custom_id"]: (json.loads(e)["error"] or {}).get("code")
             for e in errors}
    assert codes["resp-6"] == "previous_response_unsupported"


def test_bare_bodies_are_wrapped_into_records_with_the_model_given(
        relay: Callable[..., Run], write: Callable[[str, Any], Path],
        http: httpx.Client) -> None:
    path = write("mod.jsonl", [{"input": "hello"}, {"custom_id": "two", "input": ["a", "b"]}])
    run = relay("submit", path, "--endpoint", MODERATIONS, "--model", "gpt-4o-mini",
                "--name", "moderated")
    assert run.code == 0, run.err
    assert run.out.startswith(f"submitted 2 {MODERATIONS} records from {path} as batch ")
    batch_id = run.out.split(" as batch ", 1)[1].split()[0]
    done = ended(http, batch_id)
    uploaded = http.get(f"/v1/files/{done['input_file_id']}/content").text.splitlines()
    assert [json.loads(line) for line in uploaded] == [
        {"custom_id": "row-1", "method": "POST", "url": MODERATIONS,
         "body": {"input": "hello", "model": "gpt-4o-mini"}},
        {"custom_id": "two", "method": "POST", "url": MODERATIONS,
         "body": {"input": ["a", "b"], "model": "gpt-4o-mini"}}]
    assert done["metadata"] == {"name": "moderated"} and done["endpoint"] == MODERATIONS


def test_chat_records_by_endpoint_run_to_the_end(relay: Callable[..., Run],
                                                 write: Callable[[str, Any], Path]) -> None:
    bodies = [{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}] * 2
    path = write("chat.jsonl", bodies)
    run = relay("submit", path, "--endpoint", "/v1/chat/completions", "--wait", "--json")
    assert run.code == 0, run.err
    assert run.json()["request_counts"] == {"total": 2, "completed": 2, "failed": 0}


@pytest.mark.parametrize(("argv", "message"), [
    (["--cron", "* * * * *"], "--cron is for Relay jobs"),
    (["--priority", "3"], "--priority is for Relay jobs"),
    (["--webhook", "https://example.com/hook"], "--webhook is for Relay jobs"),
])
def test_relay_job_options_are_usage_errors_with_an_endpoint(
        relay: Callable[..., Run], write: Callable[[str, Any], Path], argv: list[str],
        message: str) -> None:
    path = write("r.jsonl", [{"input": "x", "model": "gpt-4o-mini"}])
    run = relay("submit", path, "--endpoint", RESPONSES, *argv)
    assert (run.code, message in run.err) == (2, True), run.err


def test_a_bad_file_is_refused_with_its_line_before_anything_is_sent(
        relay: Callable[..., Run], write: Callable[[str, Any], Path],
        http: httpx.Client) -> None:
    wrong_url = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
                 "body": {"model": "gpt-4o-mini", "input": "x"}}
    cases = {"wrong.jsonl": ([{"input": "ok", "model": "m"}, wrong_url], ":2: the record's url"),
             "nomodel.jsonl": ([{"input": "x"}], ":1: the body names no model"),
             "prompts.csv": ("a,b\n", "takes a .jsonl file")}
    for name, (content, message) in cases.items():
        run = relay("submit", write(name, content), "--endpoint", RESPONSES)
        assert run.code == 2 and message in run.err, (name, run.err)
    assert http.get("/v1/files").json()["data"] == []
    assert relay("submit", write("x.jsonl", [{"input": "x"}])).code == 2  # no --model


def test_the_record_parser_keeps_each_records_line() -> None:
    text = '\n{"input": "a", "model": "m"}\n\n{"custom_id": "b", "body": {"input": "b"}}\n'
    parsed = parse_records(text, endpoint=RESPONSES, model="fill")
    assert parsed.lines == [2, 4]
    assert [r["body"] for r in parsed.rows] == [{"input": "a", "model": "m"},
                                               {"input": "b", "model": "fill"}]
    with pytest.raises(InputFileError, match="no records"):
        parse_records("\n", endpoint=RESPONSES)
    with pytest.raises(InputFileError, match="custom_id"):
        parse_records('{"custom_id": 7, "input": "x", "model": "m"}', endpoint=RESPONSES)


def on_this_simulator(sample: str, sim: Simulator, write: Callable[[str, Any], Path]) -> Path:
    """A sample file as it is, but for its URLs: this run's simulator's, for 9900 and 9901
    (its HTTP tool executor and workflow callback; its MCP server)."""
    assert sim.mcp_url is not None
    text = (SAMPLES / sample).read_text().replace("127.0.0.1:9900", f"127.0.0.1:{sim.port}")
    return write(sample, text.replace("http://127.0.0.1:9901/mcp", sim.mcp_url))


def test_the_sample_tool_and_workflow_files_submit_as_they_are(
        relay: Callable[..., Run], write: Callable[[str, Any], Path], http: httpx.Client,
        shared_relayd: Relayd, shared_simulator: Simulator, workspace: str) -> None:
    """`relay submit sample_data/tools.jsonl` (or workflows.jsonl), no flags: OpenAI
    records, each naming its model, run as an OpenAI batch (the Relay Batches API does not
    run workflows); `status`, `results`, `ls` and `dead-letter` take its batch_… id."""
    subprocess.run([*RELAYD, "workspaces", "set", workspace, "--workflows", "on", "--config",
                    str(shared_relayd.config)], check=True, capture_output=True)
    flows = relay("submit", on_this_simulator("workflows.jsonl", shared_simulator, write))
    assert flows.code == 0, flows.err
    flows_id = flows.out.split(" as batch ", 1)[1].split()[0]
    tools = relay("submit", on_this_simulator("tools.jsonl", shared_simulator, write),
                  "--wait", "--json")
    assert tools.code == 4, tools.err  # completed, one record rigged to fail (http-down)
    batch = tools.json()
    assert (batch["endpoint"], batch["request_counts"]) == (
        "/v1/chat/completions", {"total": 9, "completed": 8, "failed": 1})
    status = dict(line.split(":", 1) for line in relay("status", batch["id"]).out.splitlines())
    assert status["status"].strip() == "completed with errors"
    results = {r["custom_id"]: r for r in relay("results", batch["id"], "--json").json()}
    assert results["http-down"]["error"].startswith("tool_executor_unreachable")
    assert results["mcp-1"]["openrelay"]["tool_rounds"] == 3  # the MCP server answered
    [dead] = relay("dead-letter", batch["id"], "--json").json()
    assert dead["custom_id"] == "http-down"
    listed = {line.split()[0]: line.split() for line in relay("ls").out.splitlines()[1:]}
    assert listed[batch["id"]][1:9] == ["completed", "with", "errors", "tools.jsonl",
                                        "gpt-4o-mini", "-", "standard", "9/9"]
    validated = wait_until(lambda: (b := http.get(f"/v1/batches/{flows_id}").json())[
        "status"] != "validating" and b)
    assert (validated["endpoint"], validated["request_counts"]["total"]) == (
        "/v1/chat/completions", 5)
    assert validated["errors"] is None and validated["model"] == "gpt-4o-mini"


def test_a_file_of_records_is_told_by_its_every_line(tmp_path: Path) -> None:
    """The one rule (`is_openai_record`): every line has custom_id, method, url and body."""
    record = {"custom_id": "a", "method": "POST", "url": "/v1/embeddings",
              "body": {"model": "embed", "input": "x"}}
    files: dict[str, list[dict[str, Any]]] = {
        "records.jsonl": [record, {**record, "custom_id": "b"}],
        "rows.jsonl": [{"messages": []}, record],  # a Relay row first
        "mixed.jsonl": [record, {"custom_id": "c", "body": {"input": "y"}}],
        "records.csv": [record]}
    for name, lines in files.items():
        (tmp_path / name).write_text("".join(json.dumps(v) + "\n" for v in lines))
    found = openai_records(tmp_path / "records.jsonl")
    assert found is not None and [n for n, _ in found] == [1, 2]
    assert records_endpoint(found, path="records.jsonl") == "/v1/embeddings"
    assert [r["body"]["model"] for r in records_of(found, endpoint="/v1/embeddings").rows] \
        == ["embed", "embed"]
    for other in ("rows.jsonl", "mixed.jsonl", "records.csv"):
        assert openai_records(tmp_path / other) is None, other
    (tmp_path / "empty.jsonl").write_text("\n")
    assert openai_records(tmp_path / "empty.jsonl") is None
    (tmp_path / "bad.jsonl").write_text(json.dumps(record) + "\n{oops\n")
    with pytest.raises(InputFileError, match=r"bad.jsonl:2: not valid JSON"):
        openai_records(tmp_path / "bad.jsonl")
