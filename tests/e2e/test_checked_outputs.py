"""Checked structured outputs end to end: one relayd and one simulator for the module,
the simulator's `[sim:json_*]` directives making its answers wrong on purpose."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from daemon.testing import Simulator
from tests.e2e.harness import Relayd, config_tables, wait_for_status, wait_until

pytestmark = pytest.mark.e2e

SCHEMA = {"type": "object", "required": ["label"], "additionalProperties": False,
          "properties": {"label": {"enum": ["positive", "negative", "neutral"]}}}
FORMAT = {"type": "json_schema", "json_schema": {"name": "label", "schema": SCHEMA}}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Relayd, Simulator]]:
    root: Path = tmp_path_factory.mktemp("checked")
    sim = Simulator.start()
    try:
        daemon = Relayd(home=root).write_config(**config_tables(sim))
        try:
            yield daemon.start(), sim
        finally:
            daemon.stop()
    finally:
        sim.stop()


def row(custom_id: str, prompt: str) -> dict[str, Any]:
    return {"custom_id": custom_id, "messages": [{"role": "user", "content": prompt}]}


def submit(client: httpx.Client, requests: list[dict[str, Any]], **job: Any) -> str:
    reply = client.post("/v1/batches", json={"model": "gpt-4o-mini", "requests": requests,
                                             "response_format": FORMAT, **job})
    assert reply.status_code == 200, reply.text
    return str(reply.json()["id"])


def results(client: httpx.Client, job_id: str) -> dict[str, dict[str, Any]]:
    data = client.get(f"/v1/batches/{job_id}/results").json()["data"]
    return {r["custom_id"]: r for r in data}


def test_valid_at_once_repaired_on_the_second_call_and_never_valid(
        pair: tuple[Relayd, Simulator]) -> None:
    relayd, sim = pair
    client = relayd.client("checks")
    before = sim.stats()["requests"]
    job = submit(client, [
        row("once", "Classify: a fine product"),
        row("second", "Classify: a fine product [sim:json_wrong json_valid_on=2]"),
        row("never", "Classify: broken [sim:json_bad]"),
    ], validation={"max_repairs": 2})

    done = wait_for_status(client, job, "completed")

    assert (done["completed"], done["failed"], done["dead_letter"]) == (2, 1, 0)
    assert done["outputs"] == {"valid": 1, "repaired": 1, "invalid": 1}
    assert sim.stats()["requests"] - before == 1 + 2 + 3  # every repair is a model call
    got = results(client, job)
    assert json.loads(got["once"]["content"]) == {"label": "neutral"}
    assert got["once"]["openrelay"] == {"repairs": 0, "valid": True, "model_calls": 1}
    assert json.loads(got["second"]["content"]) == {"label": "neutral"}
    assert got["second"]["openrelay"] == {
        "repairs": 1, "valid": True, "model_calls": 2,
        "repair_history": [{"call": 1, "errors": [
            "$: type: ['not', 'an', 'object'] is not of type 'object'"]}]}
    never = got["never"]
    assert never["error"].startswith("invalid_output: the answer did not pass its JSON "
                                     "Schema check (1 error): $: json: the answer is not "
                                     "valid JSON")
    assert never["openrelay"]["repairs"] == 2 and never["openrelay"]["valid"] is False
    assert never["openrelay"]["last_answer"].startswith("Sure! Here is the JSON")
    assert client.get(f"/v1/batches/{job}/dead_letter").json()["data"] == []
    # what the model was told, in the documented wording
    detail = client.get(f"/v1/batches/{job}/rows/second").json()
    assert detail["transcript"][0]["messages"][1]["content"].startswith(
        "Your previous answer did not pass validation against the required JSON Schema "
        "(1 error):\n- $: type: ")
    # billed for every call: usage counts the repair calls' tokens too
    assert done["usage"]["output_tokens"] >= 6
    stats = client.get("/v1/stats").json()
    assert stats["outputs"] == {"valid": 1, "repaired": 1, "invalid": 1}
    metrics = httpx.get(relayd.url + "/metrics").text
    assert 'relay_output_validation_total{outcome="repaired"} 1.0' in metrics


def test_an_openai_batch_keeps_the_invalid_answer_in_its_error_file(
        pair: tuple[Relayd, Simulator]) -> None:
    relayd, _ = pair
    client = relayd.client("files")
    body: dict[str, Any] = {
        "model": "gpt-4o-mini", "response_format": FORMAT,
        "messages": [{"role": "user", "content": "Classify: x [sim:json_wrong]"}]}
    record: dict[str, Any] = {"custom_id": "bad", "method": "POST",
                              "url": "/v1/chat/completions", "body": body}
    schema_less = {**record, "custom_id": "schema", "body": {
        **body, "response_format": {"type": "json_schema", "json_schema": {
            "name": "x", "schema": {"type": 12}}}}}
    upload = client.post("/v1/files", data={"purpose": "batch"}, files={"file": (
        "in.jsonl", (json.dumps(record) + "\n" + json.dumps(schema_less) + "\n").encode())})
    batch = client.post("/v1/batches", json={"input_file_id": upload.json()["id"],
                                             "endpoint": "/v1/chat/completions",
                                             "completion_window": "24h"}).json()
    done = wait_for_status(client, batch["id"], "completed")
    lines = [json.loads(line) for line in client.get(
        f"/v1/files/{done['error_file_id']}/content").text.splitlines()]
    by_id = {line["custom_id"]: line for line in lines}
    assert by_id["bad"]["error"]["code"] == "invalid_output"
    kept = by_id["bad"]["response"]["body"]
    assert json.loads(kept["choices"][0]["message"]["content"]) == ["not", "an", "object"]
    assert kept["openrelay"]["valid"] is False
    assert by_id["schema"]["error"]["code"] == "invalid_schema"


def test_an_invalid_schema_is_refused_at_submit_in_each_dialect(
        pair: tuple[Relayd, Simulator]) -> None:
    relayd, _ = pair
    client = relayd.client("refusals")
    reply = client.post("/v1/batches", json={
        "model": "gpt-4o-mini", "requests": [row("a", "hi")],
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "x", "schema": {"type": "objekt"}}}})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert (error["code"], error["param"]) == ("invalid_schema",
                                               "response_format.json_schema.schema")
    own = client.post("/v1/batches", json={"model": "gpt-4o-mini", "requests": [
        {**row("a", "hi"), "response_format": {"type": "json_schema", "json_schema": {
            "name": "x", "schema": {"minimum": "0"}}}}]})
    assert own.json()["error"]["param"] == "requests[0].response_format.json_schema.schema"
    repairs = client.post("/v1/batches", json={"model": "gpt-4o-mini", "requests": [
        row("a", "hi")], "response_format": FORMAT, "validation": {"max_repairs": 9}})
    assert repairs.json()["error"]["param"] == "validation.max_repairs"
    anthropic = httpx.post(relayd.url + "/v1/messages/batches", headers={
        "x-api-key": relayd.key("refusals"), "anthropic-version": "2023-06-01"}, json={
        "requests": [{"custom_id": "a", "params": {
            "model": "gpt-4o-mini", "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}],
            "openrelay": {"validation": {"schema": {"type": "objekt"}}}}}]})
    assert anthropic.status_code == 400
    message = anthropic.json()["error"]["message"]
    assert message.startswith("requests[0].params.openrelay.validation.schema: is not a valid")
    assert "(invalid_schema)" in message
    assert client.get("/v1/batches?dialect=all").json()["data"] == []


@pytest.mark.timeout(90)
def test_a_kill_between_a_failed_check_and_its_repair_asks_nothing_again(
        pair: tuple[Relayd, Simulator]) -> None:
    relayd, sim = pair
    client = relayd.client("kill")
    before = sim.stats()["requests"]
    job = submit(client, [row("slow", "Classify: fine [sim:json_wrong json_valid_on=2 "
                                      "json_sleep=4000]")], validation={"max_repairs": 1})
    wait_until(lambda: sim.stats()["requests"] - before == 2)  # the repair is in flight
    relayd.kill()

    relayd.start()
    done = wait_for_status(client, job, "completed", timeout=60)

    assert done["completed"] == 1 and done["outputs"]["repaired"] == 1
    # call 1 (the stored invalid answer) once; the repair call, cut off, made again
    assert sim.stats()["requests"] - before == 3
    got = results(client, job)["slow"]
    assert got["openrelay"]["repairs"] == 1 and got["openrelay"]["valid"] is True


def test_an_anthropic_request_is_checked_against_its_openrelay_schema(
        pair: tuple[Relayd, Simulator]) -> None:
    """No response format reaches the model (the schema is Relay's alone): the simulator
    answers text, which fails, is repaired once, and the request errors invalid_output."""
    relayd, sim = pair
    headers = {"x-api-key": relayd.key("anthropic"), "anthropic-version": "2023-06-01"}
    before = sim.stats()["requests"]
    created = httpx.post(relayd.url + "/v1/messages/batches", headers=headers, json={
        "requests": [{"custom_id": "a", "params": {
            "model": "gpt-4o-mini", "max_tokens": 50,
            "messages": [{"role": "user", "content": "Classify: fine"}],
            "openrelay": {"validation": {"schema": SCHEMA, "max_repairs": 1}}}}]})
    assert created.status_code == 200, created.text
    batch = created.json()["id"]
    wait_until(lambda: httpx.get(f"{relayd.url}/v1/messages/batches/{batch}",
                                 headers=headers).json()["processing_status"] == "ended")
    assert sim.stats()["requests"] - before == 2
    (line,) = [json.loads(text) for text in httpx.get(
        f"{relayd.url}/v1/messages/batches/{batch}/results",
        headers=headers).text.splitlines()]
    assert line["result"]["type"] == "errored"
    assert "invalid_output" in line["result"]["error"]["error"]["message"]
