"""Results while a job runs (a Relay extension, opt-in): `?partial=true` on Relay's
results route, and `/results/lines` on any dialect's job, page the finished rows in
finish order by an opaque cursor, so a poller meets each row once."""

from __future__ import annotations

from typing import Any

import pytest

from tests.actors.harness import answer
from tests.api.conftest import Relay, assert_envelope, batch, wait_for


async def poll(relay: Relay, path: str, cursor: str = "") -> tuple[list[dict[str, Any]], str,
                                                                    dict[str, Any]]:
    """Every page from `cursor` until has_more is false: the rows, the next cursor and
    the last answer."""
    rows: list[dict[str, Any]] = []
    while True:
        sep = "&" if "?" in path else "?"
        page = await relay.ok("GET", f"{path}{sep}limit=2&cursor={cursor}")
        rows += page["data"]
        cursor = page["next_cursor"]
        if not page["has_more"]:
            return rows, cursor, page


async def test_finished_rows_come_while_the_job_runs_each_once(relay: Relay) -> None:
    job = await relay.submit(batch("one", "held BLOCK", "two", "three"))
    path = f"/v1/batches/{job['id']}/results?partial=true"
    seen: list[dict[str, Any]] = []
    cursor = ""

    async def three_finished() -> bool:
        nonlocal cursor
        rows, cursor, last = await poll(relay, path, cursor)
        seen.extend(rows)
        return len(seen) == 3 and last["status"] == "running"

    await wait_for(three_finished, what="three rows finished")
    assert sorted(r["custom_id"] for r in seen) == ["r-1", "r-3", "r-4"]
    default = await relay.ok("GET", f"/v1/batches/{job['id']}/results")
    assert default["data"] == []  # the Relay Batches API's default is kept
    relay.upstream.gate.set()
    await relay.wait_status(job["id"], "completed")
    rest, _, last = await poll(relay, path, cursor)
    assert (rest, last["status"], last["has_more"]) == (
        [{"custom_id": "r-2", "content": answer("held BLOCK")}], "completed", False)
    whole, _, _ = await poll(relay, path)
    final = (await relay.ok("GET", f"/v1/batches/{job['id']}/results"))["data"]
    assert sorted(whole, key=lambda r: r["custom_id"]) == final


async def test_an_empty_page_keeps_the_cursor(relay: Relay) -> None:
    job = await relay.submit(batch("held BLOCK"))
    await relay.wait_status(job["id"], "running")
    page = await relay.ok("GET", f"/v1/batches/{job['id']}/results?partial=true")
    again = await relay.ok("GET", f"/v1/batches/{job['id']}/results?partial=true"
                                  f"&cursor={page['next_cursor']}")
    assert (again["data"], again["has_more"], again["next_cursor"]) == (
        [], False, page["next_cursor"])
    relay.upstream.gate.set()


async def test_result_lines_of_a_relay_job_are_its_results(relay: Relay) -> None:
    job = await relay.submit(batch("one", "REFUSE"))
    await relay.wait_status(job["id"], "completed")
    lines, _, last = await poll(relay, f"/v1/batches/{job['id']}/results/lines")
    assert sorted(line["custom_id"] for line in lines) == ["r-1", "r-2"]
    assert (last["object"], last["status"]) == ("list", "completed")


@pytest.mark.parametrize(("query", "param"), [
    ("?partial=yes", "partial"), ("?cursor=abc", "cursor"),
    ("?partial=true&cursor=%%%", "cursor"), ("?partial=true&cursor=Zm9vOjE", "cursor"),
    ("?partial=true&limit=0", "limit"), ("?partial=true&after=r-1", "after"),
    ("/lines?cursor=abc", "cursor"), ("/lines?limit=10001", "limit")])
async def test_bad_paging_is_400_naming_the_field(relay: Relay, query: str, param: str) -> None:
    job = await relay.submit(batch("one"))
    await relay.wait_status(job["id"], "completed")
    status, body = await relay.call("GET", f"/v1/batches/{job['id']}/results{query}")
    assert status == 400
    assert assert_envelope(body)["param"] == param
