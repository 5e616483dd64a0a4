"""Snapshots of every screen at 160×45 on the canned `FakeRelay` (fixed data, a clock
that stands still once the replay is over), so they only change when the UI does.
Regenerate with `pytest tests/tui --snapshot-update` and look at what changed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from relaytui.app import RelayApp, build_app
from relaytui.screens.dead_letter import AttemptsScreen, DeadLetterScreen
from relaytui.screens.results import ResultsScreen
from relaytui.screens.row_detail import RowDetailScreen
from relaytui.screens.upload import UploadScreen
from relaytui.settings import Settings
from relaytui.testing import WORKFLOW_JOB, FakeRelay, job_id
from relaytui.widgets.header import ConnectionBar
from relaytui.widgets.job_detail import JobDetail
from relaytui.widgets.job_table import JobTable
from tests.tui.conftest import HERE, SIZE, jobs_screen, on_board, wait_for

KEY = "rk_demo7Kq2xLw9Vb4ZpR8sT1uYcN3"


@pytest.fixture
def fake_app(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeRelay, RelayApp]:
    monkeypatch.chdir(HERE)  # the upload tree shows a relative, stable root
    fake = FakeRelay()
    app = build_app(fake.client(), Settings("http://127.0.0.1:8080", KEY), clock=fake.clock,
                    save=lambda _: None, start_dir=Path("fixtures"))
    return fake, app


async def settled(pilot: Pilot[Any], fake: FakeRelay, *, select: int | None = None) -> None:
    """The replay is over, the table drawn and the detail pane loaded."""
    app = pilot.app
    await wait_for(pilot, fake.replayed.is_set, what="the replay")
    jobs = jobs_screen(app)
    await wait_for(pilot, lambda: (view := jobs.board.get(job_id(2))) is not None
                   and view.completed == 556, what="the last progress event")
    await wait_for(pilot, lambda: jobs.query_one(ConnectionBar).connection.state == "live")
    await wait_for(pilot, lambda: jobs.stats is not None, what="the workspace stats")
    if select is not None:
        jobs.query_one(JobTable).select(job_id(select))
    detail = jobs.query_one(JobDetail)
    await wait_for(pilot, lambda: detail.job_id and detail.loaded_id == detail.job_id,
                   what="the detail pane")
    await pilot.pause()


def test_jobs_with_the_detail_pane(snap_compare: Callable[..., bool],
                                   fake_app: tuple[FakeRelay, RelayApp]) -> None:
    fake, app = fake_app

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_cron_template_in_the_light_theme(snap_compare: Callable[..., bool],
                                            fake_app: tuple[FakeRelay, RelayApp]) -> None:
    fake, app = fake_app

    async def run_before(pilot: Pilot[Any]) -> None:
        app.theme = "textual-light"
        await settled(pilot, fake, select=3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_dead_letter(snap_compare: Callable[..., bool],
                     fake_app: tuple[FakeRelay, RelayApp]) -> None:
    fake, app = fake_app

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake, select=5)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, DeadLetterScreen)
                       and app.screen.entries)
        await pilot.press("down", "space")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_dead_lettered_row_and_its_attempts(snap_compare: Callable[..., bool],
                                              fake_app: tuple[FakeRelay, RelayApp]) -> None:
    fake, app = fake_app

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake, select=5)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, DeadLetterScreen)
                       and app.screen.entries)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, AttemptsScreen))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_the_workspace_dead_letter_after_a_re_drive(snap_compare: Callable[..., bool],
                                                    fake_app: tuple[FakeRelay, RelayApp]) -> None:
    """`D`: open rows of every job; one re-driven (it shows the job it went to)."""
    fake, app = fake_app
    fake.retry_dead_letter(job_id(5), ["review-0042"])

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)
        fake.dead_letters[job_id(5)][1]["state"] = "open"  # listed, though re-driven
        await pilot.press("D")
        await wait_for(pilot, lambda: isinstance(app.screen, DeadLetterScreen)
                       and app.screen.entries)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_results(snap_compare: Callable[..., bool], fake_app: tuple[FakeRelay, RelayApp]) -> None:
    fake, app = fake_app

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake, select=5)
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen)
                       and app.screen.items)
        for _ in range(9):
            await pilot.press("down")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def digest_results(pilot: Pilot[Any], fake: FakeRelay, *, down: int) -> None:
    """The results of the nightly digest (tool-calling records), `down` rows down."""
    app = pilot.app
    await settled(pilot, fake, select=4)
    await pilot.press("v")
    await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen.items)
    for _ in range(down):
        await pilot.press("down")


def test_results_with_tool_rounds(snap_compare: Callable[..., bool],
                                  fake_app: tuple[FakeRelay, RelayApp]) -> None:
    fake, app = fake_app

    async def run_before(pilot: Pilot[Any]) -> None:
        await digest_results(pilot, fake, down=7)  # digest-08: the round limit ended it
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_row_and_its_transcript(snap_compare: Callable[..., bool],
                                  fake_app: tuple[FakeRelay, RelayApp]) -> None:
    fake, app = fake_app

    async def run_before(pilot: Pilot[Any]) -> None:
        await digest_results(pilot, fake, down=8)  # digest-09: a tool answered an error
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, RowDetailScreen)
                       and app.screen.detail)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_workflow_row(snap_compare: Callable[..., bool], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HERE)
    fake = FakeRelay(workflows=True)  # a running batch of workflow records
    app = build_app(fake.client(), Settings("http://127.0.0.1:8080", KEY), clock=fake.clock,
                    save=lambda _: None, start_dir=Path("fixtures"))

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake, select=None)
        view = on_board(jobs_screen(app), WORKFLOW_JOB)
        assert app.client is not None
        app.push_screen(RowDetailScreen(app.client, view, "notes-2.4"))  # completed, 2 steps
        await wait_for(pilot, lambda: isinstance(app.screen, RowDetailScreen)
                       and app.screen.detail)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_upload_with_a_preview(snap_compare: Callable[..., bool],
                               fake_app: tuple[FakeRelay, RelayApp]) -> None:
    fake, app = fake_app

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)
        await pilot.press("u")
        upload = await wait_for(pilot, lambda: isinstance(app.screen, UploadScreen)
                                and app.screen)
        await wait_for(pilot, lambda: upload.query_one("#model").value == "gpt-4o-mini")
        path = upload.query_one("#path")
        path.cursor_blink = False
        path.focus()  # the tree has it at first
        path.value = "fixtures/reviews.csv"
        await pilot.press("enter")
        await wait_for(pilot, lambda: upload.rows is not None)
        tree = upload.query_one("#tree")
        await wait_for(pilot, lambda: len(tree.root.children) == 3, what="the tree")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help(snap_compare: Callable[..., bool], fake_app: tuple[FakeRelay, RelayApp]) -> None:
    fake, app = fake_app

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_asking_for_a_key(snap_compare: Callable[..., bool],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    app = build_app(None, Settings("http://127.0.0.1:8080", None), save=lambda _: None)

    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_for(pilot, lambda: app.screen.query("#key"))
        app.screen.query_one("#key", Input).cursor_blink = False
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


NARROW = (80, 24)


def test_jobs_at_80_columns(snap_compare: Callable[..., bool],
                            fake_app: tuple[FakeRelay, RelayApp]) -> None:
    """Status, progress, failed, DL and ETA stay; the name shortens, and age, rows/s,
    priority, model and done/total leave. The header is two lines, without the plot;
    the footer goes compact and keeps every key of the screen."""
    fake, app = fake_app

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


def test_jobs_at_120_columns(snap_compare: Callable[..., bool],
                             fake_app: tuple[FakeRelay, RelayApp]) -> None:
    """The header keeps its plot and the models; tokens, cost and the queue go to the
    border's foot."""
    fake, app = fake_app

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
