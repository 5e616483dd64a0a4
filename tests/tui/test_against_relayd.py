"""The TUI driven by Pilot against a real `relayd serve` and `relayd simulate`: what an
operator sees and does, end to end."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from daemon.testing import Simulator
from relaytui.app import RelayApp
from relaytui.models import JobView
from relaytui.screens.dead_letter import DeadLetterScreen
from relaytui.screens.results import ResultsScreen
from relaytui.screens.row_detail import RowDetailScreen
from relaytui.screens.upload import UploadScreen
from relaytui.widgets.attempts import AttemptTable
from relaytui.widgets.header import ConnectionBar
from relaytui.widgets.job_table import JobTable
from tests.e2e.harness import Relayd, closed_port, rows, wait_for_status
from tests.tui.conftest import SIZE, jobs_screen, on_board, wait_for

pytestmark = pytest.mark.e2e
EVERY_JOB = "/v1/batches?dialect=all"  # the list is OpenAI's unless asked otherwise
SLOW = "Classify [sim:sleep=80]"  # a row that takes a while: the job runs for seconds


def cell(app: RelayApp, job_id: str, column: str) -> str:
    return str(jobs_screen(app).query_one(JobTable).get_cell(job_id, column))


async def test_the_jobs_table_fills_and_follows_a_job_live(
        shared_relayd: Relayd, workspace: str, make_app: Callable[..., RelayApp]) -> None:
    relayd = shared_relayd
    with relayd.client(workspace) as http:
        old = http.post("/v1/batches", json={"model": "gpt-4o-mini", "name": "Earlier",
                                             "requests": rows(3)}).json()
        wait_for_status(http, old["id"], "completed")
        app = make_app(relayd.url, relayd.key(workspace))
        async with app.run_test(size=SIZE) as pilot:
            jobs = jobs_screen(app)
            await wait_for(pilot, lambda: old["id"] in jobs.board, what="the initial fill")
            assert "completed" in cell(app, old["id"], "status")
            bar = jobs.query_one(ConnectionBar)
            await wait_for(pilot, lambda: workspace in str(bar.render()),
                           what="the header naming the workspace")
            rebuilds: list[int] = []
            table = jobs.query_one(JobTable)
            original_fill = table.fill

            def fill() -> None:
                rebuilds.append(1)
                original_fill()
            table.fill = fill  # type: ignore[method-assign]

            job = http.post("/v1/batches", json={"model": "gpt-4o-mini", "name": "Live one",
                                                 "requests": rows(240, text=SLOW)}).json()
            seen: set[str] = set()

            def ended() -> bool:
                if job["id"] in jobs.board:
                    seen.add(cell(app, job["id"], "count"))
                    return on_board(jobs, job["id"]).status == "completed"
                return False

            await wait_for(pilot, ended, what="the job ends", timeout=20)
            assert cell(app, job["id"], "count") == "240/240"
            assert "100%" in cell(app, job["id"], "progress")
            assert len(seen) > 2  # it moved while we watched
            assert rebuilds == []  # events update rows, they never rebuild the table
            assert table.get_row_index(job["id"]) == 0  # newest first
            await pilot.press("f")  # status: running
            assert table.row_count == 0
            for _ in range(2):  # queued, completed
                await pilot.press("f")
            assert table.row_count == 2
            assert any(n.title and "Live one" in n.title for n in app._notifications)


async def test_dead_letter_rows_are_inspected_and_re_driven(
        shared_relayd: Relayd, workspace: str, make_app: Callable[..., RelayApp]) -> None:
    relayd = shared_relayd
    doomed = [{"custom_id": "doomed", "messages": [{"role": "user",
                                                    "content": "x [sim:fail=503]"}]}]
    with relayd.client(workspace) as http:
        job = http.post("/v1/batches", json={"model": "gpt-4o-mini", "name": "With a dead row",
                                             "requests": rows(4) + doomed}).json()
        wait_for_status(http, job["id"], "completed")
        app = make_app(relayd.url, relayd.key(workspace))
        async with app.run_test(size=SIZE) as pilot:
            jobs = jobs_screen(app)
            await wait_for(pilot, lambda: job["id"] in jobs.board)
            jobs.query_one(JobTable).select(job["id"])
            await pilot.press("d")
            screen = await wait_for(pilot, lambda: isinstance(app.screen, DeadLetterScreen)
                                    and app.screen.entries and app.screen)
            assert [e["custom_id"] for e in screen.entries] == ["doomed"]
            await pilot.press("enter")
            await wait_for(pilot, lambda: "attempts" in str(app.screen.query_one(".question")
                                                            .render()))
            await pilot.press("escape")
            await pilot.press("R", "y")  # re-drive all asks first
            await wait_for(pilot, lambda: len(http.get(EVERY_JOB).json()["data"]) == 2,
                           what="the re-drive job")
            retry = http.get(EVERY_JOB).json()["data"][0]
            assert retry["total"] == 1 and retry["id"] != job["id"]
            await wait_for(pilot, lambda: any(retry["id"] in n.message
                                              for n in app._notifications))
            await pilot.press("escape")
            await wait_for(pilot, lambda: retry["id"] in jobs.board)


async def test_an_uploaded_csv_becomes_one_job(shared_relayd: Relayd, workspace: str,
                                               make_app: Callable[..., RelayApp], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    relayd = shared_relayd
    monkeypatch.chdir(tmp_path)  # a short path to type
    prompts = tmp_path / "p.csv"
    prompts.write_text('"Classify: one"\n"Classify: two,\nstill two"\n"Classify: three"\n')
    app = make_app(relayd.url, relayd.key(workspace))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("u")
        upload = await wait_for(pilot, lambda: isinstance(app.screen, UploadScreen)
                                and app.screen)
        await wait_for(pilot, lambda: upload.query_one("#model").value == "gpt-4o-mini",
                       what="the models")
        await pilot.press("tab", *prompts.name, "enter")  # from the tree to the path
        await wait_for(pilot, lambda: upload.rows is not None, what="the file is read")
        assert "3 rows" in str(upload.query_one("#file-status").render())
        upload.query_one("#name").value = "From the TUI"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.screen is app.jobs_screen, what="the form closes")
    with relayd.client(workspace) as http:
        listed = http.get(EVERY_JOB).json()["data"]
        assert [(j["name"], j["total"]) for j in listed] == [("From the TUI", 3)]


async def test_bad_files_and_refusals_are_shown_and_nothing_is_sent_twice(
        shared_relayd: Relayd, workspace: str, make_app: Callable[..., RelayApp],
        tmp_path: Path) -> None:
    relayd = shared_relayd
    bad: dict[str, tuple[str | bytes | None, str]] = {
        "broken.jsonl": ('{"messages": [{"role": "user", "content": "ok"}]}\n{"messages": ',
                         "line 2: not valid JSON"),
        "empty.csv": ("\n\n", "the file has no rows"),
        "binary.jsonl": (b"\x89PNG\r\n\x1a\n\x00\xff", "not UTF-8 text"),
        "shape.jsonl": ('{"prompt": "hi"}\n', "line 1: expected an object"),
        "missing.csv": (None, "cannot read")}
    for name, (content, _) in bad.items():
        if isinstance(content, bytes):
            (tmp_path / name).write_bytes(content)
        elif content is not None:
            (tmp_path / name).write_text(content)
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"custom_id": "g", "messages": [{"role": "user",
                                                                "content": "hi"}]}) + "\n")
    app = make_app(relayd.url, relayd.key(workspace))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("u")
        upload = await wait_for(pilot, lambda: isinstance(app.screen, UploadScreen)
                                and app.screen)
        path = upload.query_one("#path")
        path.focus()  # the tree has it at first
        status = upload.query_one("#file-status")

        def shown(reason: str) -> bool:
            return reason in str(status.render())
        for name, (_, reason) in bad.items():
            path.value = str(tmp_path / name)
            await pilot.press("enter")
            await wait_for(pilot, partial(shown, reason), what=reason)
            assert path.has_class("-invalid") and upload.query_one("#submit").disabled
            await pilot.press("ctrl+s")

        path.value = str(good)
        await pilot.press("enter")
        await wait_for(pilot, lambda: upload.rows is not None)
        upload.query_one("#cron").value = "0 0 31 2 *"  # a date that never comes
        await pilot.press("ctrl+s", "ctrl+s", "ctrl+s")
        message = upload.query_one("#submit-status")
        await wait_for(pilot, lambda: "field: cron" in str(message.render()),
                       what="the daemon's refusal")
        assert upload.query_one("#cron").has_class("-invalid")
        assert app.is_running and not upload.submitting

        upload.query_one("#cron").value = ""
        answered = threading.Event()
        upload.client.submit = held(upload.client.submit, answered)
        await pilot.press("ctrl+s")
        await pilot.click("#submit")
        await pilot.press("ctrl+s")
        answered.set()  # the daemon answers only after the presses
        await wait_for(pilot, lambda: app.screen is app.jobs_screen)
    with relayd.client(workspace) as http:
        assert [j["total"] for j in http.get(EVERY_JOB).json()["data"]] == [1]


def held(submit: Callable[..., dict[str, Any]],
         answered: threading.Event) -> Callable[..., dict[str, Any]]:
    """The daemon answering once `answered` is set: presses meanwhile must not send
    again (an event, not a pause: on a loaded machine a pause may end first)."""
    def wrapped(**form: Any) -> dict[str, Any]:
        assert answered.wait(timeout=30)
        return submit(**form)
    return wrapped


async def test_a_running_job_is_cancelled_after_confirmation(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd],
        make_app: Callable[..., RelayApp]) -> None:
    """Its own slow simulator (200 ms a row) and two rows in flight: a long job."""
    relayd = relayd_factory(simulator_factory("--latency-ms", "200"), concurrency=2).start()
    with relayd.client() as http:
        job = http.post("/v1/batches", json={"model": "gpt-4o-mini", "name": "Long one",
                                             "requests": rows(400)}).json()
        wait_for_status(http, job["id"], "running")
        app = make_app(relayd.url, relayd.key("acme"))
        async with app.run_test(size=SIZE) as pilot:
            jobs = jobs_screen(app)
            await wait_for(pilot, lambda: job["id"] in jobs.board)
            jobs.query_one(JobTable).select(job["id"])
            await pilot.press("c")
            await pilot.press("n")  # kept
            await pilot.pause(0.1)
            assert on_board(jobs, job["id"]).status == "running"
            table = jobs.query_one(JobTable)
            shown: list[str] = []
            upsert = table.upsert

            def upsert_shown(view: JobView, *, moved: bool) -> None:
                shown.append(view.status)
                upsert(view, moved=moved)
            table.upsert = upsert_shown  # type: ignore[method-assign]
            await pilot.press("c", "y")
            await wait_for(pilot, lambda: on_board(jobs, job["id"]).status == "canceled",
                           what="the cancel")
            assert "cancelling" in shown and shown[-1] == "canceled"
            assert shown.index("cancelling") < shown.index("canceled")
            assert cell(app, job["id"], "status") == "⊘ canceled"
        assert http.get(f"/v1/batches/{job['id']}").json()["status"] == "canceled"


async def test_a_daemon_that_is_down_shows_retrying_and_reconnects(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd],
        make_app: Callable[..., RelayApp]) -> None:
    relayd = relayd_factory(simulator_factory()).start()  # the OS gives it its port
    key = relayd.key("acme")
    relayd.stop()  # down; it comes back on the same port
    app = make_app(relayd.url, key)
    async with app.run_test(size=SIZE) as pilot:
        bar = jobs_screen(app).query_one(ConnectionBar)
        text = await wait_for(pilot, lambda: "retrying in" in str(bar.render())
                              and str(bar.render()), what="the down state")
        assert f"cannot reach relayd at {relayd.url}" in text
        assert jobs_screen(app).table.has_class("-stale")
        relayd.start()
        await wait_for(pilot, lambda: bar.connection.state == "live", timeout=20,
                       what="the reconnect")
        assert app.is_running and not jobs_screen(app).table.has_class("-stale")


async def test_nothing_listening_keeps_the_app_up(make_app: Callable[..., RelayApp]) -> None:
    with closed_port() as port:
        await nothing_listening_keeps_the_app_up(make_app(f"http://127.0.0.1:{port}",
                                                          "rk_nothing_here"))


async def nothing_listening_keeps_the_app_up(app: RelayApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        bar = jobs_screen(app).query_one(ConnectionBar)
        await wait_for(pilot, lambda: bar.connection.state == "down")
        await pilot.press("u")  # screens still open; their calls fail politely
        await wait_for(pilot, lambda: "cannot load the models" in str(
            app.screen.query_one("#submit-status").render()))
        await pilot.press("escape", "d")
        await wait_for(pilot, lambda: app._notifications or True)
        assert app.is_running


async def test_results_are_browsed_searched_and_saved(shared_relayd: Relayd, workspace: str,
                                                      make_app: Callable[..., RelayApp],
                                                      tmp_path: Path) -> None:
    relayd = shared_relayd
    failing = [{"custom_id": "refused", "messages": [{"role": "user",
                                                      "content": "x [sim:fail=400]"}]}]
    with relayd.client(workspace) as http:
        job = http.post("/v1/batches", json={"model": "gpt-4o-mini", "name": "Results",
                                             "requests": rows(12) + failing}).json()
        wait_for_status(http, job["id"], "completed")
    app = make_app(relayd.url, relayd.key(workspace))
    async with app.run_test(size=SIZE) as pilot:
        jobs = jobs_screen(app)
        await wait_for(pilot, lambda: job["id"] in jobs.board)
        jobs.query_one(JobTable).select(job["id"])
        await pilot.press("enter")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen)
                                and app.screen.items and app.screen)
        assert len(screen.shown) == 13
        assert "r-0 content" in str(screen.query_one("#result-text").render())
        await pilot.press("slash", *"refused", "enter")
        assert [i["custom_id"] for i in screen.shown] == ["refused"]
        assert "400" in str(screen.query_one("#result-text").render())
        await pilot.press("s")
        target = tmp_path / "saved.csv"
        app.screen.query_one("#answer", Input).value = str(target)
        await pilot.press("enter")
        await wait_for(pilot, target.exists, what="the saved file")
        assert len(target.read_text().splitlines()) == 14  # header and every result


LOOKUP = {"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}}}}}


async def test_a_tool_calling_row_shows_its_rounds_and_its_transcript(
        shared_relayd: Relayd, workspace: str, make_app: Callable[..., RelayApp],
        tools_url: str) -> None:
    """A Relay-dialect batch with one OpenAI chat record running a 2-round tool loop on
    the simulator's executor (its custom_id needs quoting in the row's URL) and one
    plain row."""
    relayd = shared_relayd
    record = {"custom_id": "weather/1 ?#", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": "gpt-4o-mini", "messages": [
                  {"role": "user", "content": "weather [sim:tool_rounds=2]"}], "tools": [LOOKUP],
                  "openrelay": {"tool_config": {"url": tools_url,
                                                "authorization": "Bearer s3cret-token"}}}}
    with relayd.client(workspace) as http:
        job = http.post("/v1/batches", json={"model": "gpt-4o-mini", "name": "With tools",
                                             "requests": [record, *rows(1)]}).json()
        wait_for_status(http, job["id"], "completed")
    app = make_app(relayd.url, relayd.key(workspace))
    async with app.run_test(size=SIZE) as pilot:
        jobs = jobs_screen(app)
        await wait_for(pilot, lambda: job["id"] in jobs.board)
        jobs.query_one(JobTable).select(job["id"])
        await pilot.press("enter")
        results = await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen)
                                 and app.screen.items and app.screen)
        assert [i["custom_id"] for i in results.shown] == ["weather/1 ?#", "r-0"]
        table = results.query_one("#results")
        assert [str(table.get_cell(str(n), "rounds")) for n in (0, 1)] == ["⟳2", ""]
        assert "2 tool rounds · 3 model calls" in str(results.query_one("#result-text")
                                                      .render())
        await pilot.press("o")
        row = await wait_for(pilot, lambda: isinstance(app.screen, RowDetailScreen)
                             and (app.screen.detail or app.screen.problem) and app.screen,
                             what="the row")
        assert row.problem is None
        facts = str(row.query_one("#row-facts").render())
        assert "✓ completed" in facts and "3 model attempts · 2 executor calls · 2 tool " \
            "rounds · 3 model calls" in facts  # relayd keeps each executor call
        shown = str(row.query_one("#transcript").render())
        call = 'lookup({"q": "weather [sim:tool_rounds=2]"})'
        assert "authorization ***" in shown and "s3cret" not in shown
        assert shown.count(call) >= 2 and "Round 1" in shown and "Round 2" in shown
        assert shown.index("Round 2") < shown.index("Answer") < shown.index("Tool results: ")
        calls = row.query_one("#row-attempts", AttemptTable)
        assert calls.row_count == 5  # 3 model attempts, the executor's 2 calls between
        assert [str(calls.get_row_at(n)[1]) for n in range(5)] == [
            "gpt-4o-mini", "executor http · round 1", "gpt-4o-mini",
            "executor http · round 2", "gpt-4o-mini"]
        assert [str(calls.get_row_at(n)[2]) for n in (1, 3)] == ["ok", "ok"]
        await pilot.press("escape", "down", "enter")  # the plain row
        row = await wait_for(pilot, lambda: isinstance(app.screen, RowDetailScreen)
                             and app.screen.detail and app.screen, what="the plain row")
        assert row.custom_id == "r-0"
        shown = str(row.query_one("#transcript").render())
        assert "Round" not in shown and "assistant: neutral" in shown
