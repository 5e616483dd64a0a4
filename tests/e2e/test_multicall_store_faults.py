"""Storage faults under multi-call records (tool-calling and workflow records), end to
end: a real full disk (a small tmpfs under relayd's data directory, filled mid-run and
freed again) and a real PostgreSQL whose server drops relayd's connections
(`pg_terminate_backend`) mid-run. A row that meets the fault on its round or workflow
write waits it out and goes on from what is stored: every record completes, none ends
`internal_error`, no stored call is made again, and relayd never restarts."""

from __future__ import annotations

import json
import os
import secrets
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
import pytest
from openai import OpenAI

from daemon.testing import with_params
from tests.e2e.harness import Relayd, Simulator, config_tables, wait_until
from tests.e2e.test_full_disk import fill, health, small_filesystem
from tests.e2e.test_tools import LOOKUP, http_tools, tool_record
from tests.e2e.test_workflows import CHAT, enable, lines
from tests.e2e.test_workflows import record as workflow_record
from tests.store import postgres

pytestmark = pytest.mark.e2e

ROUNDS = 2  # each tool record: 3 model calls and 2 executor calls
WAITING = "waiting for the store"  # relayd logs it when a multi-call write meets a fault


def records(sim: Simulator, *, tools: int, workflows: int) -> list[dict[str, Any]]:
    text = f"weather in Oslo [sim:tool_rounds={ROUNDS}]"
    # Workflow records first: they hold no request slot, so all of them start at once
    # and run beside the tool records.
    return ([workflow_record(f"flow-{i}", sim) for i in range(workflows)]
            + [tool_record(f"tool-{i}", f"{text} #{i}", http_tools(sim), tools=[LOOKUP])
               for i in range(tools)])


def start(relayd: Relayd, batch: list[dict[str, Any]]) -> tuple[OpenAI, str]:
    client = OpenAI(base_url=relayd.url + "/v1", api_key=relayd.key("acme"))
    upload = client.files.create(file=("mixed.jsonl",
                                       "\n".join(map(json.dumps, batch)).encode()),
                                 purpose="batch")
    created = client.batches.create(input_file_id=upload.id, endpoint=CHAT,
                                    completion_window="24h")
    return client, created.id


def finished(client: OpenAI, batch_id: str, *, timeout: float = 90) -> Any:
    return wait_until(lambda: (b := client.batches.retrieve(batch_id)).status in (
        "completed", "failed", "cancelled", "expired") and b, timeout=timeout)


def check_every_record_completed_once(client: OpenAI, done: Any, sim: Simulator, *,
                                      tools: int, workflows: int) -> None:
    errors = lines(client, done.error_file_id)
    assert not errors, sorted({e["error"]["message"] for e in errors.values()})[:5]
    assert done.status == "completed"
    assert (done.request_counts.completed, done.request_counts.failed) == (tools + workflows,
                                                                         0)
    output = lines(client, done.output_file_id)
    assert all(output[f"tool-{i}"]["response"]["body"]["openrelay"]["tool_rounds"] == ROUNDS
               for i in range(tools))
    assert all(output[f"flow-{i}"]["response"]["body"]["openrelay"]["requests"] == 5
               for i in range(workflows))
    # Nothing stored was asked again: each round's executor call went out once...
    calls = Counter(c["headers"]["Relay-Call-Id"] for c in sim.tool_calls())
    assert len(calls) == tools * ROUNDS and max(calls.values()) == 1
    # ...and each model call once: a tool record's 3, a workflow record's 4 map requests
    # and its reduce request.
    prompts = Counter("tool" if r["prompt"].startswith("weather") else "flow"
                      for r in sim.requests())
    assert prompts == {"tool": tools * (ROUNDS + 1), "flow": workflows * 5}


def fill_mid_run(relayd: Relayd, sim: Simulator) -> Path:
    """Fill the data directory once both kinds of record are under way (on a loaded
    machine the workflows could be done by the 10th tool call), and return the filler
    once both have met the full disk on a write and wait."""
    wait_until(lambda: sim.workflow_events() and len(sim.tool_calls()) >= 2)
    filler = fill(relayd.data)
    wait_until(lambda: all(f"{what}: {WAITING}" in relayd.log.read_text()
                           for what in ("tool rounds", "workflow states")))
    return filler


def test_a_full_disk_mid_record_is_waited_out_by_tool_and_workflow_records(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "40")
    relayd: Relayd = relayd_factory(sim, concurrency=4)
    tools, workflows = 60, 30
    with small_filesystem(relayd.data):
        try:
            relayd.start()
            enable(relayd)
            client, batch_id = start(relayd, records(sim, tools=tools, workflows=workflows))
            filler = fill_mid_run(relayd, sim)
            with relayd.client() as api:
                wait_until(lambda: health(api)[0] == 503)
                assert client.batches.retrieve(batch_id).status == "in_progress"

                os.unlink(filler)
                wait_until(lambda: health(api) == (200, {"status": "ok"}))
                done = finished(client, batch_id)
                check_every_record_completed_once(client, done, sim, tools=tools,
                                                  workflows=workflows)
                metrics = api.get("/metrics").text
                assert "relay_internal_errors_total 0.0" in metrics
            assert relayd.proc is not None and relayd.proc.poll() is None  # never restarted
            assert "unexpected error" not in relayd.log.read_text()
        finally:
            relayd.stop()


def test_a_stop_while_records_wait_for_the_store_resumes_them_from_what_is_stored(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "40")
    relayd: Relayd = relayd_factory(sim, concurrency=4)
    tools, workflows = 40, 20
    with small_filesystem(relayd.data):
        try:
            relayd.start()
            enable(relayd)
            client, batch_id = start(relayd, records(sim, tools=tools, workflows=workflows))
            filler = fill_mid_run(relayd, sim)

            assert relayd.terminate() < 15  # SIGTERM while rows wait: they stay pending
            os.unlink(filler)
            relayd.start()
            done = finished(client, batch_id)

            errors = lines(client, done.error_file_id)
            assert not errors, sorted({e["error"]["message"] for e in errors.values()})[:5]
            assert done.request_counts.completed == tools + workflows
            output = lines(client, done.output_file_id)
            assert all(output[f"tool-{i}"]["response"]["body"]["openrelay"]["tool_rounds"]
                       == ROUNDS for i in range(tools))
            # A round stored before the stop is not asked again; one that was waiting to
            # be stored asks its executor again, with the same call id (at most once more).
            calls = Counter(c["headers"]["Relay-Call-Id"] for c in sim.tool_calls())
            assert len(calls) == tools * ROUNDS and max(calls.values()) <= 2
        finally:
            relayd.stop()


def terminate_backends(application: str) -> int:
    """`pg_terminate_backend` on every connection relayd holds (and on no other test's:
    they are told apart by their `application_name`); how many there were."""
    with psycopg.connect(postgres.SERVER_URL, autocommit=True) as admin:
        killed = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               "WHERE application_name = %s", (application,)).fetchall()
    return len(killed)


def test_connections_the_server_drops_mid_record_are_waited_out(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "40")
    relayd: Relayd = relayd_factory(sim)
    tools, workflows = 48, 24  # the run had 90 and 45: fewer, for the suite's time
    application = f"relay-test-{secrets.token_hex(4)}"

    def seen_calls(n: int) -> bool:
        return len(sim.tool_calls()) >= n
    with postgres.fresh_schema() as url:
        relayd.write_config(**config_tables(sim, concurrency=4),
                            database={"url": with_params(url, application_name=application)})
        try:
            relayd.start()
            enable(relayd)
            client, batch_id = start(relayd, records(sim, tools=tools, workflows=workflows))
            for calls in (8, 30):  # two sweeps, each with rounds and workflows under way
                wait_until(partial(seen_calls, calls))
                assert terminate_backends(application) > 0
            done = finished(client, batch_id)
            check_every_record_completed_once(client, done, sim, tools=tools,
                                              workflows=workflows)
            with relayd.client() as api:
                assert "relay_internal_errors_total 0.0" in api.get("/metrics").text
            assert relayd.proc is not None and relayd.proc.poll() is None  # never restarted
            assert "unexpected error" not in relayd.log.read_text()
        finally:
            relayd.stop()
