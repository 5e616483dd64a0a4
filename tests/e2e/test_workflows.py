"""Workflow records end to end: real `relayd serve` and `relayd simulate` processes, the
simulator as the model and as the callback (a map-reduce summariser)."""

from __future__ import annotations

import hashlib
import hmac
import json
import signal
import subprocess
from collections.abc import Callable
from typing import Any, Final

import pytest
from openai import OpenAI

from daemon.executors.workflow import event_id
from tests.e2e.harness import RELAYD, Relayd, Simulator, wait_until

pytestmark = pytest.mark.e2e

CHAT: Final = "/v1/chat/completions"
SECRET = "Bearer callback-s3cret"
TEXT = "Relay runs batches. It retries. It falls back. It keeps a dead-letter list."


def record(custom_id: str, sim: Simulator, text: str = TEXT, **workflow: Any) -> dict:
    config = {"url": sim.workflow_url, "authorization": SECRET, "context": {"team": "docs"},
              **workflow}
    return {"custom_id": custom_id, "method": "POST", "url": CHAT, "body": {
        "model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}],
        "openrelay": {"workflow": config}}}


def enable(relayd: Relayd, workspace: str = "acme", switch: str = "on") -> None:
    subprocess.run([*RELAYD, "workspaces", "set", workspace, "--workflows", switch,
                    "--config", str(relayd.config)], check=True, capture_output=True)


def start_batch(relayd: Relayd, records: list[dict]) -> tuple[OpenAI, Any]:
    """An OpenAI-dialect batch of `records` (an uploaded file), created with the SDK."""
    client = OpenAI(base_url=relayd.url + "/v1", api_key=relayd.key("acme"))
    upload = client.files.create(file=("flows.jsonl",
                                       "\n".join(map(json.dumps, records)).encode()),
                                 purpose="batch")
    return client, client.batches.create(input_file_id=upload.id, endpoint=CHAT,
                                         completion_window="24h")


def run_batch(relayd: Relayd, records: list[dict], *, timeout: float = 30) -> Any:
    client, batch = start_batch(relayd, records)
    done = wait_until(lambda: (b := client.batches.retrieve(batch.id)).status in (
        "completed", "failed", "cancelled", "expired") and b, timeout=timeout)
    return client, done


def lines(client: OpenAI, file_id: str | None) -> dict[str, dict]:
    if file_id is None:
        return {}
    text = client.files.content(file_id).text
    return {line["custom_id"]: line for line in map(json.loads, text.splitlines())}


def test_a_map_reduce_workflow_with_the_openai_sdk(simulator_factory: Callable[..., Simulator],
                                                   relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    enable(relayd)

    client, done = run_batch(relayd, [record("flow", sim), record(
        "plain-next-to-it", sim) | {"body": {"model": "gpt-4o-mini", "messages": [
            {"role": "user", "content": "Classify: fine"}]}}])

    assert done.status == "completed"
    assert (done.request_counts.completed, done.request_counts.failed) == (2, 0)
    output = lines(client, done.output_file_id)
    body = output["flow"]["response"]["body"]
    assert body["output"]["chunks"] == 4 and body["output"]["summary"]
    assert body["openrelay"]["steps"] == 2 and body["openrelay"]["requests"] == 5
    assert body["openrelay"]["input_tokens"] > 0
    events = sim.workflow_events()
    assert [e["body"]["type"] for e in events] == [
        "workflow.started", "workflow.results", "workflow.results"]
    assert [e["body"]["step"] for e in events] == [0, 1, 2]
    assert [len(e["body"].get("results", [])) for e in events] == [0, 4, 1]
    first = events[0]
    assert first["headers"]["Authorization"] == SECRET
    assert first["body"]["context"] == {"team": "docs"}
    assert "openrelay" not in first["body"]["input"]
    assert first["headers"]["Relay-Event-Id"] == event_id(done.id, "flow", 0)
    secret = subprocess.run([*RELAYD, "webhooks", "secret", "--workspace", "acme", "--config",
                             str(relayd.config)], check=True, capture_output=True,
                            text=True).stdout.strip()
    stamp, mac = (p.split("=", 1)[1] for p in first["headers"]["Relay-Signature"].split(","))
    expected = hmac.new(secret.encode(), f"{stamp}.".encode() + first["raw"].encode(),
                        hashlib.sha256).hexdigest()
    assert hmac.compare_digest(mac, expected)
    assert done.usage.input_tokens == body["openrelay"]["input_tokens"] + output[
        "plain-next-to-it"]["response"]["body"]["usage"]["prompt_tokens"]
    assert SECRET not in relayd.log.read_text()
    detail = relayd.client().get(f"/v1/batches/{done.id}/rows/flow").json()
    assert [h["action"] for h in detail["workflow"]["history"]] == ["continue", "continue"]
    assert detail["workflow"]["totals"]["requests"] == 5
    assert detail["body"]["openrelay"]["workflow"]["authorization"] == "***"
    counters = relayd.client().get(f"/v1/batches/{done.id}/workflows").json()
    assert (counters["started"], counters["ended"], counters["running"]) == (1, 1, 0)
    assert (counters["steps"], counters["requests"]) == (2, 5)


def test_workflows_are_off_until_an_operator_enables_them(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()

    client, done = run_batch(relayd, [record("flow", sim), record(
        "plain", sim) | {"body": {"model": "gpt-4o-mini", "messages": [
            {"role": "user", "content": "Classify: fine"}]}}])

    assert (done.status, done.request_counts.completed, done.request_counts.failed) == (
        "completed", 1, 1)
    assert lines(client, done.error_file_id)["flow"]["error"]["code"] == "workflow_not_enabled"
    assert sim.workflow_events() == []
    listed = subprocess.run([*RELAYD, "workspaces", "list", "--config", str(relayd.config)],
                            check=True, capture_output=True, text=True).stdout.splitlines()
    assert listed[0].split() == ["WORKSPACE", "BATCH", "ACCESS", "EXPEDITED", "WORKFLOWS",
                                 "BUDGET", "SPENT"]
    assert listed[1].split() == ["acme", "on", "on", "off", "-", "-"]
    enable(relayd)
    assert "workflows on" in subprocess.run(
        [*RELAYD, "workspaces", "set", "acme", "--config", str(relayd.config)],
        check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize(("text", "config", "code", "dead"), [
    (f"{TEXT} [sim:wf_fail]", {}, "workflow_failed", False),
    (f"{TEXT} [sim:wf_garbage]", {}, "workflow_invalid_answer", False),
    (f"{TEXT} [sim:wf_http=400]", {}, "workflow_callback_rejected", False),
    (f"{TEXT} [sim:wf_http=503]", {}, "workflow_callback_unreachable", True),
    (f"{TEXT} [sim:wf_steps=3]", {"max_steps": 2}, "workflow_step_limit", False),
    (f"{TEXT} [sim:wf_fanout=8]", {"max_requests": 5}, "workflow_request_limit", False),
    (TEXT, {"max_tokens": 5}, "workflow_token_limit", False),
])
def test_each_way_a_workflow_fails(simulator_factory: Callable[..., Simulator],
                                   relayd_factory: Callable[..., Relayd], text: str,
                                   config: dict[str, int], code: str, dead: bool) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    enable(relayd)

    client, done = run_batch(relayd, [record("flow", sim, text, **config)])

    error = lines(client, done.error_file_id)["flow"]["error"]
    assert error["code"] == code, error
    assert client.batches.retrieve(done.id).request_counts.failed == 1
    dead_letter = relayd.client().get(f"/v1/batches/{done.id}/dead_letter").json()["data"]
    assert bool(dead_letter) is dead


def test_an_event_is_delivered_four_times_with_one_id(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    enable(relayd)

    _, done = run_batch(relayd, [record("flow", sim, f"{TEXT} [sim:wf_http=503 times=3]")])

    assert done.request_counts.completed == 1
    events = sim.workflow_events()
    started = [e for e in events if e["body"]["type"] == "workflow.started"]
    assert [e["status"] for e in started] == [503, 503, 503, 200]
    assert len({e["headers"]["Relay-Event-Id"] for e in started}) == 1


def test_a_wait_holds_no_slot_and_ends_with_a_tick(simulator_factory: Callable[..., Simulator],
                                                   relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim, concurrency=1).start()
    enable(relayd)
    plain = [{"custom_id": f"p{i}", "method": "POST", "url": CHAT, "body": {
        "model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"Classify: {i}"}]}}
        for i in range(3)]

    _, done = run_batch(relayd, [record("flow", sim, f"{TEXT} [sim:wf_wait=1000]"), *plain])

    assert (done.request_counts.completed, done.request_counts.failed) == (4, 0)
    events = sim.workflow_events()
    assert [e["body"]["type"] for e in events] == [
        "workflow.started", "workflow.tick", "workflow.results", "workflow.results"]
    assert (events[0]["answer"]["action"], events[1]["body"]["step"]) == ("wait", 1)
    plain_done = max(r["at"] for r in sim.requests() if r["prompt"].startswith("Classify"))
    assert plain_done < events[1]["at"]  # the plain rows ran while the workflow waited


def test_a_kill_mid_step_resumes_and_runs_only_what_was_in_flight(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    enable(relayd)
    text = f"{TEXT} [sim:wf_stall=2]"  # two of the four map requests take 3 s
    client, batch = start_batch(relayd, [record("flow", sim, text)])
    rest = relayd.client()
    wait_until(lambda: rest.get(f"/v1/batches/{batch.id}/rows/flow").json().get(
        "workflow", {}).get("finished") == 2)  # the two quick ones are stored
    assert relayd.proc is not None
    relayd.proc.send_signal(signal.SIGKILL)
    relayd.proc.wait()
    events_before = len(sim.workflow_events())

    relayd.start()
    done = wait_until(lambda: (b := client.batches.retrieve(batch.id)).status == "completed"
                      and b, timeout=30)

    summaries = [r for r in sim.requests() if r["prompt"].startswith("Summarise")]
    assert len(summaries) == 4 + 2  # the two that were in flight ran again; no others
    assert events_before == 1
    output = lines(client, done.output_file_id)["flow"]["response"]["body"]
    assert output["openrelay"]["requests"] == 5


def test_a_kill_at_a_step_boundary_resends_the_event_with_its_id(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    enable(relayd)
    text = f"{TEXT} [sim:wf_sleep=2000]"  # the callback takes 2 s to answer each event
    client, batch = start_batch(relayd, [record("flow", sim, text)])
    wait_until(lambda: sim.workflow_events())  # the started event is out
    assert relayd.proc is not None
    relayd.proc.send_signal(signal.SIGKILL)
    relayd.proc.wait()

    relayd.start()
    wait_until(lambda: client.batches.retrieve(batch.id).status == "completed", timeout=40)

    started = [e for e in sim.workflow_events() if e["body"]["type"] == "workflow.started"]
    assert len(started) == 2
    assert started[0]["headers"]["Relay-Event-Id"] == started[1]["headers"]["Relay-Event-Id"]
    assert len([r for r in sim.requests() if r["prompt"].startswith("Summarise")]) == 4


def test_cancel_stops_a_workflow_at_once(simulator_factory: Callable[..., Simulator],
                                         relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    enable(relayd)
    text = f"{TEXT} [sim:wf_stall=4]"
    client, batch = start_batch(relayd, [record("flow", sim, text)])
    wait_until(lambda: len([r for r in sim.requests() if "Summarise" in r["prompt"]]) == 4)

    client.batches.cancel(batch.id)
    done = wait_until(lambda: (b := client.batches.retrieve(batch.id)).status == "cancelled"
                      and b, timeout=10)

    error = lines(client, done.error_file_id)["flow"]["error"]
    assert error["code"] == "batch_cancelled"
    assert done.usage is None or done.usage.input_tokens == 0  # nothing finished: unbilled
    assert len(sim.workflow_events()) == 1


def test_the_relay_dialect_refuses_a_workflow_naming_the_field(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    reply = relayd_factory(sim).start().client().post("/v1/batches", json={
        "model": "gpt-4o-mini", "requests": [record("flow", sim)]})
    assert reply.status_code == 400
    assert reply.json()["error"]["param"] == "requests[0].body.openrelay.workflow"


def test_the_token_budget_cancels_running_requests_unbilled(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    enable(relayd)

    client, done = run_batch(relayd, [record("flow", sim, f"{TEXT} [sim:wf_stall=2]",
                                             max_tokens=5)])

    assert lines(client, done.error_file_id)["flow"]["error"]["code"] == "workflow_token_limit"
    detail = relayd.client().get(f"/v1/batches/{done.id}/rows/flow").json()["workflow"]
    assert detail["requests"] == 4
    assert 1 <= detail["finished"] <= 2  # one quick one passes the budget; the stalled two
    # (and the other quick one, if it was still running then) are cancelled
    assert done.usage.input_tokens == detail["totals"]["input_tokens"] > 0
    assert len([r for r in sim.requests() if r["prompt"].startswith("Summarise")]) == 4


def test_a_waiting_workflow_ends_when_the_batch_expires(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim, gateway={"completion_window_s": 2}).start()
    enable(relayd)

    client, done = run_batch(relayd, [record("flow", sim, f"{TEXT} [sim:wf_wait=600000]")])

    assert done.status == "expired"
    assert lines(client, done.error_file_id)["flow"]["error"]["code"] == "batch_expired"
