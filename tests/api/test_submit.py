"""POST /v1/batches in the Relay dialect (seed 000): acceptance, results, and every
refusal (a 400 envelope naming the field, with nothing stored)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.actors.harness import PRIMARY, answer, wait_for
from tests.api.conftest import MakeRelay, Relay, assert_envelope, batch, rows

SEED_BODY: dict[str, Any] = {
    "name": "Review sentiment — October",
    "model": PRIMARY,
    "requests": [
        {"custom_id": "r-1",
         "messages": [{"role": "user", "content": "Classify: great product!"}]},
        {"custom_id": "r-2",
         "messages": [{"role": "user", "content": "Classify: terrible service"}]},
    ],
    "priority": 5,
    # The seed's https://my-app/relay-webhook would make a real DNS lookup at the end of
    # the job; webhooks have their own test against a loopback receiver.
    "webhookUrl": None,
    "cron": None,
}


async def test_seed_example_is_accepted_then_completes_with_results_in_order(relay: Relay) -> None:
    job = await relay.submit(SEED_BODY)

    assert re.fullmatch(r"[0-9a-f]{32}", job["id"])
    assert {k: job[k] for k in ("object", "status", "total", "next_run_at")} == {
        "object": "batch", "status": "queued", "total": 2, "next_run_at": None}
    done = await relay.wait_status(job["id"], "completed")
    assert (done["completed"], done["failed"], done["model"]) == (2, 0, PRIMARY)
    assert done["name"] == SEED_BODY["name"]
    assert await relay.results(job["id"]) == [
        {"custom_id": "r-1", "content": answer("Classify: great product!")},
        {"custom_id": "r-2", "content": answer("Classify: terrible service")},
    ]


async def test_custom_ids_default_to_row_positions(relay: Relay) -> None:
    body = {"model": PRIMARY, "requests": [
        {"messages": [{"role": "user", "content": p}]} for p in ("one", "two", "three")]}
    job = await relay.submit(body)
    await relay.wait_status(job["id"], "completed")
    assert [r["custom_id"] for r in await relay.results(job["id"])] == [
        "row-1", "row-2", "row-3"]


async def test_results_are_empty_until_the_job_ends(relay: Relay) -> None:
    job = await relay.submit(batch("fast", "slow BLOCK"))
    await relay.wait_status(job["id"], "running")
    await wait_for(lambda: relay.upstream.seen("slow BLOCK"), what="the blocked row")

    body = await relay.ok("GET", f"/v1/batches/{job['id']}/results")
    assert body["status"] == "running"
    assert body["data"] == []

    relay.upstream.gate.set()
    await relay.wait_status(job["id"], "completed")
    assert [r["content"] for r in await relay.results(job["id"])] == [
        answer("fast"), answer("slow BLOCK")]


def without(key: str) -> dict[str, Any]:
    body = batch("hello")
    del body[key]
    return body


def row_with(**fields: Any) -> dict[str, Any]:
    return {"model": PRIMARY, "requests": [{"custom_id": "a", **fields}]}


REFUSALS: dict[str, tuple[Any, str | None]] = {
    "missing model": (without("model"), "model"),
    "unknown model": (batch("hi", model="gpt-5-imaginary"), "model"),
    "model not a string": (batch("hi", model=7), "model"),
    "requests missing": (without("requests"), "requests"),
    "requests empty": ({"model": PRIMARY, "requests": []}, "requests"),
    "requests not a list": ({"model": PRIMARY, "requests": {"a": 1}}, "requests"),
    "row not an object": ({"model": PRIMARY, "requests": ["hello"]}, "requests[0]"),
    "row without messages": (row_with(), "requests[0].messages"),
    "messages empty": (row_with(messages=[]), "requests[0].messages"),
    "bad role": (row_with(messages=[{"role": "wizard", "content": "x"}]),
                 "requests[0].messages[0].role"),
    "missing content": (row_with(messages=[{"role": "user"}]),
                        "requests[0].messages[0].content"),
    "content not text": (row_with(messages=[{"role": "user", "content": 5}]),
                         "requests[0].messages[0].content"),
    "unknown row field": (row_with(messages=[{"role": "user", "content": "x"}], temp=1),
                          "requests[0].temp"),
    "duplicate custom_id": ({"model": PRIMARY, "requests": [*rows("a", "b"), *rows("c")]},
                            "requests[2].custom_id"),
    "priority a string": (batch("hi", priority="high"), "priority"),
    "priority a float": (batch("hi", priority=1.5), "priority"),
    "priority a bool": (batch("hi", priority=True), "priority"),
    "unknown field": (batch("hi", temperature=0.2), "temperature"),
    "body a list": ([batch("hi")], None),
    "cron with 6 fields": (batch("hi", cron="0 */5 * * * *"), "cron"),
    "cron macro": (batch("hi", cron="@daily"), "cron"),
    "cron that never fires": (batch("hi", cron="0 0 31 2 *"), "cron"),
    "cron gibberish": (batch("hi", cron="a b c d e"), "cron"),
    "cron not a string": (batch("hi", cron=5), "cron"),
    "webhook over http": (batch("hi", webhookUrl="http://hooks.example.com/x"),
                          "webhookUrl"),
    "webhook on loopback": (batch("hi", webhookUrl="https://127.0.0.1/hook"), "webhookUrl"),
    "webhook on a private net": (batch("hi", webhookUrl="https://10.1.2.3/hook"),
                                 "webhookUrl"),
    "webhook not a url": (batch("hi", webhookUrl="not a url"), "webhookUrl"),
}


@pytest.mark.parametrize("body,param", REFUSALS.values(), ids=REFUSALS.keys())
async def test_refusal_is_400_naming_the_field_and_stores_nothing(relay: Relay, body: Any,
                                                                  param: str | None) -> None:
    status, reply = await relay.call("POST", "/v1/batches", json=body)

    assert status == 400, reply
    error = assert_envelope(reply)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert (await relay.listing())["data"] == []
    assert relay.upstream.calls == []


@pytest.mark.parametrize("raw", [b"{not json", b"", b"\xff\xfe", b"[1, 2"],
                         ids=["malformed", "empty", "not utf-8", "truncated"])
async def test_unreadable_body_is_400(relay: Relay, raw: bytes) -> None:
    status, reply = await relay.call("POST", "/v1/batches", data=raw)
    assert status == 400, reply
    assert_envelope(reply)
    assert (await relay.listing())["data"] == []


async def test_body_over_the_limit_is_413(make_relay: MakeRelay) -> None:
    relay = await make_relay(server={"max_body_mb": 1})
    big = batch(*["x" * 1000 for _ in range(2000)])  # about 2 MB
    assert len(json.dumps(big)) > 2_000_000

    status, reply = await relay.call("POST", "/v1/batches", json=big)

    assert status == 413
    assert_envelope(reply, code="request_too_large")
    assert (await relay.listing())["data"] == []


async def test_fifty_thousand_rows_are_accepted(relay: Relay) -> None:
    body = batch(*[f"row {i}" for i in range(50_000)])

    job = await relay.submit(body)

    assert (job["status"], job["total"]) == ("queued", 50_000)
    await relay.ok("POST", f"/v1/batches/{job['id']}/cancel")
    done = await relay.wait_status(job["id"], "canceled", timeout=10)
    assert done["completed"] + done["failed"] == 50_000
    assert done["completed"] < 50_000


async def test_more_than_fifty_thousand_rows_is_400(relay: Relay) -> None:
    status, reply = await relay.call("POST", "/v1/batches",
                                     json=batch(*["x"] * 50_001))
    assert status == 400
    assert assert_envelope(reply)["param"] == "requests"
