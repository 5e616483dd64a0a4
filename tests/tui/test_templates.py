"""A cron template's next run on the jobs screen (Pilot, on `FakeRelay` and its clock
that moves only when told): the ETA column and the detail pane count down to it, and
once it has come the template is fetched again, on the clock's tick or when its run's
`job.created` arrives, so a time gone by never reads as the next run."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from relaytui.app import RelayApp, build_app
from relaytui.live import JobEvent
from relaytui.messages import FeedUpdate
from relaytui.settings import Settings
from relaytui.testing import FakeRelay, canned_jobs, job_id
from relaytui.widgets.job_detail import JobDetail
from relaytui.widgets.job_table import JobTable
from tests.tui.conftest import HERE, SIZE, jobs_screen, on_board, wait_for

TEMPLATE = job_id(3)  # "Nightly digest", 0 2 * * *: next run 2026-10-05 02:00:00Z
DAY = 86400


def app_on(fake: FakeRelay) -> RelayApp:
    return build_app(fake.client(), Settings("http://127.0.0.1:8080", "rk_test_key_123"),
                     clock=fake.clock, save=lambda _: None, start_dir=HERE / "fixtures")


async def on_the_template(pilot: Pilot[Any]) -> tuple[JobTable, JobDetail]:
    jobs = jobs_screen(pilot.app)
    table, detail = jobs.query_one(JobTable), jobs.query_one(JobDetail)
    await wait_for(pilot, lambda: table.row_count == len(canned_jobs()))
    table.select(TEMPLATE)
    await wait_for(pilot, lambda: detail.loaded_id == TEMPLATE, what="the template")
    return table, detail


def extra(detail: JobDetail) -> str:
    return str(detail.query_one("#extra").render())


async def test_once_the_next_run_has_come_the_template_is_fetched_again() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        table, detail = await on_the_template(pilot)
        jobs = jobs_screen(app)
        assert "next run 2026-10-05 02:00:00Z (in 16h30m)" in extra(detail)
        assert str(table.get_cell(TEMPLATE, "eta")) == "16h30m"

        due = on_board(jobs, TEMPLATE).next_run_at
        assert due is not None
        fake.clock.now = due + 1  # relayd ran it (FakeRelay moves it on when asked)
        jobs._tick()  # the screen's once-a-second tick
        assert "next run due since 02:00:00Z" in extra(detail)  # never a past time
        assert str(table.get_cell(TEMPLATE, "eta")) == "due"

        await wait_for(pilot, lambda: on_board(jobs, TEMPLATE).next_run_at == due + DAY,
                       what="the template fetched again")
        await wait_for(pilot, lambda: "next run 2026-10-06 02:00:00Z (in 23h59m)"
                       in extra(detail), what="the detail pane")
        assert str(table.get_cell(TEMPLATE, "eta")) == "23h59m"


async def test_a_runs_creation_fetches_its_template_at_once() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        _, detail = await on_the_template(pilot)
        jobs = jobs_screen(app)
        due = fake.jobs_by_id[TEMPLATE]["next_run_at"]
        fake.jobs_by_id[TEMPLATE]["next_run_at"] = due + DAY  # relayd moved it on
        run = dict(canned_jobs()[-1], id=job_id(30), status="queued", cron=None,
                   next_run_at=None, template_id=TEMPLATE)
        jobs.post_message(FeedUpdate(JobEvent("job.created", run, fake.clock())))
        await wait_for(pilot, lambda: on_board(jobs, TEMPLATE).next_run_at == due + DAY,
                       what="the template fetched again")
        await wait_for(pilot, lambda: "2026-10-06 02:00:00Z" in extra(detail))
