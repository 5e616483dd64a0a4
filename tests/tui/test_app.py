"""The app on the in-memory `FakeRelay`: connecting without a key, refusals shown in the
form, failures as notifications, the command palette, and a thousand jobs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, NoReturn

from textual.widgets import Input, Static

from relaytui.api import RelayApi
from relaytui.app import RelayApp, build_app
from relaytui.client import Event, RelayClient, RelayError
from relaytui.live import JobEvent
from relaytui.messages import FeedUpdate
from relaytui.screens.connect import ConnectScreen
from relaytui.screens.dead_letter import DeadLetterScreen
from relaytui.screens.jobs import JobsScreen
from relaytui.screens.results import ResultsScreen
from relaytui.screens.upload import UploadScreen
from relaytui.settings import Settings
from relaytui.testing import FakeRelay, canned_jobs, canned_model, job_event, job_id
from relaytui.widgets.confirm import ConfirmScreen
from relaytui.widgets.job_table import JobTable
from tests.tui.conftest import HERE, SIZE, jobs_screen, on_board, wait_for


def app_on(fake: FakeRelay, saved: list[Settings] | None = None, *,
           client: RelayApi | None = None, **options: Any) -> RelayApp:
    """The app on `fake` (through `client` when given: one of `fake.client()`)."""
    return build_app(client or fake.client(), Settings("http://127.0.0.1:8080", "rk_test_key_123"),
                     clock=fake.clock, save=([] if saved is None else saved).append,
                     start_dir=HERE / "fixtures", **options)


async def test_without_a_key_it_asks_for_one_and_saves_it() -> None:
    saved, made = list[Settings](), list[tuple[str, str]]()

    def connect(url: str, key: str) -> RelayClient:
        made.append((url, key))
        return FakeRelay(url=url, replay=False).client(key)

    app = build_app(None, Settings("http://127.0.0.1:8080", None), save=saved.append,
                    connect=connect)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConnectScreen))
        await pilot.press("enter")  # no key yet: stays open
        assert isinstance(app.screen, ConnectScreen)
        await pilot.press(*"rk_pasted", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen))
        assert saved == [Settings("http://127.0.0.1:8080", "rk_pasted")]
        assert made == [("http://127.0.0.1:8080", "rk_pasted")]
        await wait_for(pilot, lambda: len(jobs_screen(app).board) == len(canned_jobs()))


async def test_leaving_the_key_dialog_without_a_key_quits_cleanly() -> None:
    app = build_app(None, Settings("http://127.0.0.1:8080", None), save=lambda _: None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConnectScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_code == 1


class ForgetfulRelay(FakeRelay):
    """Lists a model the daemon no longer knows (the list was stale)."""

    def models(self) -> dict[str, Any]:
        listing = super().models()
        listing["data"].insert(0, canned_model("gone-model"))
        return listing


async def test_a_model_the_daemon_does_not_know_is_refused_in_the_form() -> None:
    fake = ForgetfulRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("u")
        upload = await wait_for(pilot, lambda: isinstance(app.screen, UploadScreen)
                                and app.screen)
        await wait_for(pilot, lambda: upload.query_one("#model").value == "gpt-4o-mini")
        upload.query_one("#model").value = "gone-model"
        upload.query_one("#path").focus()  # the tree has it at first
        upload.query_one("#path").value = str(HERE / "fixtures" / "openai-records.jsonl")
        await pilot.press("enter")
        await wait_for(pilot, lambda: upload.rows is not None)
        assert "2 rows" in str(upload.query_one("#file-status").render())
        await pilot.press("ctrl+s")
        status = upload.query_one("#submit-status")
        await wait_for(pilot, lambda: "Unknown model 'gone-model'" in str(status.render()))
        assert "field: model" in str(status.render())
        assert upload.query_one("#model").has_class("-invalid")
        assert fake.submitted == [] and not upload.query_one("#submit").disabled


class BrokenRelay(FakeRelay):
    def results(self, job_id: str, **paging: Any) -> NoReturn:
        raise RuntimeError("the disk is on fire")

    def dead_letter(self, job_id: str) -> NoReturn:
        raise RelayError(404, f"No batch {job_id}.")


async def test_a_failing_worker_is_a_notification_not_a_crash() -> None:
    fake = BrokenRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        jobs = jobs_screen(app)
        await wait_for(pilot, lambda: job_id(5) in jobs.board)
        jobs.query_one(JobTable).select(job_id(5))
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen))
        await wait_for(pilot, lambda: any("the disk is on fire" in n.message
                                          for n in app._notifications))
        await pilot.press("escape", "d")
        await wait_for(pilot, lambda: "No batch" in str(app.screen.query_one(
            "#dead-summary").render()))
        assert app.is_running


async def test_actions_on_jobs_that_cannot_take_them_explain_why() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        jobs = jobs_screen(app)
        await wait_for(pilot, lambda: job_id(1) in jobs.board)
        jobs.query_one(JobTable).select(job_id(1))  # running
        await pilot.press("v")
        jobs.query_one(JobTable).select(job_id(5))  # completed
        await pilot.press("c")
        messages = [n.message for n in app._notifications]
        assert any("results come when it ends" in m for m in messages)
        assert any("has already ended" in m for m in messages)
        assert app.screen is jobs and fake.cancelled == []


async def test_the_command_palette_runs_every_action_by_name() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(jobs_screen(app).board) > 0)
        await pilot.press("ctrl+p", *"upload", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, UploadScreen))
        await pilot.press("escape", "ctrl+p", *"light", "enter")
        await wait_for(pilot, lambda: app.theme == "textual-light")


async def test_search_and_status_filters_narrow_the_table() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        jobs = jobs_screen(app)
        table = jobs.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == len(canned_jobs()))
        await pilot.press("slash", *"nightly")
        assert table.row_count == 2
        await pilot.press("enter", "f", "f", "f")  # running, queued, completed
        assert (jobs.status_filter, table.row_count) == ("completed", 1)
        assert "search: nightly" in str(table.border_title)
        await pilot.press("escape")
        assert table.row_count == len(canned_jobs())


async def test_the_failed_rows_filter_finds_jobs_that_completed_with_errors() -> None:
    """`f` to "failed rows": every job with a row that ran and failed, whatever its
    status (a completed one reads "with errors"); "failed" is the job's own status."""
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        jobs = jobs_screen(app)
        table = jobs.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == len(canned_jobs()))
        with_failed_rows = {v.id for v in jobs.board.views() if v.failed_rows > 0}
        assert any(jobs.board.get(i).status == "completed"  # type: ignore[union-attr]
                   for i in with_failed_rows)
        await pilot.press(*"f" * 5)  # running, queued, completed, failed, failed rows
        assert jobs.status_filter == "failed rows"
        assert {str(key.value) for key in table.rows} == with_failed_rows
        assert "status: failed rows" in str(table.border_title)


class ThousandJobs(FakeRelay):
    def __init__(self) -> None:
        super().__init__(replay=False)
        base = canned_jobs()[1]
        self.jobs_by_id = {}
        for i in range(1000):
            status = "running" if i < 50 else "queued" if i < 150 else "completed"
            job = dict(base, id=f"{i:032x}", name=f"job {i}", status=status,
                       created_at=base["created_at"] - i)
            self.jobs_by_id[job["id"]] = job

    def replay(self) -> Iterator[Event]:
        """No snapshots: one generated before the test's events but delivered after them
        (the stream's thread is slow on a loaded machine) would undo them."""
        return iter(())


async def test_a_thousand_jobs_stay_smooth() -> None:
    fake = ThousandJobs()
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        jobs = jobs_screen(app)
        table = jobs.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 1000)
        rebuilt: list[int] = []

        def fill() -> None:
            rebuilt.append(1)
        table.fill = fill  # type: ignore[method-assign]
        started = time.monotonic()
        for step in range(20):  # 1,000 progress events
            for i in range(50):
                job = fake.jobs_by_id[f"{i:032x}"]
                job["completed"] = 160 + step  # relayd's state agrees with its events
                data = job_event(job)
                jobs.post_message(FeedUpdate(JobEvent("job.progress", data, fake.clock())))
        for i in range(50, 150):  # 100 jobs start: their rows move
            job = fake.jobs_by_id[f"{i:032x}"]
            job["status"] = "running"  # (a listing read mid-test must not undo them)
            data = job_event(job)
            jobs.post_message(FeedUpdate(JobEvent("job.progress", data, fake.clock())))
        await wait_for(pilot, lambda: on_board(jobs, f"{149:032x}").status == "running")
        elapsed = time.monotonic() - started
        assert elapsed < 5, elapsed  # about 0.5 s here; a rebuild per event takes minutes
        assert rebuilt == []
        assert str(table.get_cell(f"{49:032x}", "count")) == "181/300"
        assert table.get_row_index(f"{149:032x}") < 150  # running ones on top


class RefusingRelay(FakeRelay):
    def jobs(self, **filters: Any) -> NoReturn:
        raise RelayError(401, "Invalid API key.")


async def test_a_refused_key_says_so_and_K_connects_with_another() -> None:
    saved, made = list[Settings](), list[str]()

    def connect(url: str, key: str) -> RelayClient:
        made.append(key)
        return FakeRelay(url=url, replay=False).client(key)

    app = app_on(RefusingRelay(replay=False), saved, connect=connect)
    async with app.run_test(size=SIZE) as pilot:
        first = jobs_screen(app)
        bar = first.query_one("#connection")
        await wait_for(pilot, lambda: "key refused" in str(bar.render()))
        assert "Invalid API key." in str(bar.render()) and "press K" in str(bar.render())
        assert "key rk_test_ke…" in str(bar.render())  # its prefix, not as the workspace
        # the dialog opens by itself, saying why; closed, K opens it again
        await wait_for(pilot, lambda: isinstance(app.screen, ConnectScreen))
        assert "relayd refused this key: Invalid API key." in str(
            app.screen.query_one(".hint", Static).render())
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is first)
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, ConnectScreen))
        app.screen.query_one("#key", Input).value = "rk_better"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.jobs_screen is not first
                       and len(jobs_screen(app).board) == len(canned_jobs()))
        assert made == ["rk_better"] and saved[-1].key == "rk_better"
        assert "rk_better" in str(jobs_screen(app).query_one("#connection").render())
        assert first.feed.stopped  # the old connection's feed ended with its screen


async def open_dead_letter(pilot: Any, app: Any, fake: FakeRelay) -> Any:
    """The dead-letter screen of job 5, once its entries are shown."""
    await wait_for(pilot, lambda: job_id(5) in app.jobs_screen.board)
    app.push_screen(DeadLetterScreen(app.client, app.jobs_screen.board.get(job_id(5))))
    return await wait_for(pilot, lambda: isinstance(app.screen, DeadLetterScreen)
                          and app.screen.entries and app.screen)


async def test_re_driving_asks_first_and_again_for_a_row_re_driven_already() -> None:

    fake = FakeRelay(replay=False)
    app = build_app(fake.client(), Settings("http://relay", "rk_x"), clock=fake.clock,
                    save=lambda _: None)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_dead_letter(pilot, app, fake)
        await pilot.press("R")
        assert isinstance(app.screen, ConfirmScreen) and fake.retried == []
        await pilot.press("y")
        await wait_for(pilot, lambda: len(fake.retried) == 1 and not screen.redriving)
        await wait_for(pilot, lambda: all(e["redriven_to"] for e in screen.entries))
        assert "→" in str(screen.query_one("#dead").get_cell_at((0, 4)))
        await pilot.press("r")  # the highlighted row went somewhere already: ask again
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert len(fake.retried) == 1
        await pilot.press("r", "y")
        await wait_for(pilot, lambda: len(fake.retried) == 2)
        assert fake.forced == [False, True]
        await pilot.press("x")  # nothing open is left to discard
        assert not isinstance(app.screen, ConfirmScreen) and fake.discarded == []


async def test_discarding_asks_first_and_the_row_reads_discarded() -> None:

    fake = FakeRelay(replay=False)
    app = build_app(fake.client(), Settings("http://relay", "rk_x"), clock=fake.clock,
                    save=lambda _: None)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_dead_letter(pilot, app, fake)
        await pilot.press("x", "y")
        await wait_for(pilot, lambda: fake.discarded == [(job_id(5), ["review-0010"])])
        await wait_for(pilot, lambda: screen.entries[0]["state"] == "discarded")
        assert fake.jobs_by_id[job_id(5)]["dead_letter_open"] == 2


async def test_at_80_columns_the_name_shortens_and_the_vital_columns_stay() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=(80, 24)) as pilot:
        table = jobs_screen(app).query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == len(canned_jobs()))
        keys = [c.key.value for c in table.columns.values()]
        assert keys == ["status", "name", "progress", "failed", "dead", "eta"]
        assert table.virtual_size.width <= table.scrollable_content_region.width
        await pilot.resize_terminal(160, 45)
        await wait_for(pilot, lambda: len(table.columns) == 11)
        assert table.row_count == len(canned_jobs())
        assert str(table.get_cell(job_id(1), "model")) == fake.jobs_by_id[job_id(1)]["model"]


async def test_p_pauses_the_selected_job_and_resumes_it() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        jobs = jobs_screen(app)
        await wait_for(pilot, lambda: job_id(2) in jobs.board)
        jobs.query_one(JobTable).select(job_id(2))  # running
        await pilot.press("p")
        await wait_for(pilot, lambda: paused(jobs, job_id(2)) == "operator")
        assert "⏸ operator" in str(jobs.query_one(JobTable).get_cell(job_id(2), "status"))
        await pilot.press("p")
        await wait_for(pilot, lambda: paused(jobs, job_id(2)) == "")
        assert fake.paused == [(job_id(2), "operator"), (job_id(2), None)]
        jobs.query_one(JobTable).select(job_id(5))  # completed: nothing to pause
        await pilot.press("p")
        assert any("has already ended" in n.message for n in app._notifications)
        assert len(fake.paused) == 2


def paused(jobs: JobsScreen, job: str) -> str | None:
    view = jobs.board.get(job)
    assert view is not None
    return view.paused
