"""Tool-calling records end to end: real `relayd serve` and `relayd simulate` processes,
the simulator as the model, the HTTP tool executor and the MCP server."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from typing import Any, Final

import httpx
import pytest
from openai import OpenAI

from daemon.domain.tool_config import REDACTED
from daemon.executors.tool_loop import call_id
from tests.e2e.harness import Relayd, Simulator, wait_for_status, wait_until

pytestmark = pytest.mark.e2e

CHAT: Final = "/v1/chat/completions"
SECRET = "Bearer tool-s3cret"
LOOKUP = {"type": "function", "function": {
    "name": "lookup", "description": "Look a thing up.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}


def tool_record(custom_id: str, prompt: str, tool_config: dict[str, Any], *,
                tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-4o-mini",
                            "messages": [{"role": "user", "content": prompt}],
                            "openrelay": {"tool_config": tool_config}}
    if tools is not None:
        body["tools"] = tools
    return {"custom_id": custom_id, "method": "POST", "url": CHAT, "body": body}


def forcing(tool: str, record: dict[str, Any]) -> dict[str, Any]:
    """The record with `tool_choice` naming `tool` (the simulated model then calls it)."""
    choice = {"type": "function", "function": {"name": tool}}
    return {**record, "body": {**record["body"], "tool_choice": choice}}


def http_tools(sim: Simulator, **extra: Any) -> dict[str, Any]:
    return {"url": sim.tools_url, "authorization": SECRET, "context": {"tenant": "acme"},
            **extra}


def submit(client: httpx.Client, records: list[dict[str, Any]]) -> dict[str, Any]:
    reply = client.post("/v1/batches", json={"model": "gpt-4o-mini", "requests": records})
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_a_relay_batch_of_tool_records_over_http(simulator_factory: Callable[..., Simulator],
                                                 relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    client = relayd.client()
    job = submit(client, [
        tool_record("two", "weather in Oslo [sim:tool_rounds=2]", http_tools(sim),
                    tools=[LOOKUP]),
        tool_record("none", "no tools needed", http_tools(sim)),
        {"custom_id": "plain", "messages": [{"role": "user", "content": "Classify: fine"}]},
    ])

    done = wait_for_status(client, job["id"], "completed")

    assert (done["completed"], done["failed"]) == (3, 0)
    results = {r["custom_id"]: r for r in client.get(
        f"/v1/batches/{job['id']}/results").json()["data"]}
    assert results["two"]["openrelay"] == {"tool_rounds": 2, "model_calls": 3}
    assert results["two"]["content"].startswith("Tool results: ")
    assert results["none"]["openrelay"] == {"tool_rounds": 0, "model_calls": 1}
    assert "openrelay" not in results["plain"]
    calls = sim.tool_calls()
    assert len(calls) == 2
    for number, call in enumerate(calls, start=1):
        assert call["headers"]["Authorization"] == SECRET
        assert call["headers"]["Relay-Batch-Id"] == job["id"]
        assert call["headers"]["Relay-Round"] == str(number)
        assert call["headers"]["Relay-Call-Id"] == call_id(job["id"], "two", number)
        assert call["body"]["custom_id"] == "two"
        assert call["body"]["context"] == {"tenant": "acme"}
    assert sim.stats()["requests"] == 3 + 1 + 1

    detail = client.get(f"/v1/batches/{job['id']}/rows/two").json()
    assert detail["tool_rounds"] == 2 and detail["status"] == "completed"
    assert detail["body"]["openrelay"]["tool_config"]["authorization"] == REDACTED
    first = detail["transcript"][0]["messages"]
    assert first[0]["tool_calls"][0]["function"]["name"] == "lookup"
    assert first[1]["role"] == "tool" and first[1]["content"]
    assert SECRET not in json.dumps(detail)
    assert client.get(f"/v1/batches/{job['id']}/rows/nope").status_code == 404
    assert SECRET not in relayd.log.read_text()


def test_a_malformed_tool_config_is_a_400_naming_the_field(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    client = relayd_factory(sim).start().client()
    reply = client.post("/v1/batches", json={"model": "gpt-4o-mini", "requests": [
        tool_record("ok", "hi", http_tools(sim)),
        tool_record("bad", "hi", http_tools(sim, type="grpc"))]})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert (error["param"], error["code"]) == ("requests[1].body.openrelay.tool_config.type",
                                               "invalid_tool_config")
    assert client.get("/v1/batches?dialect=all").json()["data"] == []


def test_a_private_executor_is_refused_under_the_strict_policy(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    client = relayd_factory(sim, allow_private=False).start().client()
    reply = client.post("/v1/batches", json={"model": "gpt-4o-mini", "requests": [
        tool_record("r", "hi", http_tools(sim))]})
    assert reply.status_code == 400
    assert reply.json()["error"]["param"] == "requests[0].body.openrelay.tool_config.url"


def test_an_unreachable_executor_dead_letters_the_record(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    client = relayd_factory(sim).start().client()
    job = submit(client, [
        tool_record("down", "look up [sim:tool_fail=503]", http_tools(sim), tools=[LOOKUP]),
        tool_record("broken", "look up [sim:tool_garbage]", http_tools(sim), tools=[LOOKUP])])

    done = wait_for_status(client, job["id"], "completed")

    assert (done["completed"], done["failed"], done["dead_letter"]) == (0, 2, 1)
    results = {r["custom_id"]: r["error"] for r in client.get(
        f"/v1/batches/{job['id']}/results").json()["data"]}
    assert results["down"].startswith("tool_executor_unreachable: round 1: ")
    assert "after 3 attempts" in results["down"]
    assert results["broken"].startswith("tool_executor_error: ")
    (entry,) = client.get(f"/v1/batches/{job['id']}/dead_letter").json()["data"]
    assert entry["custom_id"] == "down"
    assert entry["body"]["openrelay"]["tool_config"]["authorization"] == REDACTED
    downs = [c for c in sim.tool_calls() if c["body"]["custom_id"] == "down"]
    assert len(downs) == 3 and len({c["headers"]["Relay-Call-Id"] for c in downs}) == 1


def test_openai_sdk_tool_batch_over_http_and_mcp(simulator_factory: Callable[..., Simulator],
                                                 relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--mcp-port", "0")
    assert sim.mcp_url is not None
    relayd = relayd_factory(sim).start()
    client = OpenAI(base_url=relayd.url + "/v1", api_key=relayd.key("acme"))
    mcp = {"url": sim.mcp_url, "type": "mcp", "authorization": SECRET}
    records = [
        tool_record("http", "weather [sim:tool_rounds=1]", http_tools(sim), tools=[LOOKUP]),
        tool_record("mcp", "find Oslo [sim:tool_rounds=2]", mcp),  # tools from tools/list
        tool_record("bad", "x", {"url": sim.tools_url, "max_rounds": "many"}),
        forcing("fail", tool_record("mcp-err", "no such city [sim:tool_rounds=1]", mcp)),
    ]
    upload = client.files.create(file=("tools.jsonl",
                                       "\n".join(map(json.dumps, records)).encode()),
                                 purpose="batch")
    batch = client.batches.create(input_file_id=upload.id, endpoint=CHAT,
                                  completion_window="24h")

    done = wait_until(lambda: (b := client.batches.retrieve(batch.id)).status in (
        "completed", "failed") and b)

    assert done.status == "completed"
    assert (done.request_counts.completed, done.request_counts.failed) == (3, 1)
    output = {line["custom_id"]: line for line in map(
        json.loads, client.files.content(done.output_file_id).text.splitlines())}
    errors = {line["custom_id"]: line for line in map(
        json.loads, client.files.content(done.error_file_id).text.splitlines())}
    assert output["http"]["response"]["body"]["openrelay"]["tool_rounds"] == 1
    assert output["mcp"]["response"]["body"]["openrelay"] == {"tool_rounds": 2,
                                                              "model_calls": 3}
    assert errors["bad"]["error"]["code"] == "invalid_tool_config"
    assert "tool_config" not in json.dumps(list(output.values()))
    erred = output["mcp-err"]["response"]["body"]
    assert erred["openrelay"]["tool_rounds"] == 1
    assert len(erred["openrelay"]["tool_errors"]) == 1  # isError, passed to the model
    mcp_calls = [c for c in sim.mcp_calls() if c["tool"] == "lookup"]
    assert len(mcp_calls) == 2
    assert {c["headers"]["Authorization"] for c in sim.mcp_calls()} == {SECRET}
    assert [c["meta"]["relay_call_id"] for c in mcp_calls] == [
        call_id(batch.id, "mcp", 1), call_id(batch.id, "mcp", 2)]


def test_a_kill_mid_record_resumes_without_repeating_stored_calls(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim, concurrency=1).start()
    client = relayd.client()
    prompt = "three rounds [sim:tool_rounds=3] [sim:tool_sleep=2500 tool_round=2]"
    job = submit(client, [tool_record("slow", prompt, http_tools(sim), tools=[LOOKUP])])
    wait_until(lambda: len(sim.tool_calls()) == 2)  # round 2's executor call is in flight
    assert relayd.proc is not None
    relayd.proc.send_signal(signal.SIGKILL)
    relayd.proc.wait()
    models_before = sim.stats()["requests"]

    relayd.start()
    done = wait_for_status(client, job["id"], "completed", timeout=60)

    assert done["completed"] == 1
    assert models_before == 2
    # planned: 4 model calls and 3 executor calls; the one in flight (round 2's executor
    # call) is made again, with the same call id
    assert sim.stats()["requests"] == 4
    calls = [c["headers"]["Relay-Round"] for c in sim.tool_calls()]
    assert calls == ["1", "2", "2", "3"]
    ids = [c["headers"]["Relay-Call-Id"] for c in sim.tool_calls()]
    assert ids[1] == ids[2] == call_id(job["id"], "slow", 2)
    results = client.get(f"/v1/batches/{job['id']}/results").json()["data"]
    assert results[0]["openrelay"] == {"tool_rounds": 3, "model_calls": 4}



def test_a_cancel_stops_the_loop_between_rounds(simulator_factory: Callable[..., Simulator],
                                                relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    client = relayd_factory(sim).start().client()
    prompt = "many rounds [sim:tool_rounds=5] [sim:tool_sleep=1500]"
    job = submit(client, [tool_record("long", prompt, http_tools(sim), tools=[LOOKUP])])
    wait_until(lambda: sim.tool_calls())  # round 1's executor call is in flight

    answer = client.post(f"/v1/batches/{job['id']}/cancel").json()

    assert answer["status"] == "running"  # cancelling, in the Relay view
    done = wait_for_status(client, job["id"], "canceled")
    assert (done["completed"], done["failed"]) == (0, 1)
    (result,) = client.get(f"/v1/batches/{job['id']}/results").json()["data"]
    assert result["error"] == "canceled (stopped after 1 tool rounds)"
    assert len(sim.tool_calls()) == 1 and sim.stats()["requests"] == 1
    assert done["dead_letter"] == 0
