"""Failures that read apart (`canceled`: failed rows that never ran) and the dead-letter
lifecycle over HTTP: re-driven rows say where they went, discarding, `dead_letter_open`,
and the workspace-wide list."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from tests.actors.harness import wait_for
from tests.api.conftest import MakeRelay, Relay, assert_envelope, batch


async def test_a_cancelled_job_counts_the_rows_that_never_ran(make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"batch_concurrency": 2})
    job = await relay.submit(batch(*(f"row {i} BLOCK" for i in range(1, 7))))
    await wait_for(lambda: relay.upstream.in_flight() == 2, what="two rows in flight")
    await relay.ok("POST", f"/v1/batches/{job['id']}/cancel")
    relay.upstream.gate.set()

    done = await relay.wait_status(job["id"], "canceled")

    assert (done["completed"], done["failed"], done["canceled"]) == (2, 4, 4)


async def test_a_finished_job_with_failed_rows_cancelled_none(relay: Relay) -> None:
    job = await relay.submit(batch("fine", "REFUSE"))
    done = await relay.wait_status(job["id"], "completed")
    assert (done["failed"], done["canceled"], done["dead_letter_open"]) == (1, 0, 0)


async def test_re_driven_and_discarded_rows_leave_the_open_dead_letter(relay: Relay) -> None:
    job = await relay.submit(batch("x OUTAGE", "y OUTAGE", "z OUTAGE", name="October"))
    one = f"/v1/batches/{job['id']}"
    done = await relay.wait_status(job["id"], "completed")
    assert (done["dead_letter"], done["dead_letter_open"]) == (3, 3)
    relay.upstream.outage = False

    retry = await relay.ok("POST", one + "/dead_letter/retry", json={"custom_ids": ["r-1"]})
    discarded = await relay.ok("POST", one + "/dead_letter/discard",
                               json={"custom_ids": ["r-2"]})

    assert (retry["name"], retry["retry_of"]) == ("October (dead-letter retry)", job["id"])
    assert discarded == {"id": job["id"], "object": "batch.dead_letter.discard",
                         "discarded": 1, "dead_letter_open": 1}
    entries = {e["custom_id"]: e for e in (await relay.ok("GET", one + "/dead_letter"))["data"]}
    assert {k: (e["state"], e["redriven_to"]) for k, e in entries.items()} == {
        "r-1": ("redriven", retry["id"]), "r-2": ("discarded", None), "r-3": ("open", None)}
    assert entries["r-2"]["discarded_at"].endswith("Z")
    source = await relay.job(job["id"])
    assert (source["dead_letter"], source["dead_letter_open"]) == (3, 1)

    everywhere = await relay.ok("GET", "/v1/dead_letter")
    assert [(e["batch_id"], e["batch_name"], e["custom_id"]) for e in everywhere["data"]] == [
        (job["id"], "October", "r-3")]


async def test_discarding_nothing_open_is_400(relay: Relay) -> None:
    job = await relay.submit(batch("fine"))
    await relay.wait_status(job["id"], "completed")
    status, body = await relay.call("POST", f"/v1/batches/{job['id']}/dead_letter/discard")
    assert status == 400
    assert_envelope(body, code="nothing_to_discard")


async def test_attempt_logs_are_iso_8601_to_the_millisecond(relay: Relay) -> None:
    job = await relay.submit(batch("x OUTAGE", name="stamps"))
    one = f"/v1/batches/{job['id']}"
    done = await relay.wait_status(job["id"], "completed")
    logs = [(await relay.ok("GET", one + "/dead_letter"))["data"][0]["attempt_log"],
            (await relay.ok("GET", "/v1/dead_letter"))["data"][0]["attempt_log"],
            (await relay.ok("GET", one + "/rows/r-1"))["attempt_log"]]

    stamps = [a["started_at"] for log in logs for a in log]
    assert stamps and all(isinstance(s, str) for s in stamps)
    parsed = [datetime.fromisoformat(s) for s in stamps]
    assert all(s.endswith("Z") and len(s) == len("2026-10-04T09:12:44.125Z") for s in stamps)
    assert all(p.tzinfo is not None for p in parsed)
    assert min(parsed) >= datetime.fromisoformat(done["created_at"]).replace(microsecond=0)


async def test_a_retry_past_the_row_cap_is_refused_naming_custom_ids(relay: Relay) -> None:
    job = await relay.submit(batch("x OUTAGE", "y OUTAGE", "z OUTAGE"))
    await relay.wait_status(job["id"], "completed")
    # The operator lowered `[limits] max_batch_rows` below the job's dead letter since.
    config = relay.services.config
    relay.services.config = replace(config, limits=replace(config.limits, max_batch_rows=2))
    retry = f"/v1/batches/{job['id']}/dead_letter/retry"
    status, body = await relay.call("POST", retry, json={})
    assert status == 400
    error = assert_envelope(body, code="too_many_rows")
    assert error["param"] == "custom_ids" and "at most 2" in error["message"]
    assert (await relay.job(job["id"]))["dead_letter_open"] == 3  # nothing taken
    relay.upstream.outage = False
    await relay.ok("POST", retry, json={"custom_ids": ["r-1", "r-2"]})
