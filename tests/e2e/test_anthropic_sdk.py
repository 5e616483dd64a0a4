"""Anthropic's Message Batches API end to end, driven by the unmodified `anthropic` SDK
(`client.messages.batches.*`, `base_url` at relayd): real relayd, real simulator.

Create, retrieve, list (auto-paging past one page), cancel, expiry, `results()` with
every kind of typed result (succeeded, errored, canceled, expired), delete, and the
typed errors of a missing or unknown `x-api-key`. Rows run on `gpt-4o-mini`, an
OpenAI-compatible upstream (the simulator), through the Anthropic -> chat translation."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types import Message
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse

from tests.e2e.harness import Relayd, Simulator, wait_until

pytestmark = [pytest.mark.skip(reason="wired by the dialect seam"), pytest.mark.e2e]

MODEL = "gpt-4o-mini"
BATCH_ID = re.compile(r"msgbatch_[0-9A-Za-z]{24}")
VERSION = {"anthropic-version": "2023-06-01"}
SimulatorFactory = Callable[..., Simulator]
RelaydFactory = Callable[..., Relayd]
RESULT_TYPES: tuple[str, ...] = ("succeeded", "errored", "canceled", "expired")


# -- helpers ---------------------------------------------------------------------------


def sdk(relayd: Relayd, workspace: str = "acme") -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=relayd.key(workspace), base_url=relayd.url,
                               max_retries=0, timeout=30)


def ask(custom_id: str, text: str, *, model: str = MODEL, **params: Any) -> dict[str, Any]:
    return {"custom_id": custom_id,
            "params": {"model": model, "max_tokens": 64,
                       "messages": [{"role": "user", "content": text}], **params}}


def create(client: anthropic.Anthropic, *requests: dict[str, Any]) -> MessageBatch:
    return client.messages.batches.create(requests=list(requests))  # type: ignore[arg-type]


def ended(client: anthropic.Anthropic, batch_id: str, *, timeout: float = 20) -> MessageBatch:
    found: MessageBatch = wait_until(
        lambda: (b := client.messages.batches.retrieve(batch_id)).processing_status == "ended"
        and b, timeout=timeout)
    return found


def results(client: anthropic.Anthropic,
            batch_id: str) -> dict[str, MessageBatchIndividualResponse]:
    """Every result line by custom_id; each custom_id is there exactly once."""
    lines = list(client.messages.batches.results(batch_id))
    assert all(isinstance(line, MessageBatchIndividualResponse) for line in lines)
    found = {line.custom_id: line for line in lines}
    assert len(found) == len(lines), Counter(line.custom_id for line in lines)
    return found


def tally(lines: dict[str, MessageBatchIndividualResponse]) -> dict[str, int]:
    counted: Counter[str] = Counter(line.result.type for line in lines.values())
    return {kind: counted[kind] for kind in RESULT_TYPES}


def counts(batch: MessageBatch) -> dict[str, int]:
    c = batch.request_counts
    return {"succeeded": c.succeeded, "errored": c.errored, "canceled": c.canceled,
            "expired": c.expired}


def text_of(line: MessageBatchIndividualResponse) -> str:
    assert line.result.type == "succeeded"
    message = line.result.message
    assert isinstance(message, Message)
    block = message.content[0]
    assert block.type == "text"
    return block.text


def error_of(line: MessageBatchIndividualResponse) -> tuple[str, str]:
    assert line.result.type == "errored", line
    envelope = line.result.error
    assert envelope.type == "error"
    return envelope.error.type, envelope.error.message


def prompts_seen(sim: Simulator) -> list[str]:
    return [r["prompt"] for r in sim.requests()]


def raw(relayd: Relayd, **headers: str) -> httpx.Client:
    return httpx.Client(base_url=relayd.url, timeout=30, headers=headers)


# -- the whole trip ------------------------------------------------------------------------


def test_create_retrieve_and_results_of_every_kind(simulator_factory: SimulatorFactory,
                                                   relayd_factory: RelaydFactory) -> None:
    sim = simulator_factory("--latency-ms", "20")
    relayd = relayd_factory(sim).start()
    client = sdk(relayd)

    created = create(client,
                     ask("ok-0", "Classify: great product!"),
                     ask("ok-1", "Classify: terrible service, it broke after a day"),
                     ask("ok-2", "Classify sentiment: it is a box", system="Be brief."),
                     ask("refused", "no [sim:fail=400]"),
                     ask("streamed", "Classify: streaming", stream=True),
                     ask("unknown-model", "Classify: fine", model="claude-nowhere"))
    assert BATCH_ID.fullmatch(created.id)
    assert (created.type, created.processing_status) == ("message_batch", "in_progress")
    assert created.request_counts.processing + sum(counts(created).values()) == 6
    assert created.expires_at - created.created_at == timedelta(days=1)
    assert created.created_at.utcoffset() == timedelta(0)
    assert (created.ended_at, created.cancel_initiated_at, created.archived_at,
            created.results_url) == (None, None, None, None)
    assert client.messages.batches.retrieve(created.id).id == created.id

    batch = ended(client, created.id)
    assert counts(batch) == {"succeeded": 3, "errored": 3, "canceled": 0, "expired": 0}
    assert batch.request_counts.processing == 0
    assert batch.ended_at is not None and batch.created_at <= batch.ended_at
    assert batch.cancel_initiated_at is None
    assert batch.results_url == f"{relayd.url}/v1/messages/batches/{batch.id}/results"

    lines = results(client, batch.id)
    assert set(lines) == {"ok-0", "ok-1", "ok-2", "refused", "streamed", "unknown-model"}
    assert tally(lines) == counts(batch)
    assert (text_of(lines["ok-0"]), text_of(lines["ok-1"]), text_of(lines["ok-2"])) == (
        "positive", "negative", "neutral")
    for custom_id in ("ok-0", "ok-1", "ok-2"):
        message = lines[custom_id].result.message  # type: ignore[union-attr]
        assert (message.type, message.role) == ("message", "assistant")
        assert message.id.startswith("msg_")
        assert message.stop_reason == "end_turn"
        assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert error_of(lines["refused"])[0] == "invalid_request_error"
    kind, message_text = error_of(lines["streamed"])
    assert kind == "invalid_request_error" and "stream" in message_text
    kind, message_text = error_of(lines["unknown-model"])
    assert kind == "not_found_error" and "claude-nowhere" in message_text

    # Nothing refused at intake reached the upstream.
    prompts = prompts_seen(sim)
    assert not any("streaming" in p for p in prompts), prompts
    assert "Classify: fine" not in prompts  # the unknown model's request

    # The results are plain JSONL at `results_url`, with the same key.
    with raw(relayd, **{"x-api-key": relayd.key("acme")}, **VERSION) as http:
        reply = http.get(batch.results_url)
        assert reply.status_code == 200
        assert reply.text.endswith("\n") and len(reply.text.splitlines()) == 6


def test_results_are_not_there_before_the_end(simulator_factory: SimulatorFactory,
                                              relayd_factory: RelaydFactory) -> None:
    relayd = relayd_factory(simulator_factory(), concurrency=1, running=1).start()
    client = sdk(relayd)
    slow = create(client, ask("slow", "Classify: slow [sim:sleep=3000]"))
    with pytest.raises(anthropic.AnthropicError, match="results_url"):
        list(client.messages.batches.results(slow.id))
    client.messages.batches.cancel(slow.id)
    ended(client, slow.id)


def test_list_pages_through_every_batch(simulator_factory: SimulatorFactory,
                                        relayd_factory: RelaydFactory) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    made = [create(client, ask("r", f"Classify: item {i}")).id for i in range(5)]
    newest_first = made[::-1]

    first = client.messages.batches.list(limit=2)
    assert [b.id for b in first.data] == newest_first[:2]
    assert first.has_more is True
    assert (first.first_id, first.last_id) == tuple(newest_first[:2])
    assert [b.id for b in client.messages.batches.list(limit=2)] == newest_first  # auto-paged
    assert [b.id for b in client.messages.batches.list()] == newest_first  # default: 20
    last = client.messages.batches.list(limit=2, after_id=newest_first[3])
    assert [b.id for b in last.data] == newest_first[4:] and last.has_more is False
    before = client.messages.batches.list(limit=2, before_id=newest_first[3])
    assert [b.id for b in before.data] == newest_first[1:3]
    for b in first.data:
        assert isinstance(b, MessageBatch)

    for bad in (0, 1001):
        with pytest.raises(anthropic.BadRequestError) as refused:
            client.messages.batches.list(limit=bad)
        assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
        assert "limit" in refused.value.body["error"]["message"]  # type: ignore[index]

    # Another workspace sees none of them.
    assert list(sdk(relayd, "globex").messages.batches.list()) == []


def test_cancel_ends_unrun_requests_as_canceled(simulator_factory: SimulatorFactory,
                                                relayd_factory: RelaydFactory) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim, concurrency=1, running=1).start()
    client = sdk(relayd)
    running = create(client, *(ask(f"slow-{i}", f"slow {i} [sim:sleep=400]") for i in range(6)))
    waiting = create(client, *(ask(f"w-{i}", f"waiting {i}") for i in range(2)))
    progress = wait_until(lambda: (b := client.messages.batches.retrieve(running.id))
                          .request_counts.succeeded >= 1 and b)
    assert progress.processing_status == "in_progress"  # counts move live
    assert progress.request_counts.processing + progress.request_counts.succeeded == 6

    answer = client.messages.batches.cancel(waiting.id)  # never started
    assert answer.processing_status in ("canceling", "ended")
    assert answer.cancel_initiated_at is not None
    answer = client.messages.batches.cancel(running.id)
    assert answer.processing_status == "canceling"
    assert answer.cancel_initiated_at is not None and answer.ended_at is None

    done = ended(client, running.id)
    assert done.cancel_initiated_at is not None and done.ended_at is not None
    assert done.cancel_initiated_at <= done.ended_at
    lines = results(client, done.id)
    assert set(lines) == {f"slow-{i}" for i in range(6)}
    assert tally(lines) == counts(done)
    assert done.request_counts.canceled >= 1 and done.request_counts.succeeded >= 1
    assert lines["slow-0"].result.type == "succeeded"
    assert lines["slow-5"].result.type == "canceled"

    never_ran = ended(client, waiting.id)
    assert counts(never_ran) == {"succeeded": 0, "errored": 0, "canceled": 2, "expired": 0}
    assert {line.result.type for line in results(client, waiting.id).values()} == {"canceled"}
    assert not any(p.startswith("waiting") for p in prompts_seen(sim))
    # Canceling an ended batch changes nothing.
    with pytest.raises(anthropic.APIStatusError):
        client.messages.batches.cancel(never_ran.id)
    assert counts(client.messages.batches.retrieve(never_ran.id)) == counts(never_ran)


def test_expiry_ends_unrun_requests_as_expired(simulator_factory: SimulatorFactory,
                                               relayd_factory: RelaydFactory) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim, concurrency=1, running=1,
                            gateway={"completion_window_s": 2}).start()
    client = sdk(relayd)
    running = create(client, *[ask(f"fast-{i}", f"fast {i}") for i in range(2)],
                     *[ask(f"slow-{i}", f"slow {i} [sim:sleep=1500]") for i in range(4)])
    queued = create(client, *(ask(f"q-{i}", f"queued {i}") for i in range(2)))
    assert running.expires_at - running.created_at == timedelta(seconds=2)

    done = ended(client, running.id, timeout=15)
    assert done.cancel_initiated_at is None
    lines = results(client, done.id)
    assert tally(lines) == counts(done)
    assert {lines["fast-0"].result.type, lines["fast-1"].result.type} == {"succeeded"}
    assert lines["slow-3"].result.type == "expired"

    never_ran = ended(client, queued.id, timeout=5)
    assert counts(never_ran) == {"succeeded": 0, "errored": 0, "canceled": 0, "expired": 2}
    assert {line.result.type for line in results(client, queued.id).values()} == {"expired"}
    assert not any(p.startswith("queued") for p in prompts_seen(sim))


def test_delete_only_an_ended_batch(simulator_factory: SimulatorFactory,
                                    relayd_factory: RelaydFactory) -> None:
    relayd = relayd_factory(simulator_factory(), concurrency=1, running=1).start()
    client = sdk(relayd)
    done = ended(client, create(client, ask("a", "Classify: fine")).id)
    slow = create(client, ask("slow", "Classify: slow [sim:sleep=3000]"))

    with pytest.raises(anthropic.APIStatusError) as refused:
        client.messages.batches.delete(slow.id)
    assert 400 <= refused.value.status_code < 500
    assert refused.value.body["type"] == "error"  # type: ignore[index]
    assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert client.messages.batches.retrieve(slow.id).processing_status != "ended"

    with pytest.raises(anthropic.NotFoundError):
        sdk(relayd, "globex").messages.batches.delete(done.id)
    deleted = client.messages.batches.delete(done.id)
    assert (deleted.id, deleted.type) == (done.id, "message_batch_deleted")
    for call in (lambda: client.messages.batches.retrieve(done.id),
                 lambda: client.messages.batches.delete(done.id),
                 lambda: list(client.messages.batches.results(done.id))):
        with pytest.raises(anthropic.NotFoundError):
            call()
    assert [b.id for b in client.messages.batches.list()] == [slow.id]
    client.messages.batches.cancel(slow.id)
    ended(client, slow.id)


# -- refusals ----------------------------------------------------------------------------


def test_create_refusals_name_their_field(simulator_factory: SimulatorFactory,
                                          relayd_factory: RelaydFactory) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    one = ask("a", "hi")
    cases: list[tuple[list[dict[str, Any]], str]] = [
        ([], "requests"),
        ([one, one], "requests[1].custom_id"),
        ([ask("has space", "hi")], "requests[0].custom_id"),
        ([ask("x" * 65, "hi")], "requests[0].custom_id"),
        ([{"custom_id": "a"}], "requests[0].params"),
        ([ask("a", "hi", max_tokens=0)], "requests[0].params.max_tokens"),
        ([{"custom_id": "a", "params": {"model": MODEL, "max_tokens": 5, "messages": []}}],
         "requests[0].params.messages"),
        ([one] * 100_001, "requests"),
    ]
    for requests, field in cases:
        with pytest.raises(anthropic.BadRequestError) as refused:
            client.messages.batches.create(requests=requests)  # type: ignore[arg-type]
        body = refused.value.body
        assert body["type"] == "error", body  # type: ignore[index]
        assert body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
        assert field in body["error"]["message"], (field, body)  # type: ignore[index]
    assert list(client.messages.batches.list()) == []  # nothing half-created


def test_auth_errors_are_the_sdks_typed_errors(simulator_factory: SimulatorFactory,
                                               relayd_factory: RelaydFactory) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    acme = sdk(relayd)
    batch = create(acme, ask("a", "Classify: fine"))

    stranger = anthropic.Anthropic(api_key="rk_not-a-real-key", base_url=relayd.url,
                                   max_retries=0)
    for call in (lambda: stranger.messages.batches.list(),
                 lambda: stranger.messages.batches.retrieve(batch.id),
                 lambda: stranger.messages.batches.cancel(batch.id),
                 lambda: stranger.messages.batches.delete(batch.id),
                 lambda: create(stranger, ask("b", "hi"))):
        with pytest.raises(anthropic.AuthenticationError) as refused:
            call()
        assert refused.value.status_code == 401
        assert refused.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]

    with raw(relayd, **VERSION) as anonymous:  # no x-api-key at all
        for method, path in (("GET", "/v1/messages/batches"),
                             ("POST", "/v1/messages/batches"),
                             ("GET", f"/v1/messages/batches/{batch.id}"),
                             ("GET", f"/v1/messages/batches/{batch.id}/results")):
            reply = anonymous.request(method, path)
            assert reply.status_code == 401, (path, reply.text)
            assert reply.json() == {"type": "error", "error": {
                "type": "authentication_error", "message": reply.json()["error"]["message"]}}
            assert "x-api-key" in reply.json()["error"]["message"]
    # The SDK sends its key as `Authorization: Bearer` (2.x) or `x-api-key` (0.x, and the
    # API reference): both are read.
    key = relayd.key("acme")
    with raw(relayd, **{"Authorization": f"Bearer {key}"}, **VERSION) as bearer:
        assert [b["id"] for b in bearer.get("/v1/messages/batches").json()["data"]] == [
            batch.id]
    header_style = anthropic.Anthropic(api_key=None, auth_token=None, base_url=relayd.url,
                                       max_retries=0, default_headers={"x-api-key": key})
    assert [b.id for b in header_style.messages.batches.list()] == [batch.id]

    with raw(relayd, **{"x-api-key": relayd.key("acme")}) as unversioned:
        reply = unversioned.get("/v1/messages/batches")
        assert reply.status_code == 400
        assert reply.json()["error"]["type"] == "invalid_request_error"
        assert "anthropic-version" in reply.json()["error"]["message"]

    globex = sdk(relayd, "globex")
    missing = "msgbatch_" + "0" * 24
    for client, batch_id in ((acme, missing), (globex, batch.id)):
        for call in (lambda c=client, b=batch_id: c.messages.batches.retrieve(b),
                     lambda c=client, b=batch_id: c.messages.batches.cancel(b),
                     lambda c=client, b=batch_id: c.messages.batches.delete(b)):
            with pytest.raises(anthropic.NotFoundError) as missed:
                call()
            assert missed.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    assert ended(acme, batch.id).request_counts.succeeded == 1


def test_anthropic_batches_run_beside_the_other_dialects(simulator_factory: SimulatorFactory,
                                                         relayd_factory: RelaydFactory) -> None:
    """One queue: an OpenAI batch and a Relay job, listed where each belongs."""
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    mine = create(client, ask("a", "Classify: fine"))
    with relayd.client() as http:
        native = http.post("/v1/batches", json={"model": MODEL, "requests": [
            {"custom_id": "n", "messages": [{"role": "user", "content": "Classify: ok"}]}]})
        assert native.status_code == 200
        openai_batch = http.post("/v1/batches", json={
            "endpoint": "/v1/chat/completions", "completion_window": "24h",
            "requests": [{"custom_id": "o", "method": "POST", "url": "/v1/chat/completions",
                          "body": {"model": MODEL, "messages": [
                              {"role": "user", "content": "Classify: ok"}]}}]})
        assert openai_batch.status_code == 200
        listed = [b["id"] for b in http.get("/v1/batches?dialect=all").json()["data"]]
        assert mine.id in listed
    assert [b.id for b in client.messages.batches.list()] == [mine.id]  # its own list only
    ended(client, mine.id)
    assert text_of(results(client, mine.id)["a"]) == "positive"
