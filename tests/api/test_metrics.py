"""`GET /metrics`: the operator's Prometheus view, parsed with prometheus_client's own
text parser; no workspace key, a token when `[metrics] token` is set, and workspace
labels only when `[metrics] per_workspace` is on."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.actors.harness import PRIMARY, wait_for
from tests.api.conftest import MakeRelay, Relay, assert_envelope, batch
from tests.api.test_stats import cut_off

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(relay: Relay, headers: dict[str, str] | None = None) -> Samples:
    async with relay.client.get("/metrics", headers=headers or {}) as resp:
        assert resp.status == 200, await resp.text()
        assert resp.content_type == "text/plain"
        text = await resp.text()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def families(relay: Relay) -> dict[str, str]:
    """Family name -> type, as the parser reads them."""
    async with relay.client.get("/metrics") as resp:
        return {f.name: f.type for f in text_string_to_metric_families(await resp.text())}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def named(samples: Samples, name: str) -> list[dict[str, str]]:
    return [dict(labels) for n, labels in samples if n == name]


async def test_metrics_parse_and_carry_every_listed_series(relay: Relay) -> None:
    before = await scrape(relay)
    assert value(before, "relay_jobs", status="queued") == 0
    cut_off(relay, "DOWN")
    job = await relay.submit(batch("fine", "also fine", "REFUSE", "DOWN"))
    await relay.wait_status(job["id"], "completed")

    samples = await scrape(relay)
    assert value(samples, "relay_jobs", status="completed") == 1
    assert value(samples, "relay_rows_total", model=PRIMARY, outcome="completed") == 2
    assert value(samples, "relay_rows_total", model=PRIMARY, outcome="failed") == 1
    assert value(samples, "relay_rows_total", model=PRIMARY, outcome="dead_letter") == 1
    assert value(samples, "relay_upstream_requests_total", model=PRIMARY, outcome="ok") == 2
    assert value(samples, "relay_upstream_requests_total", model=PRIMARY,
                 outcome="other") == 1
    assert value(samples, "relay_upstream_requests_total", model=PRIMARY,
                 outcome="connection") == 3
    assert value(samples, "relay_upstream_retries_total", model=PRIMARY) == 2
    assert value(samples, "relay_upstream_request_duration_seconds_count", model=PRIMARY) == 6
    assert value(samples, "relay_upstream_request_duration_seconds_bucket", model=PRIMARY,
                 le="+Inf") == 6
    assert value(samples, "relay_rows_in_flight", model=PRIMARY) == 0
    assert value(samples, "relay_rows_pending") == 0
    assert set(await families(relay)) >= {
        "relay_jobs", "relay_queue_jobs", "relay_queue_rows", "relay_rows", "relay_rows_pending",
        "relay_rows_in_flight", "relay_upstream_request_duration_seconds",
        "relay_upstream_requests", "relay_upstream_retries", "relay_webhook_deliveries",
        "relay_executor_calls"}
    assert not [labels for _, labels in samples if any(k == "workspace" for k, _ in labels)]

    again = await scrape(relay)  # counted once: the next scrape starts past the mark
    assert value(again, "relay_upstream_requests_total", model=PRIMARY, outcome="ok") == 2


async def test_rows_in_flight_and_queue_depth_are_gauges(make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"max_running_jobs": 1})
    held = await relay.submit(batch("BLOCK one", "BLOCK two"))
    await relay.wait_status(held["id"], "running")
    await relay.submit(batch("a", "b", priority=2))
    try:
        await wait_for(lambda: relay.upstream.in_flight() == 2 or None, what="2 rows out")
        samples = await scrape(relay)
        assert value(samples, "relay_rows_in_flight", model=PRIMARY) == 2
        assert value(samples, "relay_rows_pending") == 2
        assert value(samples, "relay_queue_jobs", priority="2") == 1
        assert value(samples, "relay_queue_rows", priority="2") == 2
        assert value(samples, "relay_jobs", status="running") == 1
    finally:
        relay.upstream.gate.set()


async def test_a_token_guards_metrics_and_a_workspace_key_is_not_needed(
        make_relay: MakeRelay) -> None:
    relay = await make_relay(metrics={"token": "s3cret"})
    for headers in ({}, {"Authorization": "Bearer wrong"}, relay.headers()):
        async with relay.client.get("/metrics", headers=headers) as resp:
            assert resp.status == 401
            assert_envelope(await resp.json(), code="invalid_metrics_token")
    assert "relay_jobs" in {n for n, _ in await scrape(
        relay, {"Authorization": "Bearer s3cret"})}


async def test_open_metrics_need_no_key(relay: Relay) -> None:
    assert await scrape(relay)


async def test_per_workspace_adds_the_workspace_label(make_relay: MakeRelay) -> None:
    relay = await make_relay(metrics={"per_workspace": True})
    job = await relay.submit(batch("fine"))
    await relay.wait_status(job["id"], "completed")
    other = await relay.new_key("ws-b")
    job = await relay.submit(batch("x", "y"), key=other)
    await relay.wait_status(job["id"], "completed", key=other)

    samples = await scrape(relay)
    rows: dict[str, Any] = {labels["workspace"]: value(samples, "relay_rows_total", **labels)
                            for labels in named(samples, "relay_rows_total")
                            if labels["outcome"] == "completed"}
    assert rows == {"ws-a": 1, "ws-b": 2}
    assert value(samples, "relay_upstream_requests_total", model=PRIMARY, outcome="ok",
                 workspace="ws-b") == 2
