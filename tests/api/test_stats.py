"""`GET /v1/stats`: the caller's workspace at a glance, from the store's aggregates."""

from __future__ import annotations

from typing import Any

from daemon.upstream.transport import Reply, TransportError
from tests.actors.harness import BACKUP, PRIMARY
from tests.api.conftest import MakeRelay, Relay, assert_envelope, batch


def cut_off(relay: Relay, word: str) -> None:
    """Every call whose prompt holds `word` gets no answer: the connection drops."""
    answer = relay.upstream._reply

    async def reply(alias: str, prompt: str) -> Reply:
        if word in prompt:
            raise TransportError("connection", "upstream.test: connection reset by peer")
        return await answer(alias, prompt)

    relay.upstream._reply = reply  # type: ignore[method-assign]


async def stats(relay: Relay, query: str = "", *, key: str | None = None) -> dict[str, Any]:
    return await relay.ok("GET", "/v1/stats" + query, key=key)


def model(body: dict[str, Any], alias: str) -> dict[str, Any]:
    return next(m for m in body["models"] if m["model"] == alias)


async def test_an_empty_workspace_has_a_full_window_of_zeros(relay: Relay) -> None:
    body = await stats(relay)
    assert body["object"] == "stats" and body["workspace"] == "ws-a"
    assert body["window"] == {"since": body["window"]["since"], "minutes": 60,
                              "bucket_seconds": 60}
    assert len(body["throughput"]) == 60
    assert {(p["completed"], p["failed"]) for p in body["throughput"]} == {(0, 0)}
    assert body["models"] == [] and body["failing"] == [] and body["queue"] == []
    assert body["usage"]["total"] == {"input_tokens": 0, "output_tokens": 0,
                                      "cost_nano_usd": 0, "cost_usd": 0.0}


async def test_rows_errors_latency_and_cost_are_counted(make_relay: MakeRelay) -> None:
    relay = await make_relay(models=[
        {"alias": PRIMARY, "base_url": "http://upstream.test/v1",
         "input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0},
        {"alias": BACKUP, "base_url": "http://backup.test/v1"}])
    relay.upstream.outage = True
    job = await relay.submit(batch("one", "two", "three", "x OUTAGE", "REFUSE"))
    await relay.wait_status(job["id"], "completed")

    body = await stats(relay)
    finished = [(p["completed"], p["failed"]) for p in body["throughput"] if p["completed"]
                or p["failed"]]
    assert finished == [(3, 2)]  # all in this minute
    primary = model(body, PRIMARY)
    assert primary["attempts"] == 3 + 3 + 1  # three fine, three 503s (retries), one 400
    assert primary["errors"] == {"429": 0, "5xx": 3, "timeout": 0, "connection": 0,
                                 "other": 1}
    assert primary["error_rates"]["5xx"] == round(3 / 7, 4)
    assert primary["latency_ms"]["samples"] == 3
    assert 0 <= primary["latency_ms"]["p50"] <= primary["latency_ms"]["p95"]
    assert body["failing"] == []  # 3 of 7 failed for the upstream's sake: under half
    dispatch = primary["dispatch"]  # the model's gate now, as GET /v1/models shows it
    assert dispatch["max_concurrency"] >= dispatch["concurrency"] >= 1
    assert dispatch["paused"] is False and dispatch["in_flight"] == 0
    used = body["usage"]["jobs"][0]
    assert used["id"] == job["id"] and used["input_tokens"] == 9 and used["output_tokens"] == 6
    assert used["cost_nano_usd"] == 9 * 1_000 + 6 * 2_000
    assert body["usage"]["total"]["cost_nano_usd"] == used["cost_nano_usd"]
    own = (await relay.ok("GET", f"/v1/batches/{job['id']}"))["usage"]  # the job's own view
    assert (own["input_tokens"], own["output_tokens"], own["cost_nano_usd"]) == (
        9, 6, used["cost_nano_usd"])


async def test_a_model_that_cannot_be_reached_is_named_failing(relay: Relay) -> None:
    cut_off(relay, "DOWN")
    job = await relay.submit(batch("DOWN a", "DOWN b"))
    await relay.wait_status(job["id"], "completed")

    body = await stats(relay)
    assert model(body, PRIMARY)["errors"]["connection"] == 6  # 2 rows x 3 attempts
    failing = {f["model"]: f for f in body["failing"]}
    assert failing[PRIMARY]["message"] == f"{PRIMARY}: 100% connection errors"
    assert failing[PRIMARY]["error"] == "connection" and failing[PRIMARY]["share"] == 1.0


async def test_queue_depth_is_by_priority(make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"max_running_jobs": 1})
    held = await relay.submit(batch("BLOCK"))
    await relay.wait_status(held["id"], "running")
    await relay.submit(batch("a", "b", priority=5))
    await relay.submit(batch("c", priority=5))
    await relay.submit(batch("d"))
    try:
        body = await stats(relay)
        assert body["queue"] == [{"priority": 5, "jobs": 2, "rows": 3},
                                 {"priority": 0, "jobs": 1, "rows": 1}]
    finally:
        relay.upstream.gate.set()


async def test_stats_see_only_the_callers_workspace(relay: Relay) -> None:
    job = await relay.submit(batch("mine"))
    await relay.wait_status(job["id"], "completed")
    other = await relay.new_key("ws-b")
    body = await stats(relay, key=other)
    assert body["workspace"] == "ws-b"
    assert body["models"] == [] and body["usage"]["jobs"] == []
    assert sum(p["completed"] for p in body["throughput"]) == 0


async def test_the_window_is_a_query_parameter(relay: Relay) -> None:
    body = await stats(relay, "?minutes=5")
    assert body["window"]["minutes"] == 5 and len(body["throughput"]) == 60
    assert body["window"]["bucket_seconds"] == 5
    for bad in ("0", "1441", "soon"):
        status, error = await relay.call("GET", f"/v1/stats?minutes={bad}")
        assert status == 400 and assert_envelope(error)["param"] == "minutes"
    status, error = await relay.call("GET", "/v1/stats", key="nope")
    assert status == 401


async def test_the_stats_queries_are_bounded_by_the_window(relay: Relay) -> None:
    """A job that ended before the window is read for its totals only."""
    job = await relay.submit(batch("old"))
    await relay.wait_status(job["id"], "completed")
    relay.clock.advance(2 * 3600)
    body = await stats(relay)
    assert body["models"] == [] and body["usage"]["jobs"] == []
    assert body["usage"]["total"]["input_tokens"] == 3
