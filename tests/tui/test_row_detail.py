"""A row in full from the results viewer, on the in-memory `FakeRelay` (the nightly
digest's rows are tool-calling records): the Rounds column, opening a row with enter
or `o`, its transcript round by round, a failed row, and a row the daemon cannot give."""

from __future__ import annotations

from typing import Any, NoReturn

import httpx
import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable

from relaytui.client import RelayClient, RelayError
from relaytui.screens.results import ResultsScreen
from relaytui.screens.row_detail import RowDetailScreen
from relaytui.testing import FakeRelay, job_id
from relaytui.widgets.attempts import AttemptTable
from relaytui.widgets.job_table import JobTable
from tests.tui.conftest import SIZE, jobs_screen, wait_for
from tests.tui.test_app import app_on

DIGEST = job_id(4)


def text(screen: Screen[Any], selector: str) -> str:
    return str(screen.query_one(selector).render())


async def open_results(pilot: Pilot[Any], job: str) -> ResultsScreen:
    app = pilot.app
    await wait_for(pilot, lambda: job in jobs_screen(app).board)
    jobs_screen(app).query_one(JobTable).select(job)
    await pilot.press("v")
    return await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen)
                          and app.screen.items and app.screen, what="the results")


async def open_row(pilot: Pilot[Any], key: str) -> RowDetailScreen:
    app = pilot.app
    await pilot.press(key)
    return await wait_for(pilot, lambda: isinstance(app.screen, RowDetailScreen)
                          and (app.screen.detail or app.screen.problem) and app.screen,
                          what="the row")


async def test_the_results_show_each_rows_tool_rounds() -> None:
    app = app_on(FakeRelay(replay=False))
    async with app.run_test(size=SIZE) as pilot:
        results = await open_results(pilot, DIGEST)
        table = results.query_one(DataTable)
        ids = [str(table.get_cell(str(n), "custom_id")) for n in range(table.row_count)]
        rounds = {i: str(table.get_cell(str(n), "rounds")) for n, i in enumerate(ids)}
        assert (rounds["digest-01"], rounds["digest-03"]) == ("⟳2", "⟳0")
        assert rounds["digest-07"] == ""  # failed: its result has no summary
        assert (rounds["digest-08"], rounds["digest-09"]) == ("⟳4 max", "⟳2 ✗1")
        assert "⟳ 2 tool rounds · 3 model calls" in text(results, "#result-text")
        for _ in range(7):
            await pilot.press("down")
        assert "stopped at the round limit" in text(results, "#result-text")
        await pilot.press("escape")
        plain = await open_results(pilot, job_id(5))  # no tool-calling rows: no column
        assert [c.label.plain for c in plain.query_one(DataTable).columns.values()] == \
            ["custom_id", "Result"]


async def test_enter_and_o_open_a_row_with_its_transcript() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        results = await open_results(pilot, DIGEST)
        row = await open_row(pilot, "enter")
        facts = text(row, "#row-facts")
        assert "✓ completed" in facts and "model gpt-4o-mini" in facts
        assert "3 attempts · 2 tool rounds · 3 model calls" in facts
        shown = text(row, "#transcript")
        for expected in ("tools: search_tickets, get_metric, lookup_order",
                         "executor https://tools.example.com/relay/run (http, authorization ***",
                         "user: Digest for team billing, 2026-10-03.",
                         "Round 1  gpt-4o-mini · 300 prompt + 24 completion tokens",
                         'assistant → search_tickets({"team": "billing", "since": '
                         '"2026-10-03"})  call_r1a',
                         'tool call_r1b: {"value": 0.041, "change": "+4%"}',
                         'Round 2', 'lookup_order({"order_id": "A-1043"})',
                         "Answer  in all 1260 prompt + 84 completion tokens",
                         "assistant: billing: 14 new tickets"):
            assert expected in shown, expected
        assert shown.index("Round 1") < shown.index("Round 2") < shown.index("Answer")
        assert row.query_one(AttemptTable).row_count == 3
        assert row.focused is row.query_one("#row-scroll")

        await pilot.press("escape")
        assert app.screen is results
        for _ in range(7):
            await pilot.press("down")
        row = await open_row(pilot, "o")  # the round limit ended this one
        assert "stopped at the round limit" in text(row, "#row-facts")
        shown = text(row, "#transcript")
        assert "Round 4" in shown and "The round limit ended the loop" in shown
        assert shown.index("The round limit") < shown.index("first_reply_minutes")
        await pilot.press("escape", "down", "o")
        row = await wait_for(pilot, lambda: isinstance(app.screen, RowDetailScreen)
                             and app.screen.detail and app.screen)
        assert "1 tool error (call_r1b)" in text(row, "#row-facts")
        assert "tool call_r1b ✗ error: tool error: metrics backend timed out" in \
            text(row, "#transcript")
        assert fake.rows_read == [(DIGEST, "digest-01"), (DIGEST, "digest-08"),
                                  (DIGEST, "digest-09")]


async def test_a_failed_row_shows_its_error_and_the_round_that_was_cut_short() -> None:
    app = app_on(FakeRelay(replay=False))
    async with app.run_test(size=SIZE) as pilot:
        await open_results(pilot, DIGEST)
        for _ in range(6):
            await pilot.press("down")
        row = await open_row(pilot, "o")
        assert row.custom_id == "digest-07"
        facts = text(row, "#row-facts")
        assert "✗ failed" in facts and "2 tool rounds" in facts
        assert "tool_executor_unreachable: round 2:" in facts
        # the row's calls agree with its error: 2 model attempts, and the executor's
        # 3 failed calls of round 2 (its error says "after 3 attempts") each a line
        assert "2 model attempts · 4 executor calls, 3 failed" in facts
        calls = row.query_one(AttemptTable)
        lines = [[str(cell) for cell in calls.get_row_at(i)] for i in range(calls.row_count)]
        assert [line[1:3] for line in lines] == [
            ["gpt-4o-mini", "200"], ["executor http · round 1", "ok"],
            ["gpt-4o-mini", "200"], *[["executor http · round 2", "—"]] * 3]
        assert [line[5] for line in lines[3:]] == [
            "connection: could not connect to tools.example.com:443"] * 3
        shown = text(row, "#transcript")
        assert "(no tool results: the row ended before the executor answered)" in shown
        assert "Answer" not in shown and "Error" in shown
        await pilot.press("escape", "up", "up", "up", "up", "o")  # digest-03: no tool used
        row = await wait_for(pilot, lambda: isinstance(app.screen, RowDetailScreen)
                             and app.screen.detail and app.screen)
        assert row.custom_id == "digest-03"
        assert "0 tool rounds · 1 model call" in text(row, "#row-facts")
        shown = text(row, "#transcript")
        assert "(no tool rounds: the model answered without tools)" in shown
        assert "Round" not in shown and "assistant: accounts: 14 new tickets" in shown


class MissingRows(FakeRelay):
    def row(self, job_id: str, custom_id: str) -> NoReturn:
        raise RelayError(404, f"No row found with id '{custom_id}'.")


class BrokenRows(FakeRelay):
    def row(self, job_id: str, custom_id: str) -> NoReturn:
        raise RuntimeError("the disk is on fire")


async def test_a_row_the_daemon_cannot_give_is_said_not_crashed() -> None:
    app = app_on(MissingRows(replay=False))
    async with app.run_test(size=SIZE) as pilot:
        await open_results(pilot, DIGEST)
        row = await open_row(pilot, "o")
        assert "No row found with id 'digest-01'." in text(row, "#row-facts")
        assert not row.query_one("#row-scroll").display
        await pilot.press("escape")
        assert isinstance(app.screen, ResultsScreen)

    app = app_on(BrokenRows(replay=False))
    async with app.run_test(size=SIZE) as pilot:
        await open_results(pilot, DIGEST)
        await pilot.press("o")
        await wait_for(pilot, lambda: any("the disk is on fire" in n.message
                                          for n in app._notifications))
        assert app.is_running and isinstance(app.screen, RowDetailScreen)


def test_the_client_sends_the_custom_id_quoted_and_raises_on_404() -> None:
    asked: list[bytes] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.raw_path)
        if request.url.raw_path.endswith(b"missing"):
            return httpx.Response(404, json={"error": {
                "message": "No row found with id 'missing'.", "type": "not_found_error",
                "param": None, "code": "not_found"}})
        return httpx.Response(200, json={"object": "batch.row", "custom_id": "a/b c?#%"})

    with RelayClient("http://relayd", "rk_x", transport=httpx.MockTransport(answer)) as client:
        assert client.row("j1", "a/b c?#%")["object"] == "batch.row"
        with pytest.raises(RelayError) as caught:
            client.row("j1", "missing")
    assert asked[0] == b"/v1/batches/j1/rows/a%2Fb%20c%3F%23%25"
    assert (caught.value.status, caught.value.message) == (404, "No row found with id 'missing'.")
