"""GET /v1/batches: newest first, paging with `limit` and `after`, status and template
filters, and the workspace boundary."""

from __future__ import annotations

import pytest

from tests.api.conftest import MakeRelay, Relay, assert_envelope, batch


async def submit_three(relay: Relay) -> list[str]:
    return [(await relay.submit(batch(f"job {i}", name=f"job {i}")))["id"] for i in range(3)]


async def test_newest_first(relay: Relay) -> None:
    ids = await submit_three(relay)

    page = await relay.listing()

    assert [j["id"] for j in page["data"]] == ids[::-1]
    assert (page["object"], page["has_more"]) == ("list", False)
    assert (page["first_id"], page["last_id"]) == (ids[2], ids[0])
    assert all(j["object"] == "batch" for j in page["data"])


async def test_paging_with_limit_and_after(relay: Relay) -> None:
    ids = await submit_three(relay)

    first = await relay.listing("?limit=2")
    assert [j["id"] for j in first["data"]] == [ids[2], ids[1]]
    assert first["has_more"] is True

    second = await relay.listing(f"?limit=2&after={first['last_id']}")
    assert [j["id"] for j in second["data"]] == [ids[0]]
    assert second["has_more"] is False

    past_the_end = await relay.listing(f"?limit=2&after={ids[0]}")
    assert (past_the_end["data"], past_the_end["has_more"]) == ([], False)
    assert past_the_end["first_id"] is None


async def test_limit_exactly_filling_the_page_has_no_more(relay: Relay) -> None:
    await submit_three(relay)
    page = await relay.listing("?limit=3")
    assert (len(page["data"]), page["has_more"]) == (3, False)


@pytest.mark.parametrize("limit", ["0", "101", "x", "-1", "2.5"])
async def test_bad_limit_is_400(relay: Relay, limit: str) -> None:
    status, body = await relay.call("GET", f"/v1/batches?limit={limit}")
    assert status == 400
    assert assert_envelope(body)["param"] == "limit"


async def test_unknown_status_filter_is_400(relay: Relay) -> None:
    status, body = await relay.call("GET", "/v1/batches?status=sleeping")
    assert status == 400
    assert assert_envelope(body)["param"] == "status"


async def test_status_filter_uses_relay_names(make_relay: MakeRelay) -> None:
    relay = await make_relay(gateway={"max_running_jobs": 1})
    running = (await relay.submit(batch("hold BLOCK")))["id"]
    await relay.wait_status(running, "running")
    queued = (await relay.submit(batch("waits")))["id"]
    cancelled = (await relay.submit(batch("dropped")))["id"]
    await relay.ok("POST", f"/v1/batches/{cancelled}/cancel")

    async def ids(status: str) -> list[str]:
        return [j["id"] for j in (await relay.listing(f"?status={status}"))["data"]]

    assert await ids("queued") == [queued]
    assert await ids("canceled") == [cancelled]
    assert await ids("running") == [running]
    assert await ids("completed") == []

    relay.upstream.gate.set()
    await relay.wait_status(queued, "completed")
    assert await ids("completed") == [queued, running]
    assert await ids("queued") == []


async def test_template_filter_lists_only_that_templates_runs(relay: Relay) -> None:
    template = await relay.submit(batch("tick", cron="*/5 * * * *"))
    other = await relay.submit(batch("tock", cron="*/5 * * * *"))
    now = relay.clock.advance(600)
    await relay.tick(now)

    runs = (await relay.listing(f"?template_id={template['id']}"))["data"]
    others = (await relay.listing(f"?template_id={other['id']}"))["data"]

    assert len(runs) == len(others) == 1
    assert runs[0]["template_id"] == template["id"]
    assert others[0]["template_id"] == other["id"]
    assert (await relay.listing("?template_id=" + "f" * 32))["data"] == []
