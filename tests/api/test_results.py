"""GET /v1/batches/{id}/results: every result in input order; with `limit`, a page at a
time after the row `after` names, with `has_more` and `last_id`."""

from __future__ import annotations

import pytest

from tests.actors.harness import answer
from tests.api.conftest import Relay, assert_envelope, batch

PROMPTS = [f"row {i}" for i in range(1, 8)]


async def finished(relay: Relay) -> str:
    job = await relay.submit(batch(*PROMPTS))
    await relay.wait_status(job["id"], "completed")
    return job["id"]


async def test_without_limit_everything_comes_back_as_before(relay: Relay) -> None:
    job_id = await finished(relay)
    whole = await relay.ok("GET", f"/v1/batches/{job_id}/results")
    assert set(whole) == {"id", "object", "status", "data"}
    assert [r["custom_id"] for r in whole["data"]] == [f"r-{i}" for i in range(1, 8)]


async def test_pages_follow_input_order_until_has_more_is_false(relay: Relay) -> None:
    job_id = await finished(relay)
    seen, after, pages = [], "", 0
    while True:
        page = await relay.results_page(job_id, f"?limit=3{after}")
        seen += page["data"]
        pages += 1
        assert page["last_id"] == page["data"][-1]["custom_id"]
        assert (page["id"], page["object"], page["status"]) == (job_id, "list", "completed")
        if not page["has_more"]:
            break
        after = f"&after={page['last_id']}"
    assert pages == 3
    assert seen == [{"custom_id": f"r-{i}", "content": answer(p)}
                    for i, p in enumerate(PROMPTS, 1)]


async def test_a_page_that_ends_the_results_exactly_has_no_more(relay: Relay) -> None:
    job_id = await finished(relay)
    page = await relay.results_page(job_id, "?limit=7")
    assert (len(page["data"]), page["has_more"], page["last_id"]) == (7, False, "r-7")
    past = await relay.results_page(job_id, "?limit=7&after=r-7")
    assert (past["data"], past["has_more"], past["last_id"]) == ([], False, None)


async def test_after_alone_gives_the_rest(relay: Relay) -> None:
    job_id = await finished(relay)
    rest = await relay.results_page(job_id, "?after=r-5")
    assert ([r["custom_id"] for r in rest["data"]], rest["has_more"]) == (["r-6", "r-7"],
                                                                           False)


async def test_a_job_that_has_not_ended_has_an_empty_page(relay: Relay) -> None:
    job = await relay.submit(batch("hold BLOCK", "later"))
    await relay.wait_status(job["id"], "running")
    page = await relay.results_page(job["id"], "?limit=10&after=r-1")
    assert (page["status"], page["data"], page["has_more"], page["last_id"]) == (
        "running", [], False, None)
    relay.upstream.gate.set()


@pytest.mark.parametrize("limit", ["0", "10001", "x", "-1", "2.5", ""])
async def test_a_bad_limit_is_400(relay: Relay, limit: str) -> None:
    job_id = await finished(relay)
    status, body = await relay.call("GET", f"/v1/batches/{job_id}/results?limit={limit}")
    assert status == 400
    assert assert_envelope(body)["param"] == "limit"


async def test_the_largest_limit_is_accepted(relay: Relay) -> None:
    job_id = await finished(relay)
    assert len((await relay.results_page(job_id, "?limit=10000"))["data"]) == 7


@pytest.mark.parametrize("after", ["r-99", "", "R-1"])
async def test_an_unknown_after_is_400(relay: Relay, after: str) -> None:
    job_id = await finished(relay)
    status, body = await relay.call("GET",
                                    f"/v1/batches/{job_id}/results?limit=2&after={after}")
    assert status == 400
    assert assert_envelope(body)["param"] == "after"


async def test_the_whole_list_streams_a_page_of_rows_at_a_time(
        relay: Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("daemon.api.batches.RESULTS_STREAM_PAGE", 3)  # 7 rows: three pages
    job_id = await finished(relay)
    async with relay.client.get(f"/v1/batches/{job_id}/results",
                                headers=relay.headers()) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
        assert "Content-Length" not in resp.headers  # chunked: never built whole
        whole = await resp.json()
    paged = await relay.results_page(job_id, "?limit=10")
    assert whole == {"id": job_id, "object": "list", "status": "completed",
                     "data": paged["data"]}
    assert len(whole["data"]) == 7
