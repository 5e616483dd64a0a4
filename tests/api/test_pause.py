"""POST /v1/batches/{id}/pause and /resume: any dialect's job, rows in flight finish, no
row starts, the running slot is given up, cancel works on a paused job, an ended one
is 409."""

from __future__ import annotations

from tests.actors.harness import PRIMARY, wait_for
from tests.api.conftest import MakeRelay, Relay, assert_envelope, batch, openai_batch


async def test_a_paused_job_lets_rows_in_flight_finish_and_starts_none(
        make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"batch_concurrency": 2, "max_running_jobs": 1})
    job = await relay.submit(batch(*[f"row {i} BLOCK" for i in range(1, 7)]))
    await wait_for(lambda: relay.upstream.in_flight() == 2, what="two rows in flight")

    reply = await relay.ok("POST", f"/v1/batches/{job['id']}/pause")

    assert (reply["status"], reply["paused"]) == ("running", "operator")
    other = await relay.submit(batch("other"))  # the slot it gives up takes this one
    relay.upstream.gate.set()
    await relay.wait_status(other["id"], "completed")
    await relay.supervisor_gone(job["id"])
    paused = await relay.job(job["id"])
    assert (paused["status"], paused["paused"], paused["completed"]) == ("running", "operator", 2)
    assert len([p for p in relay.upstream.prompts() if "BLOCK" in p]) == 2

    resumed = await relay.ok("POST", f"/v1/batches/{job['id']}/resume")

    assert resumed["paused"] is None
    done = await relay.wait_status(job["id"], "completed")
    assert done["completed"] == 6
    assert len(relay.upstream.prompts()) == 7  # each row ran once


async def test_pause_takes_an_openai_batch_and_cancel_ends_it_paused(
        make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"max_running_jobs": 1})
    blocker = await relay.submit(batch("hold BLOCK"))
    await relay.wait_status(blocker["id"], "running")
    queued = await relay.submit(openai_batch("a", "b"))
    await relay.wait_status(queued["id"], "in_progress", "validating")

    paused = await relay.ok("POST", f"/v1/batches/{queued['id']}/pause")

    assert paused["id"].startswith("batch_") and paused["object"] == "batch"
    relay.upstream.gate.set()
    await relay.wait_status(blocker["id"], "completed")
    assert not relay.upstream.seen("a")  # paused: the free slot did not take it
    cancelled = await relay.ok("POST", f"/v1/batches/{queued['id']}/cancel")
    assert cancelled["status"] in ("cancelling", "cancelled")
    await relay.wait_status(queued["id"], "cancelled")
    assert not relay.upstream.seen("a")


async def test_pausing_an_ended_job_is_409_naming_why(relay: Relay) -> None:
    job = await relay.submit(batch("quick"))
    await relay.wait_status(job["id"], "completed")

    for action in ("pause", "resume"):
        status, body = await relay.call("POST", f"/v1/batches/{job['id']}/{action}")
        assert status == 409
        error = assert_envelope(body, code="batch_already_ended")
        assert "already ended (completed)" in error["message"]


async def test_pausing_an_unknown_job_is_404(relay: Relay) -> None:
    status, body = await relay.call("POST", "/v1/batches/batch_nope/pause")
    assert status == 404
    assert_envelope(body, code="not_found")


async def test_a_paused_job_counts_toward_its_completion_window(make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"max_running_jobs": 1})
    blocker = await relay.submit(batch("hold BLOCK"))
    await relay.wait_status(blocker["id"], "running")
    queued = await relay.submit(openai_batch("late"))
    await relay.wait_status(queued["id"], "in_progress", "validating")
    await relay.ok("POST", f"/v1/batches/{queued['id']}/pause")

    await relay.tick(relay.clock.advance(25 * 3600))  # past its 24 h window, paused

    await relay.wait_status(queued["id"], "expired")
    assert not relay.upstream.seen("late")


async def test_pause_takes_a_message_batch_id_and_answers_in_its_shape(
        make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"max_running_jobs": 1})
    blocker = await relay.submit(batch("hold BLOCK"))
    await relay.wait_status(blocker["id"], "running")
    version = {"anthropic-version": "2023-06-01"}
    body = {"requests": [{"custom_id": "m", "params": {
        "model": PRIMARY, "max_tokens": 8, "messages": [{"role": "user", "content": "msg"}]}}]}
    async with relay.client.post("/v1/messages/batches", json=body,
                                 headers={**relay.headers(), **version}) as resp:
        created = await resp.json()
    assert created["id"].startswith("msgbatch_")

    paused = await relay.ok("POST", f"/v1/batches/{created['id']}/pause")

    assert (paused["type"], paused["processing_status"]) == ("message_batch", "in_progress")
    relay.upstream.gate.set()
    await relay.wait_status(blocker["id"], "completed")
    assert not relay.upstream.seen("msg")
    await relay.ok("POST", f"/v1/batches/{created['id']}/resume")
    await wait_for(lambda: relay.upstream.seen("msg"), what="the resumed batch's row")
