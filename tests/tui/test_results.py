"""Results a page at a time and jobs of every dialect: what `RelayClient` asks relayd
(over a `MockTransport`), and the results screen reading every page of a job's results
from the in-memory `FakeRelay`."""

from __future__ import annotations

import functools
from typing import Any

import httpx
import pytest
from textual.widgets import DataTable

from relaytui.client import RelayClient
from relaytui.screens import results as results_screen
from relaytui.screens.results import ResultsScreen
from relaytui.testing import FakeRelay, job_id
from tests.tui.conftest import SIZE, jobs_screen, wait_for
from tests.tui.test_app import app_on
from tests.tui.test_row_detail import open_results, text

RESULTS = [{"custom_id": f"r-{n}", "content": f"answer {n}"} for n in range(1, 6)]


def paging_relayd(asked: list[dict[str, str]]) -> httpx.MockTransport:
    """Results as relayd pages them; every query asked is recorded."""

    def answer(request: httpx.Request) -> httpx.Response:
        query = dict(request.url.params)
        asked.append(query)
        if request.url.path == "/v1/batches":
            return httpx.Response(200, json={"object": "list", "data": [], "has_more": False,
                                             "first_id": None, "last_id": None})
        ids = [r["custom_id"] for r in RESULTS]
        start = ids.index(query["after"]) + 1 if "after" in query else 0
        page = RESULTS[start:start + int(query.get("limit", len(RESULTS)))]
        body: dict[str, Any] = {"id": "j1", "object": "list", "status": "completed",
                                "data": page}
        if "limit" in query:
            body |= {"has_more": start + len(page) < len(RESULTS),
                     "last_id": page[-1]["custom_id"] if page else None}
        return httpx.Response(200, json=body)

    return httpx.MockTransport(answer)


def test_result_pages_follow_last_id_until_has_more_is_false() -> None:
    asked: list[dict[str, str]] = []
    with RelayClient("http://relayd", "rk_x", transport=paging_relayd(asked)) as client:
        pages = list(client.result_pages("j1", page=2))
        whole = client.results("j1")
    assert [[r["custom_id"] for r in p["data"]] for p in pages] == [
        ["r-1", "r-2"], ["r-3", "r-4"], ["r-5"]]
    assert asked[:3] == [{"limit": "2"}, {"limit": "2", "after": "r-2"},
                         {"limit": "2", "after": "r-4"}]
    assert (asked[3], whole["data"]) == ({}, RESULTS)  # no limit: all of them, as before


def test_jobs_are_listed_of_every_dialect() -> None:
    asked: list[dict[str, str]] = []
    with RelayClient("http://relayd", "rk_x", transport=paging_relayd(asked)) as client:
        client.all_jobs()
        client.jobs(dialect="openai")
    assert [q["dialect"] for q in asked] == ["all", "openai"]


async def test_the_results_screen_reads_every_page() -> None:
    fake = FakeRelay(replay=False)
    client = fake.client()
    client.result_pages = functools.partial(  # type: ignore[method-assign]
        client.result_pages, page=5)  # 4 pages of 18
    app = app_on(fake, client=client)
    async with app.run_test(size=SIZE) as pilot:
        results = await open_results(pilot, job_id(5))
        await wait_for(pilot, lambda: results.query_one(DataTable).row_count == 18)
        assert [after for _, after in fake.result_pages_read] == [
            None, "review-0005", "review-0010", "review-0015"]
        assert [r["custom_id"] for r in results.items] == [
            f"review-{n:04d}" for n in range(1, 19)]
        assert "18 results, 1 error" in text(results, "#results-summary")
    assert set(fake.listed_dialects) == {"all"}  # the jobs list shows both dialects


async def test_a_running_jobs_results_grow_as_rows_finish(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A job not yet ended shows the rows finished so far, each once, and grows as more
    finish, until it ends (the operator's place in the table stays put meanwhile)."""
    monkeypatch.setattr(results_screen, "FOLLOW_EVERY_S", 0.01)
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    queued = job_id(9)  # "Translate FAQ (fr)": queued, nothing finished yet
    async with app.run_test(size=SIZE) as pilot:
        view = await wait_for(pilot, lambda: jobs_screen(app).board.get(queued))
        assert app.client is not None and not view.terminal
        app.push_screen(ResultsScreen(app.client, view))
        screen = await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen)
                                and any(t.display for t in app.screen.query(DataTable))
                                and app.screen)
        assert screen.items == []
        fake.jobs_by_id[queued]["completed"] = 5  # five rows finish
        await wait_for(pilot, lambda: len(screen.items) == 5)
        assert "5 results so far" in str(screen.query_one("#results-summary").render())
        table = screen.query_one(DataTable)
        table.move_cursor(row=3)
        fake.jobs_by_id[queued] |= {"status": "completed", "completed": 17, "failed": 1}
        await wait_for(pilot, lambda: len(screen.items) == 18)
        ids = [item["custom_id"] for item in screen.items]
        assert len(set(ids)) == 18 and table.row_count == 18
        assert table.cursor_row == 3  # rows were added below, not the table redrawn
        assert "18 results, 1 error" in str(screen.query_one("#results-summary").render())
