"""Every screen at 80×24, the smallest terminal the TUI is laid out for, on the canned
`FakeRelay` (mock transport, a clock that stands still once the replay is over): what
is clipped or wrapped at 80 columns and 24 lines shows here. `test_snapshots.py` has
the same screens at 160×45 (and the jobs screen at 80×24 and 120×40). Regenerate with
`pytest tests/tui --snapshot-update`, and read what changed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from relaytui.app import RelayApp, build_app
from relaytui.client import RelayError
from relaytui.live import Connection
from relaytui.messages import FeedUpdate
from relaytui.screens.connect import ConnectScreen
from relaytui.screens.dead_letter import AttemptsScreen, DeadLetterScreen
from relaytui.screens.help import HelpScreen
from relaytui.screens.nodes import NodesScreen
from relaytui.screens.results import ResultsScreen
from relaytui.screens.row_detail import RowDetailScreen
from relaytui.screens.upload import UploadScreen
from relaytui.settings import Settings
from relaytui.testing import WORKFLOW_JOB, FakeRelay, job_id
from relaytui.widgets.command_line import CommandLine
from relaytui.widgets.confirm import ConfirmScreen
from relaytui.widgets.job_table import JobTable
from tests.tui.conftest import HERE, jobs_screen, on_board, wait_for
from tests.tui.test_snapshots import KEY, digest_results, settled

SIZE = (80, 24)
Snap = Callable[..., bool]


def app_on(fake: FakeRelay, key: str | None = KEY) -> RelayApp:
    return build_app(fake.client(key) if key else None,
                     Settings("http://127.0.0.1:8080", key), clock=fake.clock,
                     save=lambda _: None, start_dir=Path("fixtures"))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeRelay:
    monkeypatch.chdir(HERE)  # the upload tree shows a relative, stable root
    return FakeRelay()


def test_an_openai_batch_in_the_detail_pane(snap_compare: Snap, fake: FakeRelay) -> None:
    """The pane's facts wrap between facts, never inside one (`priority std`)."""
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)
        table = jobs_screen(app).query_one(JobTable)
        table.select(job_id(6, dialect="openai"))  # the embeddings backfill, expedited
        detail = jobs_screen(app).detail
        await wait_for(pilot, lambda: detail.loaded_id == job_id(6, dialect="openai"))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_finished_job_in_the_detail_pane(snap_compare: Snap, fake: FakeRelay) -> None:
    """Counters, usage, timestamps and the webhook outcome at 80 columns."""
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake, select=5)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_cron_template(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake, select=3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_jobs_filtered_to_failed_rows(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)
        await pilot.press(*"f" * 5)
        await wait_for(pilot, lambda: jobs_screen(app).status_filter == "failed rows")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_disconnected(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)
        jobs = jobs_screen(app)
        jobs.post_message(FeedUpdate(Connection(
            "down", "cannot reach relayd at http://127.0.0.1:8080", 4.0)))
        await wait_for(pilot, lambda: jobs.stale_since is not None)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


class RefusingRelay(FakeRelay):
    def jobs(self, **filters: Any) -> NoReturn:
        raise RelayError(401, "Invalid API key. Create one with relayd keys create.")


def test_a_refused_key_opens_the_key_dialog(snap_compare: Snap,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The top line names the key by its prefix (not as the workspace) and fits; the
    dialog opens by itself, saying why, with its buttons on screen."""
    monkeypatch.chdir(HERE)
    fake = RefusingRelay(replay=False)
    app = app_on(fake, key="rk_wrong7Kq2xLw9Vb4ZpR8sT1uYcN3")

    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, ConnectScreen))
        app.screen.query_one("#key", Input).cursor_blink = False
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_the_top_line_after_the_key_dialog_is_closed(snap_compare: Snap,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HERE)
    fake = RefusingRelay(replay=False)
    app = app_on(fake, key="rk_wrong7Kq2xLw9Vb4ZpR8sT1uYcN3")

    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, ConnectScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.jobs_screen)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_asking_for_a_key(snap_compare: Snap) -> None:
    app = build_app(None, Settings("http://127.0.0.1:8080", None), save=lambda _: None)

    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_for(pilot, lambda: app.screen.query("#key"))
        app.screen.query_one("#key", Input).cursor_blink = False
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_cancelling_asks_first(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake, select=1)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_the_command_line(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)
        await pilot.press("colon")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandLine))
        app.screen.query_one(Input).cursor_blink = False
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_dead_letter(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake, select=5)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, DeadLetterScreen)
                       and app.screen.entries)
        await pilot.press("down", "space")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_dead_lettered_row_and_its_attempts(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake, select=5)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, DeadLetterScreen)
                       and app.screen.entries)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, AttemptsScreen))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


TOOL_ENTRY = {
    "custom_id": "http-down", "attempts": 1, "models": ["gpt-4o-mini"], "status_code": None,
    "last_error": "tool_executor_unreachable: round 1: connection: could not connect to "
                  "127.0.0.1:9 (after 3 attempts)",
    "messages": [{"role": "user", "content": "Look up order A-1043."}],
    "attempt_log": [{"model": "gpt-4o-mini", "status_code": 200, "error": None,
                     "duration_ms": 412, "started_at": "2026-10-04T07:04:01.000Z"}],
    "executor_calls": [{"round": 1, "executor": "http", "status_code": None,
                        "error": "connection: could not connect to 127.0.0.1:9",
                        "duration_ms": 2, "started_at": f"2026-10-04T07:04:0{n}.500Z"}
                       for n in (1, 2, 3)],
    "redriven_to": None, "state": "open", "discarded_at": None}


def test_a_dead_lettered_tool_row_shows_its_executor_calls(snap_compare: Snap,
                                                           fake: FakeRelay) -> None:
    """The model answered (200); the executor was down three times: four lines, each
    with its status and error, and a count that agrees with the error."""
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)
        app.push_screen(AttemptsScreen(dict(TOOL_ENTRY)))
        await wait_for(pilot, lambda: isinstance(app.screen, AttemptsScreen))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_the_workspace_dead_letter(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)
        await pilot.press("D")
        await wait_for(pilot, lambda: isinstance(app.screen, DeadLetterScreen)
                       and app.screen.entries)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_results(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake, select=5)
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen)
                       and app.screen.items)
        for _ in range(9):
            await pilot.press("down")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_results_with_tool_rounds(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await digest_results(pilot, fake, down=7)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_row_and_its_transcript(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await digest_results(pilot, fake, down=8)  # digest-09: a tool answered an error
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, RowDetailScreen)
                       and app.screen.detail)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_tool_row_whose_executor_went_down(snap_compare: Snap, fake: FakeRelay) -> None:
    """digest-07: its model attempts and executor calls, in the order made."""
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await digest_results(pilot, fake, down=6)
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, RowDetailScreen)
                       and app.screen.detail)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_workflow_row(snap_compare: Snap, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HERE)
    fake = FakeRelay(workflows=True)
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake, select=None)
        view = on_board(jobs_screen(app), WORKFLOW_JOB)
        assert app.client is not None
        app.push_screen(RowDetailScreen(app.client, view, "notes-2.4"))
        await wait_for(pilot, lambda: isinstance(app.screen, RowDetailScreen)
                       and app.screen.detail)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_upload_with_a_preview(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)
        await pilot.press("u")
        upload = await wait_for(pilot, lambda: isinstance(app.screen, UploadScreen)
                                and app.screen)
        await wait_for(pilot, lambda: upload.query_one("#model").value == "gpt-4o-mini")
        path = upload.query_one("#path")
        path.cursor_blink = False
        path.focus()
        path.value = "fixtures/reviews.csv"
        await pilot.press("enter")
        await wait_for(pilot, lambda: upload.rows is not None)
        tree = upload.query_one("#tree")
        await wait_for(pilot, lambda: len(tree.root.children) == 3, what="the tree")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_nodes(snap_compare: Snap, fake: FakeRelay) -> None:
    app = app_on(fake)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settled(pilot, fake)
        await pilot.press("n")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, NodesScreen)
                                and app.screen)
        await wait_for(pilot, lambda: screen.query_one("#nodes").row_count > 0)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)

