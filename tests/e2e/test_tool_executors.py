"""Tool executors that misbehave, end to end: a real `relayd serve`, the simulator as the
model (and as a well-behaved MCP server and HTTP executor), and a hostile MCP server
that answers `initialize` with an endless stream of keep-alive comments. Every MCP
operation is bounded by the record's `timeout_ms`, an evicted session is waited for by
nobody, a cancel ends the job within `timeout_ms` + 5 s, the per-host limit holds per
`tools/call`, and arguments that are not JSON never reach a tool."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.harness import Relayd, Simulator, config_tables, wait_for_status, wait_until
from tests.e2e.hostile_mcp import API_KEY, HostileMcp
from tests.e2e.test_tools import LOOKUP, http_tools, submit, tool_record

pytestmark = pytest.mark.e2e

TIMEOUT_MS = 1000
MARGIN_S = 10.0  # process start, job pickup and a loaded machine; the bug was minutes


@pytest.fixture
def hostile() -> Iterator[HostileMcp]:
    server = HostileMcp().start()
    yield server
    server.stop()


def with_tools(relayd: Relayd, sim: Simulator, tools: dict[str, int],
               **options: Any) -> Relayd:
    """`relayd` configured with `config_tables(sim, **options)` and a `[tools]` table."""
    return relayd.write_config(**config_tables(sim, **options), tools=tools)


def mcp(url: str, timeout_ms: int = TIMEOUT_MS) -> dict[str, Any]:
    return {"url": url, "type": "mcp", "timeout_ms": timeout_ms}


def results(client: httpx.Client, job_id: str) -> dict[str, dict[str, Any]]:
    data = client.get(f"/v1/batches/{job_id}/results").json()["data"]
    return {r["custom_id"]: r for r in data}


def metric(relayd_url: str, line_start: str) -> float:
    text = httpx.get(relayd_url + "/metrics", timeout=10).text
    found = [line for line in text.splitlines() if line.startswith(line_start)]
    return float(found[0].rsplit(" ", 1)[1]) if found else 0.0


def test_a_keepalive_stream_fails_its_record_in_time_and_evicting_it_holds_up_no_one(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd],
        hostile: HostileMcp) -> None:
    sim: Simulator = simulator_factory("--mcp-port", "0")
    assert sim.mcp_url is not None
    relayd = with_tools(relayd_factory(sim), sim, {"mcp_sessions_per_job": 1},
                        concurrency=2, attempts=1).start()
    client = relayd.client()
    started = time.monotonic()
    job = submit(client, [  # the stuck one first: the healthy one's session evicts it
        tool_record("stuck", "find Oslo", mcp(hostile.url)),
        tool_record("healthy", "find Oslo [sim:tool_rounds=2]", mcp(sim.mcp_url))])

    done = wait_for_status(client, job["id"], "completed", timeout=TIMEOUT_MS / 1000 + MARGIN_S)

    assert time.monotonic() - started < TIMEOUT_MS / 1000 + MARGIN_S
    assert (done["completed"], done["failed"]) == (1, 1)
    rows = results(client, job["id"])
    assert rows["healthy"]["openrelay"] == {"tool_rounds": 2, "model_calls": 3}
    assert "tool_executor_unreachable: tools/list: could not open an MCP session: no answer " \
           "within 1000 ms" in rows["stuck"]["error"]
    assert hostile.received("initialize") == 1
    wait_until(lambda: hostile.streams_dropped == 1)  # the endless stream is no longer read
    assert metric(relayd.url, 'relay_executor_calls_total{outcome="failed",type="mcp"}') == 1
    log = relayd.log.read_text()
    assert API_KEY not in log and "api_key" not in log


def test_a_cancel_ends_a_job_stuck_on_a_keepalive_stream_within_timeout_plus_5_s(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd],
        hostile: HostileMcp) -> None:
    sim = simulator_factory()
    timeout_ms = 2000
    # retries enough that retrying after the cancel would overrun the bound
    relayd = relayd_factory(sim, attempts=5).start()
    client = relayd.client()
    job = submit(client, [tool_record("stuck", "find Oslo", mcp(hostile.url, timeout_ms))])
    wait_until(lambda: hostile.received("initialize"))

    cancelled_at = time.monotonic()
    client.post(f"/v1/batches/{job['id']}/cancel").raise_for_status()
    done = wait_for_status(client, job["id"], "canceled", timeout=timeout_ms / 1000 + 5)

    assert time.monotonic() - cancelled_at <= timeout_ms / 1000 + 5
    # Cut short by the cancel, it reads as a row that never ran, not a dead letter.
    assert (done["canceled"], done["dead_letter"]) == (1, 0)


def test_no_tools_call_starts_after_a_cancel_is_answered(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    """A round's calls each take a host slot, so 24 calls at a limit of 4 go out in
    waves: a cancel answered during the first wave starts none of the later ones."""
    sim = simulator_factory("--mcp-port", "0")
    assert sim.mcp_url is not None
    relayd = with_tools(relayd_factory(sim), sim, {"max_concurrency_per_host": 4}).start()
    client = relayd.client()
    prompt = "find Oslo [sim:tool_calls=24] [sim:tool_sleep=500]"
    job = submit(client, [tool_record("wide", prompt, mcp(sim.mcp_url, 10_000))])
    wait_until(lambda: sim.stats()["mcp_in_flight"] >= 1)

    answer = client.post(f"/v1/batches/{job['id']}/cancel")
    answer.raise_for_status()
    started = len([c for c in sim.mcp_calls() if c["tool"] == "lookup"])
    done = wait_for_status(client, job["id"], "canceled")

    assert started <= 4
    assert len([c for c in sim.mcp_calls() if c["tool"] == "lookup"]) == started
    row = client.get(f"/v1/batches/{job['id']}/rows/wide").json()
    assert (row["error_code"], done["dead_letter"]) == ("canceled", 0)  # not a dead letter


def test_the_per_host_limit_holds_for_each_tools_call(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--mcp-port", "0")
    assert sim.mcp_url is not None
    relayd = with_tools(relayd_factory(sim), sim, {"max_concurrency_per_host": 4}).start()
    client = relayd.client()
    prompt = "find Oslo [sim:tool_calls=24] [sim:tool_sleep=100]"  # one turn of 24 calls
    job = submit(client, [tool_record("wide", prompt, mcp(sim.mcp_url, 10_000))])

    wait_for_status(client, job["id"], "completed")

    assert len([c for c in sim.mcp_calls() if c["tool"] == "lookup"]) == 24
    assert 2 <= sim.stats()["mcp_peak_in_flight"] <= 4


def test_arguments_that_are_not_json_are_a_tool_error_never_sent(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--mcp-port", "0")
    assert sim.mcp_url is not None
    client = relayd_factory(sim).start().client()
    prompt = "find Oslo [sim:tool_bad_args]"
    job = submit(client, [tool_record("http", prompt, http_tools(sim), tools=[LOOKUP]),
                          tool_record("mcp", prompt, mcp(sim.mcp_url))])

    wait_for_status(client, job["id"], "completed")

    rows = results(client, job["id"])
    for custom_id in ("http", "mcp"):
        summary = rows[custom_id]["openrelay"]
        assert summary["tool_rounds"] == 1 and len(summary["tool_errors"]) == 1
        assert "were not sent to the tool: they are not valid JSON" in rows[custom_id]["content"]
    assert sim.tool_calls() == [] and sim.mcp_calls() == []
