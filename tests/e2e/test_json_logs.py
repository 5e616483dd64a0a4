"""`relayd serve --log-format json`, end to end: every line relayd logs while it runs a
job and stops is one JSON object with `ts`, `level`, `logger` and `msg`, each line after
the node joined carries its `node`, and no line quotes the API key."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.e2e.harness import Relayd, Simulator, rows, wait_for_status

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(60)
def test_every_line_is_a_json_object_with_the_node(
        simulator_factory: Callable[..., Simulator],
        relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim)
    relayd.serve_args = ("--log-format", "json", "--log-level", "debug")
    relayd.start()
    with relayd.client() as client:
        job = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                               "requests": rows(3)}).json()
        wait_for_status(client, job["id"], "completed")
        [node] = client.get("/v1/nodes").json()["data"]
    relayd.stop()

    text = relayd.log.read_text()
    lines = [line for line in text.splitlines() if not line.startswith("relayd: ")]
    logged = [json.loads(line) for line in lines]  # each one whole JSON object
    assert len(logged) > 10
    assert all({"ts", "level", "logger", "msg"} <= set(line) for line in logged)
    assert {line["node"] for line in logged if "node" in line} == {node["id"]}
    assert logged[-1].get("node") == node["id"]  # from the join on, every line has it
    assert relayd.key("acme") not in text
