"""Both upstream protocols and the Anthropic dialect with real processes: a Relay job on
an `api = "anthropic"` model (the simulator's `/v1/messages`), a Message Batch on
either protocol, and a Message Batch surviving kill -9."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from daemon.testing import Simulator, simulated_model
from tests.e2e.harness import Relayd, config_tables, rows, wait_for_status, wait_until

pytestmark = pytest.mark.e2e

VERSION = {"anthropic-version": "2023-06-01"}
BATCHES = "/v1/messages/batches"


def claude(sim: Simulator) -> dict[str, Any]:
    """A model on the simulator's Anthropic Messages route."""
    return simulated_model("claude", sim, model="sim-claude", api="anthropic")


def relayd_with_claude(make: Callable[..., Relayd], sim: Simulator,
                       **options: Any) -> Relayd:
    tables = config_tables(sim, **options)
    tables["models"] = [*tables["models"], claude(sim)]
    return make(sim, tables)


def message_batch(client: httpx.Client, model: str, prompts: list[str]) -> dict[str, Any]:
    created = client.post(BATCHES, headers=VERSION, json={"requests": [
        {"custom_id": f"m-{i}", "params": {"model": model, "max_tokens": 32,
                                           "messages": [{"role": "user", "content": p}]}}
        for i, p in enumerate(prompts)]})
    assert created.status_code == 200, created.text
    batch: dict[str, Any] = created.json()
    return batch


def ended(client: httpx.Client, batch_id: str, timeout: float = 30) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        found: dict[str, Any] = client.get(f"{BATCHES}/{batch_id}", headers=VERSION).json()
        return found if found["processing_status"] == "ended" else None
    found: dict[str, Any] = wait_until(check, timeout=timeout)
    return found


def result_lines(client: httpx.Client, batch_id: str) -> list[dict[str, Any]]:
    answer = client.get(f"{BATCHES}/{batch_id}/results", headers=VERSION)
    assert answer.status_code == 200, answer.text
    return [httpx.Response(200, content=line).json() for line in answer.content.splitlines()]


@pytest.fixture
def make(relayd_factory: Callable[..., Relayd]) -> Callable[..., Relayd]:
    """`make(sim, tables)`: a relayd with exactly `tables` as its config."""
    def build(sim: Simulator, tables: dict[str, Any]) -> Relayd:
        daemon = relayd_factory(sim)
        return daemon.write_config(**tables)
    return build


def test_a_relay_job_runs_on_an_anthropic_model(simulator_factory: Callable[..., Simulator],
                                                make: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_with_claude(make, sim).start()
    with relayd.client() as client:
        job = client.post("/v1/batches", json={"model": "claude", "requests": [
            {"custom_id": "a", "messages": [{"role": "system", "content": "Be brief."},
                                            {"role": "user", "content": "Classify: great"}]},
        ]}).json()
        done = wait_for_status(client, job["id"], "completed")
        assert (done["completed"], done["failed"]) == (1, 0)
        row = client.get(f"/v1/batches/{job['id']}/rows/a").json()
        assert row["response"]["object"] == "chat.completion"  # stored in the row's shape
        assert row["response"]["choices"][0]["message"]["content"] == "positive"
    paths = {r["path"] for r in sim.requests()}
    assert paths == {"/v1/messages"}


@pytest.mark.parametrize("model", ["gpt-4o-mini", "claude"])
def test_a_message_batch_runs_on_either_protocol(model: str,
                                                 simulator_factory: Callable[..., Simulator],
                                                 make: Callable[..., Relayd]) -> None:
    """Translated to chat for an OpenAI-compatible model, passed through to an
    Anthropic one: the results are Anthropic Messages either way."""
    sim = simulator_factory()
    relayd = relayd_with_claude(make, sim).start()
    with relayd.client() as client:
        batch = message_batch(client, model, ["Classify: great", "Classify: awful"])
        assert ended(client, batch["id"])["request_counts"]["succeeded"] == 2
        lines = result_lines(client, batch["id"])
    assert [line["result"]["type"] for line in lines] == ["succeeded", "succeeded"]
    messages = [line["result"]["message"] for line in lines]
    assert all(m["type"] == "message" and m["role"] == "assistant" for m in messages)
    assert [m["content"][0]["text"] for m in messages] == ["positive", "negative"]
    expected = "/v1/messages" if model == "claude" else "/v1/chat/completions"
    assert {r["path"] for r in sim.requests()} == {expected}


ROWS = 300
CONCURRENCY = 8


def test_kill_9_mid_message_batch_loses_nothing_and_repeats_no_result(
        simulator_factory: Callable[..., Simulator], make: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "40")
    relayd = relayd_with_claude(make, sim, concurrency=CONCURRENCY).start()
    client = relayd.client()
    batch = message_batch(client, "claude", [r["messages"][0]["content"] for r in rows(ROWS)])
    wait_until(lambda: client.get(f"{BATCHES}/{batch['id']}", headers=VERSION).json()[
        "request_counts"]["succeeded"] >= 100)
    relayd.kill()
    relayd.start()
    done = ended(client, batch["id"], timeout=60)
    assert done["request_counts"] | {"processing": 0} == {
        "processing": 0, "succeeded": ROWS, "errored": 0, "canceled": 0, "expired": 0}
    lines = result_lines(client, batch["id"])
    ids = [line["custom_id"] for line in lines]
    assert len(ids) == len(set(ids)) == ROWS  # every custom_id exactly once
    seen = Counter(r["prompt"] for r in sim.requests())
    assert len(seen) == ROWS
    assert sum(n - 1 for n in seen.values()) <= 3 * CONCURRENCY  # only rows in flight
    client.close()
