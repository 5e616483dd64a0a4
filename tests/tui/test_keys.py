"""The conventions of issue 13: vim moves (`j` `k` `g` `G`), the `:` command line, the
key change on `K`, and `--read-only` (the writing actions hidden and refused)."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input

from relaytui.app import RelayApp, build_app
from relaytui.cli import build_parser
from relaytui.keys import COLON_COMMANDS, colon_action, colon_hint
from relaytui.screens.connect import ConnectScreen
from relaytui.screens.dead_letter import DeadLetterScreen
from relaytui.screens.help import HelpScreen
from relaytui.screens.jobs import JobsScreen
from relaytui.screens.upload import UploadScreen
from relaytui.settings import Settings
from relaytui.testing import FakeRelay, canned_jobs, job_id
from relaytui.widgets.command_line import CommandLine
from relaytui.widgets.job_table import JobTable
from tests.tui.conftest import HERE, SIZE, jobs_screen, wait_for


def app_on(fake: FakeRelay, **options: Any) -> RelayApp:
    return build_app(fake.client(), Settings("http://127.0.0.1:8080", "rk_test_key_123"),
                     clock=fake.clock, save=lambda _: None, start_dir=HERE / "fixtures",
                     **options)


def notes(app: RelayApp) -> list[str]:
    return [n.message for n in app._notifications]


def test_the_colon_prompt_hint_names_every_command_and_its_key() -> None:
    hint = colon_hint()
    assert hint == "jobs · dead · nodes (n) · help (?) · key (K) · q"
    assert set(COLON_COMMANDS) - {"quit"} <= {w.split(" ")[0] for w in hint.split(" · ")}


def test_colon_commands_are_read_loosely() -> None:
    assert colon_action("jobs") == colon_action(":jobs ") == "show_jobs"
    assert colon_action("DEAD") == "show_dead_letter"
    assert colon_action("q") == colon_action("quit") == "quit"
    assert colon_action("nope") is None


async def test_j_k_g_G_move_the_cursor() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        table = jobs_screen(app).query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == len(canned_jobs()))
        assert table.has_focus and table.cursor_row == 0
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("g")
        assert table.cursor_row == 0
        await pilot.press("slash", "j")  # typed into the search, not a move
        assert jobs_screen(app).query_one("#search", Input).value == "j"


async def test_the_command_line_opens_views_quits_and_refuses_unknown_words() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(jobs_screen(app).board) > 0)
        await pilot.press("colon", *"dead", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DeadLetterScreen))
        dead_letter = app.screen  # a name of its own: mypy keeps app.screen unnarrowed
        assert isinstance(dead_letter, DeadLetterScreen) and dead_letter.workspace_wide
        await pilot.press("question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        await pilot.press("colon", *"jobs", "enter")
        await wait_for(pilot, lambda: app.screen is app.jobs_screen)
        await pilot.press("colon", *"frobnicate", "enter")
        await wait_for(pilot, lambda: any("Unknown command :frobnicate" in m
                                          for m in notes(app)))
        assert app.screen is jobs_screen(app)
        await pilot.press("colon", "x", "escape")  # closes, runs nothing
        assert app.screen is jobs_screen(app) and not isinstance(app.screen, CommandLine)
        await pilot.press("colon", "q", "enter")
        await wait_for(pilot, lambda: not app.is_running)


async def test_the_key_is_changed_with_K_and_k_no_longer_opens_it() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(jobs_screen(app).board) > 0)
        await pilot.press("k")
        assert isinstance(app.screen, JobsScreen)
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, ConnectScreen))


async def test_read_only_hides_and_refuses_every_write() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        jobs = jobs_screen(app)
        await wait_for(pilot, lambda: job_id(1) in jobs.board)
        assert "read-only" in str(jobs.query_one("#connection").render())
        shown = {b.action for _, b, _, _ in jobs.active_bindings.values() if b.show}
        assert not shown & {"cancel", "upload"} and "results" in shown
        jobs.query_one(JobTable).select(job_id(1))  # running: could be cancelled
        await pilot.press("c", "u", "K")
        assert app.screen is jobs and fake.cancelled == []
        assert sum("--read-only" in m for m in notes(app)) == 3
        await pilot.press("d")
        dead = await wait_for(pilot, lambda: isinstance(app.screen, DeadLetterScreen)
                              and app.screen)
        await pilot.press("r", "R", "x")
        assert app.screen is dead and fake.retried == [] and fake.discarded == []
        assert sum("--read-only" in m for m in notes(app)) == 6
        assert not {b.action for _, b, _, _ in dead.active_bindings.values() if b.show} \
            & {"redrive_marked", "redrive_all", "discard"}
        await pilot.press("escape", "question_mark")
        assert "off: read-only" in str(app.screen.query_one("#help Static").render())


async def test_an_upload_screen_opened_before_read_only_cannot_submit() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(jobs_screen(app).board) > 0)
        assert app.client is not None
        app.push_screen(UploadScreen(app.client, start_dir=HERE / "fixtures"))
        await pilot.pause()
        assert isinstance(app.screen, UploadScreen)
        app.screen.action_submit()
        await wait_for(pilot, lambda: any("--read-only" in m for m in notes(app)))
        assert fake.submitted == []


def test_relay_takes_read_only() -> None:
    assert build_parser().parse_args(["--read-only"]).read_only is True
    assert build_parser().parse_args([]).read_only is False
