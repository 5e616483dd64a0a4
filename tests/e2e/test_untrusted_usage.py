"""An upstream's numbers are untrusted, end to end: a real relayd on a real simulator
that answers some rows with usage no call can have (`[sim:prompt_tokens=N]`): past 64
bits, 10^16, negative. Found so: the group write raised `OverflowError` on SQLite and
was "kept, will retry" every 5 s forever, the job never ended, a cancel left it
`cancelling`, and four such jobs held every slot (`max_running_jobs = 4`). Now those
rows fail `invalid_response` with the answer kept, and everything else runs.

On PostgreSQL: a cancel ends a job within 10 s although the store keeps refusing its
outcomes with a storage fault (a trigger raising `disk_full` on outcome writes only, so
the ending itself can write)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import psycopg
import pytest

from daemon.testing import Simulator
from tests.e2e.harness import Relayd, config_tables, rows, wait_for_status, wait_until
from tests.e2e.test_workflows import TEXT, enable, lines, record, run_batch
from tests.store import postgres

pytestmark = pytest.mark.e2e

HUGE = 9223372036854775813  # 2^63 + 5, the number
LIMIT = "not an integer from 0 to 1000000000"
UNTRUSTED = {  # custom_id: (directive, the field it breaks, its value as the error quotes it)
    "past-64-bits": (f"[sim:prompt_tokens={HUGE}]", "prompt_tokens", str(HUGE)),
    "ten-to-16": ("[sim:completion_tokens=10000000000000000]", "completion_tokens",
                  "10000000000000000"),
    "negative": ("[sim:prompt_tokens=-1000000]", "prompt_tokens", "-1000000"),
}


def untrusted_rows(prefix: str = "") -> list[dict[str, Any]]:
    return [{"custom_id": f"{prefix}{custom_id}",
             "messages": [{"role": "user", "content": f"Classify: fine {directive}"}]}
            for custom_id, (directive, _, _) in UNTRUSTED.items()]


def submit(client: httpx.Client, requests: list[dict[str, Any]], name: str = "usage") -> str:
    created = client.post("/v1/batches", json={"name": name, "model": "gpt-4o-mini",
                                               "requests": requests})
    assert created.status_code == 200, created.text
    return created.json()["id"]


def detail(client: httpx.Client, job_id: str, custom_id: str) -> dict[str, Any]:
    return client.get(f"/v1/batches/{job_id}/rows/{custom_id}").json()


def test_untrusted_usage_fails_its_row_and_the_job_completes(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    with relayd.client() as client:
        job_id = submit(client, rows(10) + untrusted_rows())
        job = wait_for_status(client, job_id, "completed", timeout=60)
        assert (job["completed"], job["failed"], job["dead_letter"]) == (10, 3, 0)

        results = client.get(f"/v1/batches/{job_id}/results").json()["data"]
        by_id = {item["custom_id"]: item for item in results}
        for custom_id, (_, field, value) in UNTRUSTED.items():
            problem = f"usage.{field} = {value}, {LIMIT}"
            assert by_id[custom_id]["error"] == (
                f"invalid_response: gpt-4o-mini answered 200 with {problem}; fallback "
                f"backup: answered 200 with {problem} (not retried)")
            row = detail(client, job_id, custom_id)
            assert (row["error_code"], row["dead_letter"]) == ("invalid_response", False)
            assert str(row["response"]["usage"][field]) == value  # the answer, kept as is
            assert row["response"]["object"] == "chat.completion"

        # The job's totals are the good rows' alone, priced at 0.15 / 0.60 USD per Mtok.
        good = [detail(client, job_id, f"r-{i}")["response"]["usage"] for i in range(10)]
        prompt = sum(u["prompt_tokens"] for u in good)
        completion = sum(u["completion_tokens"] for u in good)
        usage = job["usage"]
        assert prompt > 0 and completion > 0
        assert (usage["input_tokens"], usage["output_tokens"]) == (prompt, completion)
        assert usage["cost_nano_usd"] == 150 * prompt + 600 * completion
    assert "kept, will retry" not in relayd.log_tail(20_000)


def test_four_jobs_of_untrusted_usage_do_not_hold_the_slots(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    """The attack's config: four running jobs at once, each with rows that wedged their
    job before. A fifth, from another workspace, runs once slots free, and all end."""
    sim = simulator_factory()
    relayd = relayd_factory(sim, running=4).start()
    with relayd.client("attacker") as attacker, relayd.client("victim") as victim:
        poisoned = [submit(attacker, untrusted_rows() + rows(2, prefix=f"a{n}"), f"a{n}")
                    for n in range(4)]
        wait_until(lambda: sum(attacker.get(f"/v1/batches/{i}").json()["status"]
                               in ("running", "completed") for i in poisoned) == 4)
        theirs = submit(victim, rows(5, prefix="v"), "victim")
        done = wait_for_status(victim, theirs, "completed", timeout=60)
        assert (done["completed"], done["failed"]) == (5, 0)
        for job_id in poisoned:
            ended = wait_for_status(attacker, job_id, "completed", timeout=60)
            assert (ended["completed"], ended["failed"]) == (2, 3)
            assert ended["usage"]["cost_nano_usd"] >= 0


def test_a_workflows_requests_with_untrusted_usage_are_error_results_unbilled(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    """The map requests answer −10^6 prompt tokens: each is an `invalid_response` error
    result for the callback, the record still completes (the reduce request is clean),
    and it is billed for the reduce request alone."""
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    enable(relayd)

    client, done = run_batch(relayd, [record("flow", sim, f"{TEXT} [sim:prompt_tokens=-1000000]")])

    assert (done.status, done.request_counts.completed) == ("completed", 1)
    events = sim.workflow_events()
    mapped = events[1]["body"]["results"]
    assert [r["error"]["code"] for r in mapped] == ["invalid_response"] * 4
    assert "usage.prompt_tokens = -1000000" in mapped[0]["error"]["message"]
    [reduced] = events[2]["body"]["results"]
    billed = reduced["body"]["usage"]
    body = lines(client, done.output_file_id)["flow"]["response"]["body"]
    assert body["openrelay"]["input_tokens"] == billed["prompt_tokens"] > 0
    assert (done.usage.input_tokens, done.usage.output_tokens) == (
        billed["prompt_tokens"], billed["completion_tokens"])


REFUSE_OUTCOMES = """
CREATE FUNCTION refuse_outcomes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.attempts > 0 THEN  -- an outcome; leases and the ending's never-ran rows pass
        RAISE EXCEPTION 'could not extend file: No space left on device'
            USING ERRCODE = '53100';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER refuse_outcomes BEFORE UPDATE ON "row"
    FOR EACH ROW EXECUTE FUNCTION refuse_outcomes();
"""


def test_a_cancel_ends_a_job_whose_outcome_writes_keep_failing(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "30")
    relayd = relayd_factory(sim, concurrency=4)
    with postgres.fresh_schema() as url:
        relayd.write_config(**config_tables(sim, concurrency=4), database={"url": url})
        relayd.start()
        try:
            with relayd.client() as client:
                job_id = submit(client, rows(400))
                wait_until(lambda: client.get(f"/v1/batches/{job_id}").json()["completed"]
                           >= 8)
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute(REFUSE_OUTCOMES)
                wait_until(lambda: "kept, will retry" in relayd.log_tail(20_000))
                before = client.get(f"/v1/batches/{job_id}").json()["completed"]

                asked = time.monotonic()
                answer = client.post(f"/v1/batches/{job_id}/cancel")
                assert answer.status_code == 200, answer.text
                job = wait_for_status(client, job_id, "canceled", timeout=10)
                assert time.monotonic() - asked < 10

                # The outcomes the store refused were dropped: those rows read as never
                # run, like every row the cancel kept from starting.
                assert job["completed"] == before
                assert job["completed"] + job["failed"] == 400
                assert job["canceled"] == job["failed"] == 400 - before
        finally:
            relayd.stop()
        assert "outcomes could not be stored" in relayd.log_tail(20_000)
