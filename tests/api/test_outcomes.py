"""Row outcomes through the real router: retries, fallback, dead letters, permanent
failures and bad upstream bodies; and re-driving the dead letters as a new job."""

from __future__ import annotations

import asyncio

from daemon.domain.jobs import RowRecord
from tests.actors.harness import BACKUP, PRIMARY, answer
from tests.api.conftest import Relay, assert_envelope, batch

MIXED = ("plain", "FLAKY twice", "NOPRIMARY", "OUTAGE everywhere", "REFUSE", "GARBAGE")


async def stored_rows(relay: Relay, job_id: str) -> dict[str, RowRecord]:
    job = await asyncio.to_thread(relay.services.repo.get_job, job_id)
    assert job is not None
    rows = await asyncio.to_thread(lambda: list(relay.services.repo.rows(job.seq)))
    return {r.custom_id: r for r in rows}


async def run_mixed(relay: Relay) -> tuple[dict, list[dict]]:
    job = await relay.submit(batch(*MIXED))
    done = await relay.wait_status(job["id"], "completed")
    return done, await relay.results(job["id"])


async def test_each_row_ends_by_its_own_fate(relay: Relay) -> None:
    done, results = await run_mixed(relay)

    by_id = {r["custom_id"]: r for r in results}
    assert [r["custom_id"] for r in results] == [f"r-{i}" for i in range(1, 7)]
    assert by_id["r-1"] == {"custom_id": "r-1", "content": answer("plain")}
    assert by_id["r-2"] == {"custom_id": "r-2", "content": answer("FLAKY twice")}
    assert by_id["r-3"] == {"custom_id": "r-3", "content": answer("NOPRIMARY")}
    assert "503" in by_id["r-4"]["error"] and "content" not in by_id["r-4"]
    assert "400" in by_id["r-5"]["error"]
    assert "not a JSON object" in by_id["r-6"]["error"]
    assert by_id["r-6"]["error"].startswith("invalid_response")
    assert (done["completed"], done["failed"], done["dead_letter"]) == (3, 3, 1)


async def test_counters_equal_what_results_and_dead_letters_say(relay: Relay) -> None:
    done, results = await run_mixed(relay)
    dead = await relay.ok("GET", f"/v1/batches/{done['id']}/dead_letter")

    assert done["completed"] == sum("content" in r for r in results)
    assert done["failed"] == sum("error" in r for r in results)
    assert done["dead_letter"] == len(dead["data"])
    assert done["completed"] + done["failed"] == done["total"] == len(MIXED)


async def test_retries_and_fallback_are_what_the_upstream_saw(relay: Relay) -> None:
    done, _ = await run_mixed(relay)
    rows = await stored_rows(relay, done["id"])
    calls = relay.upstream.calls

    assert rows["r-2"].attempts == 3 and rows["r-2"].status == "completed"
    assert calls.count((PRIMARY, "FLAKY twice")) == 3
    assert [a for a, p in calls if p == "NOPRIMARY"] == [PRIMARY] * 3 + [BACKUP]
    assert rows["r-3"].model == BACKUP
    # Permanent failures are not retried on a model, but the fallback is still tried.
    assert [a for a, p in calls if p == "REFUSE"] == [PRIMARY, BACKUP]
    assert rows["r-5"].attempts == 2 and not rows["r-5"].dead_letter
    assert [a for a, p in calls if p == "GARBAGE"] == [PRIMARY, BACKUP]
    assert not rows["r-6"].dead_letter
    assert [a for a, p in calls if p == "OUTAGE everywhere"] == [PRIMARY] * 3 + [BACKUP] * 3


async def test_dead_letter_lists_rows_that_failed_transiently_everywhere(relay: Relay) -> None:
    done, _ = await run_mixed(relay)

    dead = (await relay.ok("GET", f"/v1/batches/{done['id']}/dead_letter"))["data"]

    assert [d["custom_id"] for d in dead] == ["r-4"]
    entry = dead[0]
    assert entry["attempts"] == 6
    assert entry["models"] == [PRIMARY, BACKUP]
    assert "503" in entry["last_error"]
    assert [(a["model"], a["status_code"]) for a in entry["attempt_log"]] == (
        [(PRIMARY, 503)] * 3 + [(BACKUP, 503)] * 3)
    assert entry["messages"] == [{"role": "user", "content": "OUTAGE everywhere"}]


async def test_a_bad_body_does_not_stop_the_job(relay: Relay) -> None:
    job = await relay.submit(batch("GARBAGE first", *[f"after {i}" for i in range(8)]))
    done = await relay.wait_status(job["id"], "completed")
    results = await relay.results(job["id"])
    assert (done["completed"], done["failed"]) == (8, 1)
    assert [r.get("content") for r in results[1:]] == [answer(f"after {i}") for i in range(8)]


async def test_retry_dead_letters_makes_a_new_job_of_just_those_rows(relay: Relay) -> None:
    job = await relay.submit(batch("ok", "OUTAGE one", "OUTAGE two", "REFUSE"))
    await relay.wait_status(job["id"], "completed")
    relay.upstream.outage = False

    retry = await relay.ok("POST", f"/v1/batches/{job['id']}/dead_letter/retry")

    assert retry["id"] != job["id"]
    assert (retry["status"], retry["total"]) == ("queued", 2)
    await relay.wait_status(retry["id"], "completed")
    assert await relay.results(retry["id"]) == [
        {"custom_id": "r-2", "content": answer("OUTAGE one")},
        {"custom_id": "r-3", "content": answer("OUTAGE two")},
    ]
    assert (await relay.job(job["id"]))["dead_letter"] == 2  # the source is left as it was


async def test_retry_only_the_given_custom_ids(relay: Relay) -> None:
    job = await relay.submit(batch("OUTAGE one", "OUTAGE two", "OUTAGE three"))
    await relay.wait_status(job["id"], "completed")

    retry = await relay.ok("POST", f"/v1/batches/{job['id']}/dead_letter/retry",
                           json={"custom_ids": ["r-3", "r-1"]})

    assert retry["total"] == 2
    await relay.wait_status(retry["id"], "completed")
    assert [r["custom_id"] for r in await relay.results(retry["id"])] == ["r-1", "r-3"]


async def test_retry_without_dead_letters_is_400(relay: Relay) -> None:
    job = await relay.submit(batch("ok", "REFUSE"))
    await relay.wait_status(job["id"], "completed")

    status, body = await relay.call("POST", f"/v1/batches/{job['id']}/dead_letter/retry")

    assert status == 400
    assert_envelope(body, code="nothing_to_retry")
    assert len((await relay.listing())["data"]) == 1


async def test_retry_of_custom_ids_that_are_not_dead_lettered_is_400(relay: Relay) -> None:
    job = await relay.submit(batch("ok", "OUTAGE"))
    await relay.wait_status(job["id"], "completed")

    status, body = await relay.call("POST", f"/v1/batches/{job['id']}/dead_letter/retry",
                                    json={"custom_ids": ["r-1"]})

    assert status == 400
    assert assert_envelope(body)["param"] == "custom_ids"


async def test_retry_with_a_bad_custom_ids_value_is_400(relay: Relay) -> None:
    job = await relay.submit(batch("OUTAGE"))
    await relay.wait_status(job["id"], "completed")
    status, body = await relay.call("POST", f"/v1/batches/{job['id']}/dead_letter/retry",
                                    json={"custom_ids": "r-1"})
    assert status == 400
    assert assert_envelope(body)["param"] == "custom_ids"
