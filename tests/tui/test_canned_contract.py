"""Every answer `relaytui.testing.FakeRelay` can give, read through a real `RelayClient`
over `httpx.MockTransport`, validates against relayd's OpenAPI document: each route's
answer for every canned job of both dialects, the list envelopes, the refusals, the
health answers and every event of the stream. And the check is real: a shape relayd
cannot produce (the batch objects the old hand-built fake served) fails it."""

from __future__ import annotations

import threading

import pytest

from relaytui.client import RelayClient, RelayError
from relaytui.testing import (
    WORKFLOW_JOB,
    FakeRelay,
    batch,
    canned_jobs,
    job_id,
    openai_batch,
    relay_job,
)
from relaytui.testing_http import ROUTES
from tests.tui.contract import ContractCheck, answer_problems


def every_read(client: RelayClient, relay: FakeRelay) -> None:
    """Each read route, for each canned job (both dialects) and each row."""
    client.models(), client.stats(), client.stats(minutes=15), client.nodes()
    client.all_dead_letter(), client.all_dead_letter(state="all")
    for dialect in ("all", "relay", "openai"):
        client.job_listing(page=3, dialect=dialect)
    for job in list(relay.jobs_by_id):
        client.job(job), client.dead_letter(job), client.workflows(job)
        results = client.results(job)
        list(client.result_pages(job, page=4))
        for item in results["data"]:
            client.row(job, item["custom_id"])
    for custom_id in ("notes-2.4", "notes-2.5", "notes-3.0"):  # workflow records
        client.row(WORKFLOW_JOB, custom_id)


def every_write(client: RelayClient) -> None:
    client.submit(model="gpt-4o-mini", requests=[{"messages": [
        {"role": "user", "content": "hi"}]}], name="one", webhook_url="https://h.example/x")
    client.submit(model="backup", requests=[{"messages": [
        {"role": "user", "content": "hi"}]}], cron="0 2 * * *")
    client.cancel(job_id(1)), client.cancel(job_id(6, dialect="openai"))
    assert client.pause(job_id(2))["paused"] == "operator"
    assert client.resume(job_id(2))["paused"] is None
    records = b'{"custom_id": "row-1", "method": "POST", "url": "/v1/chat/completions", ' \
        b'"body": {"model": "gpt-4o-mini", "messages": []}}\n'
    client.create_batch(client.upload("t.jsonl", records)["id"], metadata={"name": "t"})
    client.discard_dead_letter(job_id(5), ["review-0042"])
    client.retry_dead_letter(job_id(5), ["review-0010"])
    client.retry_dead_letter(job_id(5), force=True)


def every_refusal(client: RelayClient) -> list[RelayError]:
    refused = []
    for call in (lambda: client.job("f" * 32), lambda: client.results("f" * 32),
                 lambda: client.row(job_id(5), "no-such-row"),
                 lambda: client.results(job_id(5), limit=2, after="no-such-row"),
                 lambda: client.submit(model="gone", requests=[{"messages": []}]),
                 lambda: client.submit(model="backup", requests=[{"messages": []}],
                                       cron="daily"),
                 lambda: client.retry_dead_letter(job_id(9)),
                 lambda: client.pause(job_id(5)),
                 lambda: client.discard_dead_letter(job_id(9))):
        with pytest.raises(RelayError) as caught:
            call()
        refused.append(caught.value)
    return refused


def test_every_route_answers_in_a_shape_relayd_documents(
        served_contract: ContractCheck) -> None:
    relay = FakeRelay(replay=False, workflows=True)
    with relay.client() as client:
        every_read(client, relay)
        every_write(client)
        refused = every_refusal(client)
        relay.health_answer = {"status": "degraded", "reason": "insufficient_storage",
                               "detail": "No space left on device", "since": 1.0}
        assert client.health()["status"] == "degraded"
    assert not served_contract.found, "\n".join(served_contract.found[:20])
    assert {e.status for e in refused} == {400, 404, 409}
    assert all(e.message for e in refused)
    answered = {(method, route.pattern.pattern) for method, path, status, _ in
                served_contract.served if status == 200
                for route in ROUTES if route.method == method
                and route.pattern.fullmatch(path)}
    assert answered == {(r.method, r.pattern.pattern) for r in ROUTES}  # every route


def test_every_event_of_the_stream_is_one_relayd_sends(
        served_contract: ContractCheck) -> None:
    relay = FakeRelay()  # replays snapshots, then 15 rounds of progress
    with relay.client() as client:
        stream = client.open_events()
        seen: list[str] = []
        reader = threading.Thread(target=lambda: seen.extend(e.type for e in stream))
        reader.start()
        assert relay.replayed.wait(10)
        stream.close()  # wakes the read that waits past the replay
        reader.join(10)
        assert not reader.is_alive()
    assert seen.count("job.progress") == 30 and "job.snapshot" in seen
    events = [s for s in served_contract.served if s[3] is not None]
    assert len(events) == len(seen)
    assert not served_contract.found, "\n".join(served_contract.found[:20])


def test_the_check_refuses_what_the_old_hand_built_fake_served() -> None:
    job = next(j for j in canned_jobs() if j["dialect"] == "openai")
    old_batch = {k: v for k, v in openai_batch(job).items()
                 if k not in ("completion_window", "output_file_id", "error_file_id",
                              "expires_at")}
    found = answer_problems("GET", f"/v1/batches/{job['id']}", 200, old_batch, None)
    assert found  # not a Batch relayd can produce
    relay = next(j for j in canned_jobs() if j["dialect"] == "relay")
    old_job = {k: v for k, v in relay_job(relay).items()
               if k not in ("webhookUrl", "retry_of", "usage")}
    assert answer_problems("GET", f"/v1/batches/{relay['id']}", 200, old_job, None)
    assert answer_problems("GET", "/v1/events", 200, {"id": "x"}, "job.progress")
    assert answer_problems("GET", "/v1/events", 200, {}, "job.exploded")
    assert not answer_problems("GET", f"/v1/batches/{relay['id']}", 200, batch(relay), None)
