"""Workspace budgets through the API: refused at submit in each dialect's envelope,
paused across two jobs once spent (rows in flight finish, the overshoot bounded by
them), resumed when raised or when the period rolls over; shown in /v1/stats and
/metrics."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from daemon.domain import ids
from daemon.domain.budget import DAY_S, Budget, day_of
from daemon.domain.jobs import JobDraft
from tests.actors.harness import BACKUP, PRIMARY, wait_for
from tests.api.conftest import MakeRelay, Relay, assert_envelope, batch, openai_batch
from tests.api.test_events import EventStream

# Input cheap, output dear: a row's least cost at submit (its input, estimated from
# its size) is small, what it costs once answered (3 + 2 tokens) is 2,003,000 nano-USD.
PRICED = [{"alias": PRIMARY, "base_url": "http://upstream.test/v1",
           "input_usd_per_mtok": 1.0, "output_usd_per_mtok": 1000.0},
          {"alias": BACKUP, "base_url": "http://backup.test/v1"}]
ROW_NANO = 3 * 1000 + 2 * 1_000_000
VERSION = {"anthropic-version": "2023-06-01"}


async def priced(make_relay: MakeRelay, **gateway: Any) -> Relay:
    relay = await make_relay(models=PRICED, gateway={"batch_concurrency": 1, **gateway})
    relay.upstream.delay = 0.1  # longer than the scheduler's tick (the harness's 0.02 s)
    return relay


async def set_budget(relay: Relay, nano_usd: int | None, period: str = "month") -> None:
    budget = None if nano_usd is None else Budget(nano_usd, period)  # type: ignore[arg-type]
    await asyncio.to_thread(relay.services.repo.set_budget, "ws-a", budget, now=relay.clock())


async def spent(relay: Relay) -> int:
    ws = await asyncio.to_thread(relay.services.repo.workspace, "ws-a")
    assert ws is not None
    state = await asyncio.to_thread(relay.services.repo.budget_state, ws.id, now=relay.clock())
    assert state is not None
    return state.spent_nano_usd


async def test_two_jobs_pause_once_the_budget_is_spent_and_resume_when_raised(
        make_relay: MakeRelay) -> None:
    relay = await priced(make_relay, max_running_jobs=2)
    budget = 4 * ROW_NANO + ROW_NANO // 2  # spent during the fifth row
    await set_budget(relay, budget)
    first = await relay.submit(batch(*[f"a{i}" for i in range(10)]))
    second = await relay.submit(batch(*[f"b{i}" for i in range(10)]))

    for job_id in (first["id"], second["id"]):
        await wait_for(partial(_paused, relay, job_id, "budget"),
                       what=f"{job_id} paused by budget")
        await relay.supervisor_gone(job_id)
    used = await spent(relay)
    assert used >= budget
    # Each of the two jobs' one request slot: a row on the wire when the spend reached the
    # budget, one finished whose outcome waited for the group commit, and one started
    # before the pause reached it (a row takes longer than a tick): the README's bound.
    assert used - budget <= 3 * 2 * ROW_NANO
    rows_run = len(relay.upstream.prompts())
    assert rows_run == used // ROW_NANO
    shown = await relay.job(first["id"])
    assert (shown["status"], shown["paused"]) == ("running", "budget")

    status, body = await relay.call("POST", "/v1/batches", json=batch("more"))
    assert status == 429
    error = assert_envelope(body, code="budget_exceeded")
    assert error["param"] == "requests"
    assert "left of the workspace's budget" in error["message"]
    status, body = await relay.call("POST", "/v1/batches", json=openai_batch("more"))
    assert status == 429  # its records are read later, but nothing is left at all
    error = assert_envelope(body, code="budget_exceeded")
    assert error["param"] == "input_file_id"
    assert "Nothing is left of the workspace's budget" in error["message"]

    stats = await relay.ok("GET", "/v1/stats")
    assert stats["budget"]["spent"] is True
    assert (stats["budget"]["nano_usd"], stats["budget"]["spent_nano_usd"]) == (budget, used)
    async with relay.client.get("/metrics") as resp:
        text = await resp.text()
    series = dict(line.rsplit(" ", 1) for line in text.splitlines()
                  if line.startswith("relay_workspace_"))
    labels = '{period="month",workspace="ws-a"}'
    assert float(series["relay_workspace_budget_nano_usd" + labels]) == budget
    assert float(series["relay_workspace_spend_nano_usd" + labels]) == used

    await set_budget(relay, 100 * ROW_NANO)  # raised: both resume by themselves

    for job in (first, second):
        done = await relay.wait_status(job["id"], "completed", timeout=10)
        assert (done["completed"], done["paused"]) == (10, None)
    assert len(relay.upstream.prompts()) == 20  # every row ran once


async def test_a_new_period_resumes_a_job_its_budget_paused(make_relay: MakeRelay) -> None:
    relay = await priced(make_relay)
    await set_budget(relay, ROW_NANO, period="day")
    # The rows after the first wait upstream until the budget's pause is seen: however
    # late the scheduler's tick, the job cannot end before it.
    job = await relay.submit(batch("x1", "x2 BLOCK", "x3 BLOCK", "x4 BLOCK"))
    await wait_for(lambda: _paused(relay, job["id"], "budget"), what="paused by budget")
    relay.upstream.gate.set()
    await relay.supervisor_gone(job["id"])

    now = relay.clock()
    relay.clock.advance((day_of(now) + 1) * DAY_S - now + 1)  # past 00:00 UTC

    done = await relay.wait_status(job["id"], "completed", timeout=10)
    assert done["paused"] is None


async def test_an_operator_pause_and_a_budget_pause_hold_a_job_apart(
        make_relay: MakeRelay) -> None:
    relay = await priced(make_relay)
    await set_budget(relay, ROW_NANO)
    job = await relay.submit(batch("y1", "y2 BLOCK", "y3 BLOCK"))  # as above
    await wait_for(lambda: _paused(relay, job["id"], "budget"), what="paused by budget")
    paused = await relay.ok("POST", f"/v1/batches/{job['id']}/pause")
    assert paused["paused"] == "operator"  # both hold; the operator's shows first

    await set_budget(relay, None)  # the budget no longer holds it: the operator's pause does
    await wait_for(lambda: _unpaused_by_budget(relay, job["id"]), what="budget pause lifted")
    assert (await relay.job(job["id"]))["paused"] == "operator"

    relay.upstream.gate.set()
    await relay.ok("POST", f"/v1/batches/{job['id']}/resume")
    await relay.wait_status(job["id"], "completed", timeout=10)


async def test_every_dialect_refuses_a_batch_its_budget_cannot_cover(
        make_relay: MakeRelay) -> None:
    relay = await priced(make_relay)
    await set_budget(relay, 10)  # ten nano-USD: less than any row's input

    status, body = await relay.call("POST", "/v1/batches", json=batch("too dear"))
    assert status == 429
    assert assert_envelope(body, code="budget_exceeded")["param"] == "requests"
    anthropic = {"requests": [{"custom_id": "a", "params": {
        "model": PRIMARY, "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}}]}
    async with relay.client.post("/v1/messages/batches", json=anthropic,
                                 headers={**relay.headers(), **VERSION}) as resp:
        assert resp.status == 429
        refused = await resp.json()
    assert refused["type"] == "error"
    assert refused["error"]["type"] == "rate_limit_error"
    assert refused["error"]["message"].startswith("requests: ")
    assert "$0.00000001 left" in refused["error"]["message"]

    status, body = await relay.call("POST", "/v1/batches", json=openai_batch("too dear"))
    assert status == 429  # its records are read at submit when there is a budget
    assert assert_envelope(body, code="budget_exceeded")["param"] == "requests"
    line = (b'{"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", '
            b'"body": {"model": "%s", "messages": [{"role": "user", "content": "hi"}]}}\n'
            % PRIMARY.encode())
    uploaded = await relay.ok("POST", "/v1/files", data={"purpose": "batch", "file": line})
    status, body = await relay.call("POST", "/v1/batches", json={
        "input_file_id": uploaded["id"], "endpoint": "/v1/chat/completions",
        "completion_window": "24h"})
    assert status == 429
    error = assert_envelope(body, code="budget_exceeded")
    assert error["param"] == "input_file_id" and "left of the workspace's budget" in \
        error["message"]
    assert (await relay.listing())["data"] == []  # nothing was created
    assert relay.upstream.prompts() == []


async def _paused(relay: Relay, job_id: str, why: str) -> bool:
    return (await relay.job(job_id)).get("paused") == why


async def _unpaused_by_budget(relay: Relay, job_id: str) -> bool:
    job = await asyncio.to_thread(relay.services.repo.get_job, job_id)
    return job is not None and job.budget_paused_at is None


async def test_a_dry_run_says_whether_the_budget_covers_the_estimate(
        make_relay: MakeRelay) -> None:
    relay = await priced(make_relay)
    await set_budget(relay, 10**12)  # $1,000
    status, answer = await relay.call("POST", "/v1/batches?dry_run=true",
                                      json=batch("one", "two"))
    assert status == 200, answer
    budget = answer["budget"]
    assert budget["covers"] is True and budget["remaining_nano_usd"] == 10**12
    assert (budget["remaining_usd"], budget["period"]) == (1000.0, "month")
    assert budget["resets_at"].endswith("Z")
    await set_budget(relay, answer["cost_nano_usd"] - 1)  # a nano-dollar short
    status, answer = await relay.call("POST", "/v1/batches?dry_run=true",
                                      json=batch("one", "two"))
    assert status == 200 and answer["budget"]["covers"] is False


async def test_a_budget_pause_and_its_resume_are_each_an_event(make_relay: MakeRelay) -> None:
    relay = await priced(make_relay)
    await set_budget(relay, ROW_NANO)
    async with relay.client.get("/v1/events", headers=relay.headers()) as response:
        stream = EventStream(response)
        job = await relay.submit(batch("y1", "y2", "y3", "y4"))
        seen = await stream.until("job.paused", job["id"])
        assert seen[-1][1]["paused"] == "budget" and seen[-1][1]["status"] == "running"

        await set_budget(relay, 100 * ROW_NANO)

        seen = await stream.until("job.resumed", job["id"])
        assert seen[-1][1]["paused"] is None
    await relay.wait_status(job["id"], "completed", timeout=10)


async def test_a_budget_that_shrinks_before_validation_fails_the_openai_batch(
        make_relay: MakeRelay) -> None:
    """The validator's own check: a batch taken at submit whose budget was cut before
    its records were read fails with budget_exceeded, and nothing of it runs."""
    relay = await priced(make_relay)
    line = (b'{"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", '
            b'"body": {"model": "%s", "messages": [{"role": "user", "content": "hi"}]}}\n'
            % PRIMARY.encode())
    uploaded = await relay.ok("POST", "/v1/files", data={"purpose": "batch", "file": line})
    repo = relay.services.repo
    ws = await asyncio.to_thread(repo.workspace, "ws-a")
    assert ws is not None
    # Cut to ten nano-USD, then the batch is stored as the submit took it, past the
    # submit's own check: cut after it, the validator's tick could take the batch
    # first and validate it under the old budget.
    await set_budget(relay, 10)
    now = relay.clock()
    draft = JobDraft(id=ids.openai_batch_id(), workspace_id=ws.id, dialect="openai",
                     name="cut", model="", endpoint="/v1/chat/completions",
                     status="validating", priority=0, created_at=now,
                     input_file_id=uploaded["id"], expires_at=now + 86400)
    job = await asyncio.to_thread(repo.create_job, draft, [])

    relay.services.validator.validate(job.seq)  # unless its tick took it already

    failed = await relay.wait_status(job.id, "failed")
    assert failed["errors"]["data"][0]["code"] == "budget_exceeded"
    assert failed["errors"]["data"][0]["param"] == "input_file_id"
    assert relay.upstream.prompts() == []
