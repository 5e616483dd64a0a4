"""Workflow records in the TUI, on the in-memory `FakeRelay(workflows=True)` (a running
OpenAI batch: one record completed, one waiting, one failed at its step limit): a
row's Workflow section, the job detail's workflow counters (fetched in the background,
again only every few seconds), the Rounds column's steps, and the pure text of
`relaytui.workflows`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable

from relaytui.client import RelayClient, RelayError
from relaytui.screens.results import ResultsScreen
from relaytui.screens.row_detail import RowDetailScreen
from relaytui.testing import NOW, WORKFLOW_JOB, FakeRelay, job_id
from relaytui.widgets.attempts import AttemptTable
from relaytui.widgets.job_detail import JobDetail
from relaytui.widgets.job_table import JobTable
from relaytui.workflows import (
    answer_text,
    callback_text,
    counters_text,
    history,
    is_workflow,
    phase_text,
    steps_cell,
    totals_text,
    workflow_summary,
)
from tests.tui.conftest import SIZE, jobs_screen, wait_for
from tests.tui.test_app import app_on


def text(node: Widget, selector: str) -> str:
    return str(node.query_one(selector).render())


async def open_flow(pilot: Pilot[Any], custom_id: str) -> RowDetailScreen:
    """The row screen of one workflow record (its job is running: no results screen)."""
    app = pilot.app
    view = await wait_for(pilot, lambda: jobs_screen(app).board.get(WORKFLOW_JOB))
    app.push_screen(RowDetailScreen(jobs_screen(app).client, view, custom_id))
    return await wait_for(pilot, lambda: isinstance(app.screen, RowDetailScreen)
                          and (app.screen.detail or app.screen.problem) and app.screen,
                          what="the row")


# -- the row screen ------------------------------------------------------------------


async def test_a_completed_workflow_shows_its_steps_totals_and_output() -> None:
    app = app_on(FakeRelay(replay=False, workflows=True))
    async with app.run_test(size=SIZE) as pilot:
        row = await open_flow(pilot, "notes-2.4")
        facts = text(row, "#row-facts")
        assert "✓ completed · model gpt-4o-mini · workflow: 2 steps · 5 requests" in facts
        assert "attempt" not in facts  # its requests are not attempts of the row
        shown = text(row, "#transcript")
        for expected in ("Request  gpt-4o-mini · workflow",
                         "callback https://flows.example.com/relay/summarise "
                         "(authorization ***, at most 8 steps)",
                         "user: Summarise the release notes of 2.4.",
                         "Workflow  ✓ completed after 2 steps",
                         "totals: 2 steps · 5 requests · 1260 input + 310 output tokens",
                         "step 1  continue → 4 requests",
                         "step 2  continue → 1 request",
                         "end     completed  the output below",
                         "Output  the callback's last answer",
                         '"summary": "Relay 2.4 adds workflow records'):
            assert expected in shown, expected
        assert shown.index("step 1") < shown.index("step 2") < shown.index("Output")
        assert "Round" not in shown and "Answer" not in shown
        assert row.query_one("#row-scroll").border_title == "Workflow"
        assert not row.query_one(AttemptTable).display  # no attempts: no empty table


async def test_a_waiting_workflow_says_until_when_and_marks_its_step() -> None:
    app = app_on(FakeRelay(replay=False, workflows=True))
    async with app.run_test(size=SIZE) as pilot:
        row = await open_flow(pilot, "notes-2.5")
        assert "◌ pending · model gpt-4o-mini · workflow: 2 steps · 3 requests" in \
            text(row, "#row-facts")
        shown = text(row, "#transcript")
        assert "Workflow  ◌ waiting until 09:30:45Z" in shown
        assert "step 1  continue → 3 requests\n" in shown
        assert "step 2  wait 1m  ◂ now: until 09:30:45Z" in shown
        assert "Output  not yet: the workflow has not finished" in shown
        assert "end " not in shown


async def test_a_workflow_stopped_by_its_step_limit_shows_the_error() -> None:
    app = app_on(FakeRelay(replay=False, workflows=True))
    async with app.run_test(size=SIZE) as pilot:
        row = await open_flow(pilot, "notes-3.0")
        facts = text(row, "#row-facts")
        assert "✗ failed" in facts and "workflow: 3 steps · 5 requests" in facts
        assert "workflow_step_limit: the callback asked for step 4; max_steps is 3" in facts
        shown = text(row, "#transcript")
        assert "Workflow  ✗ failed after 3 steps" in shown
        assert "(authorization ***, at most 3 steps)" in shown
        assert "step 3  continue → 1 request\n  end     workflow_step_limit" in shown
        assert shown.index("end ") < shown.index("Error") < shown.index("max_steps is 3")
        assert "Output" not in shown


async def test_the_results_show_a_workflows_steps_and_open_its_row() -> None:
    fake = FakeRelay(replay=False, workflows=True)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        view = await wait_for(pilot, lambda: jobs_screen(app).board.get(WORKFLOW_JOB))
        assert app.client is not None
        app.push_screen(ResultsScreen(app.client, view))
        results = await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen)
                                 and app.screen.items and app.screen)
        table = results.query_one(DataTable)
        assert [str(table.get_cell(str(n), "rounds")) for n in range(table.row_count)] == \
            ["▸2 steps", ""]
        assert "▸ workflow: 2 steps · 5 requests · 1260 input + 310 output tokens" in \
            text(results, "#result-text")
        await pilot.press("enter")
        row = await wait_for(pilot, lambda: isinstance(app.screen, RowDetailScreen)
                             and app.screen.detail and app.screen)
        assert "Workflow  ✓ completed after 2 steps" in text(row, "#transcript")
        assert fake.rows_read == [(WORKFLOW_JOB, "notes-2.4")]


# -- the job detail's counters -----------------------------------------------------------


async def select(pilot: Pilot[Any], job: str) -> JobDetail:
    app = pilot.app
    await wait_for(pilot, lambda: job in jobs_screen(app).board)
    jobs_screen(app).query_one(JobTable).select(job)
    detail = jobs_screen(app).query_one(JobDetail)
    await wait_for(pilot, lambda: detail.loaded_id == job, what="the detail pane")
    return detail


async def test_the_job_detail_shows_the_workflow_counters_of_a_job_with_workflows() -> None:
    fake = FakeRelay(replay=False, workflows=True)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        detail = await select(pilot, WORKFLOW_JOB)
        await wait_for(pilot, lambda: "workflows" in text(detail, "#facts"))
        facts = text(detail, "#facts").splitlines()
        rows = next(n for n, line in enumerate(facts) if line.startswith("rows"))
        # under the rows, after the batch's usage so far
        assert facts[rows + 1] == "usage 2.4k in · 550 out tokens · $0.0010"
        assert facts[rows + 2] == ("workflows 1 waiting · 2 ended · 7 steps · 13 requests · "
                                   "3200 input + 700 output tokens")
        detail = await select(pilot, job_id(5))  # no workflow records: no line
        await wait_for(pilot, lambda: fake.workflows_read[-1:] == [job_id(5)])
        await pilot.pause(0.1)
        assert "workflows" not in text(detail, "#facts")


class Counters(FakeRelay):
    """Counters that move on, or a relayd that has no such route (404)."""

    def __init__(self, *, missing: bool = False) -> None:
        super().__init__(replay=False, workflows=True)
        self.missing = missing
        self.steps = 7

    def workflows(self, job_id: str) -> dict[str, Any]:
        if self.missing:
            self.workflows_read.append(job_id)
            raise RelayError(404, "Not Found")
        return super().workflows(job_id) | {"steps": self.steps}


async def test_the_counters_of_a_running_job_are_fetched_again_but_not_on_every_event() -> None:
    fake = Counters()
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        detail = await select(pilot, WORKFLOW_JOB)
        await wait_for(pilot, lambda: "7 steps" in text(detail, "#facts"))
        asked = len(fake.workflows_read)
        for _ in range(20):  # progress events and ticks draw the pane again
            detail.show(WORKFLOW_JOB)
        await pilot.pause(0.2)
        assert len(fake.workflows_read) == asked  # not within the interval
        assert asked == 1
        fake.steps = 9
        detail.workflows_every = 0.05
        await pilot.pause(0.1)
        detail.show(WORKFLOW_JOB)
        await wait_for(pilot, lambda: "9 steps" in text(detail, "#facts"))
        detail.workflows_every = 1000
        assert len(fake.workflows_read) > asked

        detail.workflows_every = 0
        await select(pilot, job_id(5))  # ended: fetched once, never again
        await wait_for(pilot, lambda: fake.workflows_read[-1] == job_id(5))
        asked = len(fake.workflows_read)
        await pilot.pause(0.1)
        detail.show(job_id(5))
        await pilot.pause(0.1)
        assert len(fake.workflows_read) == asked


async def test_progress_events_do_not_fetch_the_counters_each_time() -> None:
    fake = FakeRelay()  # replays 15 progress events of the two running jobs
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, fake.replayed.is_set, what="the replay")
        detail = jobs_screen(app).query_one(JobDetail)
        await wait_for(pilot, lambda: detail.job_id == job_id(1)
                       and detail.loaded_id == job_id(1), what="the detail pane")
        await wait_for(pilot, lambda: fake.workflows_read)
        await pilot.pause(0.2)
        assert fake.workflows_read == [job_id(1)]
        assert "workflows" not in text(detail, "#facts")


async def test_a_relayd_without_the_route_just_hides_the_line() -> None:
    fake = Counters(missing=True)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        detail = await select(pilot, WORKFLOW_JOB)
        await wait_for(pilot, lambda: WORKFLOW_JOB in fake.workflows_read)
        await pilot.pause(0.1)
        assert "workflows" not in text(detail, "#facts")
        assert "1 completed · 1 failed" in text(detail, "#facts")
        assert not app._notifications and app.is_running


def test_the_client_asks_the_workflows_route() -> None:
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(200, json={"object": "batch.workflows", "started": 0})

    with RelayClient("http://relayd", "rk_x", transport=httpx.MockTransport(answer)) as client:
        assert client.workflows("batch_1")["object"] == "batch.workflows"
    assert asked == ["/v1/batches/batch_1/workflows"]


# -- the text ----------------------------------------------------------------------------


def state(phase: str, **more: Any) -> dict[str, Any]:
    return {"phase": phase, "step": 3, "totals": {"steps": 3, "requests": 9},
            "history": [], "event": "workflow.results", "requests": 4, "finished": 2,
            "wake_at": None} | more


@pytest.mark.parametrize(("status", "flow", "said"), [
    ("pending", state("running"), "running step 3 (2 of 4 requests done)"),
    ("pending", state("waiting", wake_at=NOW + 5), "waiting until 09:30:05Z"),
    ("pending", state("deliver"), "waiting for its callback (workflow.results of step 3)"),
    ("pending", state("deliver", step=0, event="workflow.started"),
     "waiting for its callback (workflow.started)"),
    ("pending", state("deliver", event="workflow.tick"),
     "waiting for its callback (workflow.tick)"),
    ("pending", None, "not started yet"),
    ("completed", state("deliver"), "completed after 3 steps"),
    ("failed", state("running"), "failed after 3 steps"),
    ("failed", None, "failed before its first step"),
])
def test_the_phase_in_words(status: str, flow: dict[str, Any] | None, said: str) -> None:
    detail: dict[str, Any] = {"status": status, "body": {"openrelay": {"workflow": {"url": "u"}}}}
    if flow is not None:
        detail["workflow"] = flow
    assert is_workflow(detail)
    assert phase_text(detail) == said


def test_the_history_marks_the_running_step_and_how_it_ended() -> None:
    steps = [{"step": 1, "action": "continue", "requests": 4},
             {"step": 2, "action": "wait", "delay_ms": 5000},
             {"step": 3, "action": "continue", "requests": 1}]
    running = {"status": "pending", "workflow": state("running", history=steps)}
    assert history(running) == [("step 1", "continue → 4 requests", ""),
                                ("step 2", "wait 5s", ""),
                                ("step 3", "continue → 1 request", "◂ now: 2 of 4 done")]
    failed = {"status": "failed", "error_code": "workflow_failed",
              "workflow": state("deliver", history=steps[:1])}
    assert history(failed)[-1] == ("end", "failed", "the callback answered failed")
    cancelled = failed | {"error_code": "batch_cancelled"}
    assert history(cancelled)[-1] == ("end", "batch_cancelled", "")
    assert answer_text({"action": "wait", "delay_ms": 90_000}) == "wait 1m30s"


def test_summaries_cells_counters_and_callbacks() -> None:
    totals = {"steps": 2, "requests": 5, "input_tokens": 120, "output_tokens": 80}
    openai = {"custom_id": "f", "response": {"status_code": 200, "body": {
        "output": {"a": 1}, "openrelay": totals}}}
    assert workflow_summary({"custom_id": "f", "openrelay": totals}) == \
        workflow_summary(openai) == totals
    assert workflow_summary({"custom_id": "t", "openrelay": {"tool_rounds": 1}}) is None
    assert workflow_summary({"custom_id": "e", "error": "x"}) is None
    assert (steps_cell(totals), steps_cell({"steps": 1}), steps_cell(None)) == \
        ("▸2 steps", "▸1 step", "")
    assert totals_text(totals) == "2 steps · 5 requests · 120 input + 80 output tokens"
    assert counters_text({"started": 0, "ended": 0}) is None
    assert counters_text(None) is None
    assert counters_text({"started": 3, "ended": 1, "running": 1, "waiting": 1,
                          "calling_back": 0, "steps": 7, "requests": 21,
                          "input_tokens": 900, "output_tokens": 400}) == \
        "1 running · 1 waiting · 1 ended · 7 steps · 21 requests · 900 input + 400 output tokens"
    assert callback_text({"url": "https://cb", "authorization": "***", "max_requests": 10}) \
        == "https://cb (authorization ***, at most 10 requests)"
    assert not is_workflow({"status": "completed", "body": {"model": "m"}})
