"""A Relay job's `deadline` (and `strict_deadline`): flagged at risk when the estimate
at the model's limits says it cannot be met, refused `cannot_meet_deadline` when
strict, ahead of equal-priority jobs without one in the queue, and, once passed, the
job ends completed with its unrun rows failed `deadline_passed`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.actors.harness import BACKUP, PRIMARY, wait_for
from tests.api.conftest import MakeRelay, Relay, assert_envelope, batch

SLOW = [{"alias": PRIMARY, "base_url": "http://upstream.test/v1", "rpm": 1},
        {"alias": BACKUP, "base_url": "http://backup.test/v1"}]  # a row a minute


async def test_a_deadline_the_estimate_misses_is_taken_and_flagged(
        make_relay: MakeRelay) -> None:
    relay = await make_relay(models=SLOW, gateway={"max_running_jobs": 1})
    blocker = await relay.submit(batch("hold BLOCK"))  # keeps the next jobs queued
    await relay.wait_status(blocker["id"], "running")

    job = await relay.submit({**batch(*[f"row {i}" for i in range(90)]), "deadline": "1h"})

    assert job["deadline_at_risk"] is True  # 90 rows at 1 rpm: 90 minutes
    assert job["deadline_estimate"]["drain_s"] == pytest.approx(90 * 60, rel=0.01)
    assert job["deadline"] == job["deadline"].replace("+00:00", "")  # ISO, Z
    fits = await relay.submit({**batch("one"), "deadline": "1h"})
    assert fits["deadline_at_risk"] is False
    relay.upstream.gate.set()


async def test_a_strict_deadline_that_cannot_be_met_is_refused_and_stores_nothing(
        make_relay: MakeRelay) -> None:
    relay = await make_relay(models=SLOW)
    status, answer = await relay.call("POST", "/v1/batches", json={
        **batch(*[f"row {i}" for i in range(90)]), "deadline": "1h",
        "strict_deadline": True})

    assert status == 400, answer
    error = assert_envelope(answer)
    assert (error["code"], error["param"]) == ("cannot_meet_deadline", "deadline")
    assert "5400 s" in error["message"] and "3600 s" in error["message"]
    assert (await relay.listing())["data"] == []


async def test_a_dry_run_lists_a_strict_deadline_the_submit_would_refuse(
        make_relay: MakeRelay) -> None:
    relay = await make_relay(models=SLOW)
    body = {**batch(*[f"row {i}" for i in range(90)]), "deadline": "1h"}
    status, answer = await relay.call("POST", "/v1/batches?dry_run=true",
                                      json={**body, "strict_deadline": True})
    assert status == 200, answer
    [problem] = answer["problems"]
    assert assert_envelope(problem)["code"] == "cannot_meet_deadline"
    status, answer = await relay.call("POST", "/v1/batches?dry_run=true", json=body)
    assert (status, answer["problems"]) == (200, [])  # flagged at submit, not refused


@pytest.mark.parametrize(("field", "value", "param", "words"), [
    ("deadline", "soon", "deadline", "neither an RFC 3339 time"),
    ("deadline", "2020-01-01T00:00:00Z", "deadline", "has passed already"),
    ("deadline", "2030-01-01T00:00:00", "deadline", "with its offset"),
    ("deadline", 3600, "deadline", "must be an RFC 3339 time"),
    ("deadline", "400d", "deadline", "more than a year away"),
    ("strict_deadline", "yes", "strict_deadline", "true or false"),
])
async def test_a_bad_deadline_is_400_naming_it(relay: Relay, field: str, value: Any,
                                               param: str, words: str) -> None:
    status, answer = await relay.call("POST", "/v1/batches",
                                      json={**batch("a"), "deadline": "1h", field: value})
    assert status == 400, answer
    error = assert_envelope(answer)
    assert error["param"] == param and words in error["message"]
    assert (await relay.listing())["data"] == []


async def test_strict_without_a_deadline_and_a_deadline_with_cron_are_refused(
        relay: Relay) -> None:
    status, answer = await relay.call("POST", "/v1/batches",
                                      json={**batch("a"), "strict_deadline": True})
    assert (status, assert_envelope(answer)["param"]) == (400, "strict_deadline")
    status, answer = await relay.call("POST", "/v1/batches", json={
        **batch("a"), "deadline": "1h", "cron": "0 * * * *"})
    assert (status, assert_envelope(answer)["param"]) == (400, "deadline")


async def test_the_earlier_deadline_runs_first_among_equal_priorities(
        make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"max_running_jobs": 1})
    blocker = await relay.submit(batch("hold BLOCK"))
    await relay.wait_status(blocker["id"], "running")
    none = await relay.submit({**batch("none"), "name": "no deadline"})
    late = await relay.submit({**batch("late"), "deadline": "5h"})
    soon = await relay.submit({**batch("soon"), "deadline": "2h"})
    higher = await relay.submit({**batch("higher"), "priority": 1})

    relay.upstream.gate.set()
    for job in (none, late, soon, higher):
        await relay.wait_status(job["id"], "completed")

    order = [p for p in relay.upstream.prompts() if p in ("none", "late", "soon", "higher")]
    assert order == ["higher", "soon", "late", "none"]


async def test_a_passed_deadline_completes_the_job_and_fails_its_unrun_rows(
        make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"batch_concurrency": 2, "max_running_jobs": 1})
    job = await relay.submit({**batch("a", "b", *[f"later {i} BLOCK" for i in range(6)]),
                              "deadline": "30m"})
    await wait_for(lambda: relay.upstream.in_flight() == 2, what="two rows blocked")

    await relay.tick(relay.clock.advance(31 * 60))
    relay.upstream.gate.set()  # the rows in flight finish, as on a cancel

    done = await relay.wait_status(job["id"], "completed")
    assert (done["completed"], done["failed"], done["canceled"]) == (4, 4, 4)
    results = await relay.ok("GET", f"/v1/batches/{job['id']}/results")
    assert results["status"] == "completed"
    listed = await relay.ok("GET", "/v1/batches?dialect=relay&status=completed")
    assert [j["id"] for j in listed["data"]] == [job["id"]]
    errors = [r["error"] for r in results["data"] if "error" in r]
    assert len(errors) == 4 and all(e.startswith("deadline_passed: ") for e in errors)
    assert len(relay.upstream.prompts()) == 4  # nothing started after the deadline
