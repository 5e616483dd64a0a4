"""The footer fits the terminal: roomy when it can, then compact, then without the
command palette's key, then without the screen's last keys; `?` and `q` always stay.
The rule as a plain function, then every screen at 80×24 (Pilot, on `FakeRelay`)."""

from __future__ import annotations

from functools import partial
from itertools import pairwise
from typing import Any

from textual.screen import Screen
from textual.widgets._footer import FooterKey

from relaytui.app import RelayApp, build_app
from relaytui.screens.dead_letter import DeadLetterScreen
from relaytui.screens.help import HelpScreen
from relaytui.screens.results import ResultsScreen
from relaytui.screens.upload import UploadScreen
from relaytui.settings import Settings
from relaytui.testing import FakeRelay, job_id
from relaytui.widgets.footer import Fit, RelayFooter, fit
from relaytui.widgets.job_table import JobTable
from tests.tui.conftest import HERE, jobs_screen, wait_for

KEYS = [(7, False), (7, False), (12, False), (5, True), (5, True)]  # 36 cells of labels


def test_keys_stay_roomy_while_they_fit() -> None:
    assert fit(KEYS, 9, 36 + 5 * 3 + 12) == Fit(False, True, (True,) * 5)


def test_then_compact_then_without_the_palette() -> None:
    assert fit(KEYS, 9, 36 + 5 * 2 + 12) == Fit(True, True, (True,) * 5)
    assert fit(KEYS, 9, 36 + 5 * 2) == Fit(True, False, (True,) * 5)


def test_then_the_last_screen_keys_leave_and_help_and_quit_stay() -> None:
    assert fit(KEYS, 9, 40) == Fit(True, False, (True, True, False, True, True))
    assert fit(KEYS, 9, 20) == Fit(True, False, (False, False, False, True, True))
    assert fit(KEYS, None, 3) == Fit(True, False, (False, False, False, True, True))


def shown_keys(app: RelayApp) -> list[FooterKey]:
    return [k for k in app.screen.query(FooterKey) if k.display and k.region]


def fits(app: RelayApp, width: int) -> bool:
    keys = sorted(shown_keys(app), key=lambda k: k.region.x)
    inside = all(k.region.right <= width for k in keys)
    apart = all(a.region.right <= b.region.x for a, b in pairwise(keys))
    return inside and apart


async def test_at_80_columns_every_screens_footer_fits_and_keeps_help_and_quit() -> None:
    fake = FakeRelay(replay=False)
    app = build_app(fake.client(), Settings("http://127.0.0.1:8080", "rk_test_key_123"),
                    clock=fake.clock, save=lambda _: None, start_dir=HERE / "fixtures")
    async with app.run_test(size=(80, 24)) as pilot:
        table = jobs_screen(app).query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count)
        table.select(job_id(5))  # a finished job, with dead-lettered rows
        await pilot.pause()
        seen = {}

        def showing(kind: type[Screen[Any]] | None) -> bool:
            return kind is not None and isinstance(app.screen, kind)
        for key, screen in (("", None), ("d", DeadLetterScreen), ("v", ResultsScreen),
                            ("u", UploadScreen), ("question_mark", HelpScreen)):
            if key:
                await pilot.press(key)
                await wait_for(pilot, partial(showing, screen))
            await pilot.pause()
            assert fits(app, 80), type(app.screen).__name__
            shown = [k.key_display for k in shown_keys(app)]
            assert "?" in shown or isinstance(app.screen, HelpScreen)
            assert "q" in shown or isinstance(app.screen, (HelpScreen, UploadScreen))
            seen[type(app.screen).__name__] = shown
            if key:
                await pilot.press("escape")
                await wait_for(pilot, lambda: app.screen is app.jobs_screen)
        # the jobs screen keeps all its keys at 80 columns (compact, without ^p)
        assert seen["JobsScreen"] == ["f", "/", "v", "d", "c", "u", "?", "q"]


async def test_at_160_columns_the_footer_is_roomy_with_the_palette() -> None:
    fake = FakeRelay(replay=False)
    app = build_app(fake.client(), Settings("http://127.0.0.1:8080", "rk_test_key_123"),
                    clock=fake.clock, save=lambda _: None, start_dir=HERE / "fixtures")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        footer = app.screen.query_one("RelayFooter", RelayFooter)
        assert not footer.compact
        assert [k.key_display for k in shown_keys(app)][-1] == "^p"
