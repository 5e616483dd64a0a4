"""`[retention] days` through the API: a job purged by the sweeper answers 404 in its
dialect's envelope, as if it had never been; one that ended recently stays."""

from __future__ import annotations

import asyncio

from daemon.domain.retention import DAY_S
from tests.api.conftest import MakeRelay, assert_envelope, batch, openai_batch


async def test_a_purged_job_answers_404_and_a_recent_one_stays(make_relay: MakeRelay) -> None:
    relay = await make_relay(retention={"days": 2})
    relay_job = await relay.submit(batch("one", "two"))
    status, openai_job = await relay.call("POST", "/v1/batches", json=openai_batch("three"))
    assert status == 200, openai_job
    for job in (relay_job, openai_job):
        await relay.wait_status(job["id"], "completed")
    relay.clock.advance(DAY_S)
    recent = await relay.submit(batch("four"))
    await relay.wait_status(recent["id"], "completed")
    sweeper = relay.daemon.sweeper
    await asyncio.to_thread(lambda: sweeper.tick(relay.clock() + 1.5 * DAY_S).get(timeout=10))
    for job in (relay_job, openai_job):
        for path in (f"/v1/batches/{job['id']}", f"/v1/batches/{job['id']}/results"):
            status, body = await relay.call("GET", path)
            assert status == 404, (path, body)
            assert_envelope(body)
    assert (await relay.job(recent["id"]))["status"] == "completed"
    listed = await relay.listing()
    assert [j["id"] for j in listed["data"]] == [recent["id"]]
