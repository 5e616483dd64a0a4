"""What an OpenAI client reads from `/v1/batches` validates, strictly, against the
official SDK's own `Batch` model: the list holds only OpenAI batches unless asked
otherwise, `usage` has every field OpenAI requires, and a dead-letter retry is a
batch like any other (its own input file and completion window)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from openai.types import Batch

from tests.api.conftest import MakeRelay, Relay, assert_envelope, batch, openai_batch

WINDOW_S = 86_400  # the harness keeps the default `gateway.completion_window_s`


def as_sdk_batch(view: dict[str, Any]) -> Batch:
    """`view` as the SDK reads it, without coercion (a Unix time must be an int, not an
    ISO string), with seed 002's required `request_counts`."""
    typed = Batch.model_validate(view, strict=True)
    assert typed.request_counts is not None
    return typed


async def both_dialects(relay: Relay) -> tuple[dict[str, Any], dict[str, Any]]:
    """A finished Relay job and a finished OpenAI batch, the batch made last."""
    native = await relay.submit(batch("native"))
    ours = await relay.submit(openai_batch("hello"))
    return (await relay.wait_status(native["id"], "completed"),
            await relay.wait_status(ours["id"], "completed"))


# -- GET /v1/batches: OpenAI's list -----------------------------------------------------


async def test_the_list_holds_only_openai_batches_in_openais_shape(relay: Relay) -> None:
    _, ours = await both_dialects(relay)

    listed = await relay.listing(dialect=None)

    assert [b["id"] for b in listed["data"]] == [ours["id"]]
    typed = as_sdk_batch(listed["data"][0])
    assert typed.created_at == ours["created_at"] and isinstance(typed.created_at + 1, int)
    assert typed.request_counts is not None and typed.request_counts.completed == 1
    assert (typed.endpoint, typed.input_file_id) == (ours["endpoint"], ours["input_file_id"])
    assert (listed["first_id"], listed["last_id"], listed["has_more"]) == (
        ours["id"], ours["id"], False)
    assert await relay.listing(dialect="openai") == listed


async def test_relay_jobs_are_listed_in_their_own_shape_when_asked(relay: Relay) -> None:
    native, ours = await both_dialects(relay)

    relay_only = (await relay.listing(dialect="relay"))["data"]
    every = (await relay.listing(dialect="all"))["data"]

    assert relay_only == [await relay.job(native["id"])]
    assert isinstance(relay_only[0]["created_at"], str)  # seed 000's ISO time
    assert [j["id"] for j in every] == [ours["id"], native["id"]]
    as_sdk_batch(every[0])
    assert every[1] == relay_only[0]


@pytest.mark.parametrize("value", ["", "sdk", "OpenAI", "relay,openai"])
async def test_an_unknown_dialect_is_400_naming_it(relay: Relay, value: str) -> None:
    status, body = await relay.call("GET", f"/v1/batches?dialect={value}")
    assert status == 400
    assert assert_envelope(body)["param"] == "dialect"


async def test_pages_are_cut_from_the_listed_dialect_alone(relay: Relay) -> None:
    made = []
    for i in range(3):  # Relay jobs between the batches: a filter after the cut shows
        made.append((await relay.submit(openai_batch(f"batch {i}")))["id"])
        await relay.submit(batch(f"job {i}"))

    first = await relay.listing("?limit=2", dialect=None)
    second = await relay.listing(f"?limit=2&after={first['last_id']}", dialect=None)

    assert ([b["id"] for b in first["data"]], first["has_more"]) == (made[:0:-1], True)
    assert ([b["id"] for b in second["data"]], second["has_more"]) == ([made[0]], False)


async def test_a_status_filter_reads_the_listed_dialects_names(relay: Relay) -> None:
    _, ours = await both_dialects(relay)
    assert [b["id"] for b in (await relay.listing("?status=completed", dialect=None))["data"]
            ] == [ours["id"]]
    assert (await relay.listing("?status=in_progress", dialect=None))["data"] == []


# -- usage -------------------------------------------------------------------------


async def test_usage_sums_the_upstreams_cached_and_reasoning_tokens(relay: Relay) -> None:
    relay.upstream.usage = {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42,
                            "prompt_tokens_details": {"cached_tokens": 16},
                            "completion_tokens_details": {"reasoning_tokens": 5}}
    made = await relay.submit(openai_batch("one", "two"))

    done = await relay.wait_status(made["id"], "completed")

    usage = as_sdk_batch(done).usage
    assert usage is not None
    assert (usage.input_tokens, usage.input_tokens_details.cached_tokens) == (60, 32)
    assert (usage.output_tokens, usage.output_tokens_details.reasoning_tokens) == (24, 10)
    assert usage.total_tokens == 84
    assert isinstance(done["usage"]["cost_nano_usd"], int)


async def test_usage_details_are_zero_when_the_upstream_reports_none(relay: Relay) -> None:
    made = await relay.submit(openai_batch("plain"))
    done = await relay.wait_status(made["id"], "completed")
    assert {k: v for k, v in done["usage"].items() if k != "cost_nano_usd"} == {
        "input_tokens": 3, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 5}
    as_sdk_batch(done)


# -- dead-letter retry ----------------------------------------------------------------


async def dead_lettered(relay: Relay, *prompts: str) -> dict[str, Any]:
    made = await relay.submit(openai_batch(*prompts))
    return await relay.wait_status(made["id"], "completed")


async def file_lines(relay: Relay, file_id: str) -> list[dict[str, Any]]:
    async with relay.client.get(f"/v1/files/{file_id}/content",
                                headers=relay.headers()) as reply:
        assert reply.status == 200
        return [json.loads(line) for line in (await reply.read()).splitlines()]


async def test_a_retried_batch_has_its_own_input_file_window_and_source(relay: Relay) -> None:
    source = await dead_lettered(relay, "fine", "OUTAGE one", "OUTAGE two")
    relay.upstream.outage = False

    retry = await relay.ok("POST", f"/v1/batches/{source['id']}/dead_letter/retry")

    typed = as_sdk_batch(retry)
    assert retry["retry_of"] == source["id"]
    assert typed.input_file_id.startswith("file-")
    assert typed.input_file_id != source["input_file_id"]
    assert typed.expires_at == typed.created_at + WINDOW_S
    submitted = openai_batch("fine", "OUTAGE one", "OUTAGE two")["requests"]
    assert await file_lines(relay, typed.input_file_id) == submitted[1:]
    record = await relay.ok("GET", f"/v1/files/{typed.input_file_id}")
    assert (record["purpose"], record["filename"]) == (
        "batch", f"{source['id']}-dead-letter-retry.jsonl")
    done = as_sdk_batch(await relay.wait_status(retry["id"], "completed"))
    assert done.request_counts is not None
    assert (done.request_counts.total, done.request_counts.completed) == (2, 2)
    assert done.input_file_id == typed.input_file_id


async def test_a_retried_batch_expires_when_its_window_closes(make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"max_running_jobs": 1})
    source = await dead_lettered(relay, "OUTAGE one")
    blocker = await relay.submit(batch("hold BLOCK"))  # keeps the retry queued
    await relay.wait_status(blocker["id"], "running")
    retry = await relay.ok("POST", f"/v1/batches/{source['id']}/dead_letter/retry")

    await relay.tick(relay.clock.advance(WINDOW_S + 1))

    expired = as_sdk_batch(await relay.wait_status(retry["id"], "expired"))
    assert expired.expired_at is not None and expired.expired_at >= retry["expires_at"]
    relay.upstream.gate.set()


async def test_a_relay_retry_stays_without_file_or_window(relay: Relay) -> None:
    made = await relay.submit(batch("OUTAGE one"))
    await relay.wait_status(made["id"], "completed")

    retry = await relay.ok("POST", f"/v1/batches/{made['id']}/dead_letter/retry")

    stored = await asyncio.to_thread(relay.services.repo.get_job, retry["id"])
    assert stored is not None and stored.retry_of == made["id"]
    assert (stored.input_file_id, stored.expires_at) == (None, None)


async def test_concurrent_retries_of_a_batch_make_one_batch_and_one_file(relay: Relay) -> None:
    source = await dead_lettered(relay, "x OUTAGE", "y OUTAGE", "fine")
    path = f"/v1/batches/{source['id']}/dead_letter/retry"

    answers = await asyncio.gather(*(relay.call("POST", path) for _ in range(3)))

    made = [body for status, body in answers if status == 200]
    assert len(made) == 1 and sorted(status for status, _ in answers) == [200, 400, 400]
    # The retry runs at once: until it ends, its results are being written (.partial).
    retry = await relay.wait_status(made[0]["id"], "completed")
    on_disk = {p.name for p in relay.services.files.root.iterdir()}
    assert on_disk == {source["input_file_id"], source["output_file_id"],
                       source["error_file_id"], retry["input_file_id"],
                       *(retry[f] for f in ("output_file_id", "error_file_id") if retry[f])}
