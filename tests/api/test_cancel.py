"""POST /v1/batches/{id}/cancel on queued, running, ended and scheduled jobs."""

from __future__ import annotations

import asyncio

from daemon.api.batches import request_cancel
from tests.actors.harness import answer, wait_for
from tests.api.conftest import MakeRelay, Relay, assert_envelope, batch


async def test_cancel_a_queued_job_fails_every_row_as_canceled(make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"max_running_jobs": 1})
    blocker = await relay.submit(batch("hold BLOCK"))
    await relay.wait_status(blocker["id"], "running")
    queued = await relay.submit(batch("a", "b", "c"))
    assert (await relay.job(queued["id"]))["status"] == "queued"

    reply = await relay.ok("POST", f"/v1/batches/{queued['id']}/cancel")

    assert reply["status"] == "canceled"
    assert reply["completed_at"] is not None
    assert await relay.results(queued["id"]) == [
        {"custom_id": f"r-{i}", "error": "canceled"} for i in (1, 2, 3)]
    assert ((await relay.job(queued["id"]))["failed"], relay.upstream.seen("a")) == (3, False)
    relay.upstream.gate.set()
    await relay.wait_status(blocker["id"], "completed")
    assert not any(p in ("a", "b", "c") for p in relay.upstream.prompts())


async def test_cancel_a_running_job_lets_rows_in_flight_finish(make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"batch_concurrency": 2})
    prompts = [f"row {i} BLOCK" for i in range(1, 7)]
    job = await relay.submit(batch(*prompts))
    await wait_for(lambda: relay.upstream.in_flight() == 2, what="two rows in flight")

    reply = await relay.ok("POST", f"/v1/batches/{job['id']}/cancel")

    assert reply["status"] == "running"  # cancelling, seen in the Relay view
    assert (await relay.job(job["id"]))["status"] == "running"
    assert await relay.results(job["id"]) == []
    relay.upstream.gate.set()
    done = await relay.wait_status(job["id"], "canceled")
    dispatched = set(relay.upstream.prompts())
    assert len(dispatched) == 2
    results = await relay.results(job["id"])
    for prompt, result in zip(prompts, results, strict=True):
        expected = {"content": answer(prompt)} if prompt in dispatched else {"error": "canceled"}
        assert {k: v for k, v in result.items() if k != "custom_id"} == expected
    assert (done["completed"], done["failed"]) == (2, 4)


async def test_cancel_an_ended_job_is_409(relay: Relay) -> None:
    job = await relay.submit(batch("quick"))
    await relay.wait_status(job["id"], "completed")

    status, body = await relay.call("POST", f"/v1/batches/{job['id']}/cancel")

    assert status == 409
    assert_envelope(body, code="batch_already_ended")
    assert (await relay.job(job["id"]))["status"] == "completed"


async def test_cancel_twice_is_409_the_second_time(make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"max_running_jobs": 1})
    await relay.submit(batch("hold BLOCK"))
    queued = await relay.submit(batch("later"))
    await relay.ok("POST", f"/v1/batches/{queued['id']}/cancel")
    status, _ = await relay.call("POST", f"/v1/batches/{queued['id']}/cancel")
    assert status == 409


async def test_a_second_cancel_of_a_running_job_is_409_and_changes_nothing(
        make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"batch_concurrency": 1})
    job = await relay.submit(batch("first BLOCK", "second"))
    await wait_for(lambda: relay.upstream.in_flight() == 1, what="the first row in flight")
    await relay.ok("POST", f"/v1/batches/{job['id']}/cancel")

    status, body = await relay.call("POST", f"/v1/batches/{job['id']}/cancel")

    assert status == 409
    assert_envelope(body, code="batch_already_cancelling")
    relay.upstream.gate.set()
    done = await relay.wait_status(job["id"], "canceled")
    assert (done["completed"], done["failed"]) == (1, 1)


async def test_cancel_an_unknown_job_is_404(relay: Relay) -> None:
    status, body = await relay.call("POST", "/v1/batches/" + "a" * 32 + "/cancel")
    assert status == 404
    assert_envelope(body, code="not_found")


async def test_cancel_a_cron_template_stops_its_runs(relay: Relay) -> None:
    template = await relay.submit(batch("every five", cron="*/5 * * * *"))

    reply = await relay.ok("POST", f"/v1/batches/{template['id']}/cancel")

    assert reply["status"] == "canceled"
    now = relay.clock.advance(3600)
    await relay.tick(now)
    await relay.tick(relay.clock.advance(3600))
    assert (await relay.listing(f"?template_id={template['id']}"))["data"] == []
    assert [j["id"] for j in (await relay.listing())["data"]] == [template["id"]]
    assert relay.upstream.calls == []


async def test_a_cancel_that_read_the_job_queued_does_not_end_it_behind_its_supervisor(
        make_relay: MakeRelay) -> None:
    """The handler reads the job (queued), then the scheduler admits it, then the handler
    writes the cancel. Replayed in that order by calling the handler's store step with the
    snapshot it would have read."""
    relay = await make_relay(gateway={"max_running_jobs": 1, "batch_concurrency": 1})
    blocker = await relay.submit(batch("hold BLOCK"))
    await relay.wait_status(blocker["id"], "running")
    job = await relay.submit(batch("j1 PAUSE", "j2", "j3", "j4"))
    repo = relay.services.repo
    read_queued = await asyncio.to_thread(repo.get_job, job["id"])
    assert read_queued is not None and read_queued.status == "queued"
    relay.upstream.gate.set()  # the blocker ends; the job is admitted; j1 goes upstream
    await wait_for(lambda: relay.upstream.seen("j1 PAUSE"), what="the job's first row")

    await asyncio.to_thread(request_cancel, relay.services, read_queued)
    relay.upstream.pause.set()

    await relay.wait_status(job["id"], "canceled")
    await relay.supervisor_gone(job["id"])  # every row it handed out has reported
    sent = [p for p in relay.upstream.prompts() if p.startswith("j")]
    assert sent == ["j1 PAUSE"], "rows of a canceled job kept going upstream"
