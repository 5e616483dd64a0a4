"""The jobs screen's header and failing banner (Pilot, on `FakeRelay`'s canned stats):
what they show, how they fit 160×45, 120×40 and 80×24, the stale marking while relayd
is away, the notifications when a model starts and stops failing, and `w`."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.pilot import Pilot
from textual.widget import Widget

from relaytui.app import RelayApp, build_app
from relaytui.client import RelayError
from relaytui.live import Connection
from relaytui.messages import FeedUpdate
from relaytui.settings import Settings
from relaytui.testing import NOW, FakeRelay, job_id
from relaytui.testing_stats import canned_stats
from relaytui.widgets.header import FailingBanner
from relaytui.widgets.job_detail import JobDetail
from relaytui.widgets.stats_header import StatsHeader, ThroughputPlot, header_mode
from tests.tui.conftest import HERE, SIZE, jobs_screen, wait_for

NARROW = (80, 24)


def app_on(fake: FakeRelay, **options: Any) -> RelayApp:
    return build_app(fake.client(), Settings("http://127.0.0.1:8080", "rk_test_key_123"),
                     clock=fake.clock, save=lambda _: None, start_dir=HERE / "fixtures",
                     **options)


def calm() -> dict[str, Any]:
    """The canned stats with no model failing."""
    return canned_stats(NOW, jobs={n: job_id(n) for n in (1, 2, 9)}) | {"failing": []}


def text(widget: Widget) -> str:
    return str(widget.render())


def title(widget: Widget) -> str:
    """`widget`'s border title, which it has."""
    assert widget.border_title is not None
    return widget.border_title


def drawing(plot: ThroughputPlot) -> str:
    """The text of what `plot` draws (plotext's ANSI, as rich Text)."""
    drawn = plot.render()
    assert isinstance(drawn, Text)
    return drawn.plain


async def header_of(pilot: Pilot[Any]) -> StatsHeader:
    header = jobs_screen(pilot.app).query_one(StatsHeader)
    await wait_for(pilot, lambda: header.display and header.stats, what="the stats")
    await pilot.pause()
    return header


def test_the_header_is_wide_medium_or_narrow_by_the_room() -> None:
    assert header_mode(160, 45) == "wide"
    assert header_mode(120, 40) == "medium"
    assert header_mode(80, 24) == header_mode(160, 30) == header_mode(100, 45) == "narrow"


async def test_the_header_shows_throughput_model_health_cost_and_the_queue() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        header = await header_of(pilot)
        assert header.mode == "wide" and title(header).startswith(
            "Workspace · last 60 min · as of 09:30:00Z")
        plot = header.query_one(ThroughputPlot)
        assert plot.region.width >= 50 and plot.region.height >= 6
        drawn = drawing(plot)  # a real plot: a rate axis and a time axis
        assert "60┤" in drawn and "0┤" in drawn and "└┬" in drawn
        assert all(t in drawn for t in ("08:30", "08:45", "09:00", "09:15"))
        legend = text(header.query_one("#stats-legend"))
        assert "now 46" in legend and "completed 785" in legend and "failed 2" in legend
        models = text(header.query_one("#stats-models")).splitlines()
        assert models[0].split() == ["model", "calls", "429", "5xx", "t/o", "conn", "other",
                                     "p50", "p95", "conc"]
        assert models[1].split() == ["gpt-4o-mini", "412", "2%", "1%", "<1%", "9%", "0%",
                                     "640ms", "1.8s", "‖", "8/32"]  # paused, learned 8 of 32
        assert models[2].split()[0] == "backup" and models[2].split()[-1] == "32/32"
        usage = text(header.query_one("#stats-usage"))
        assert "$41.27 so far" in usage and "18M in · 2.1M out" in usage
        assert "p1  1 job · 80 rows" in usage
        banner = jobs_screen(app).query_one(FailingBanner)
        assert banner.display and text(banner) == \
            "✗ gpt-4o-mini: 100% connection errors (12 recent attempts)"
        assert banner.region.y == 1  # under the top line, above the header
        detail = jobs_screen(app).query_one(JobDetail)  # job 1 is selected
        await wait_for(pilot, lambda: "76k in · 9.8k out tokens · $0.017"
                       in text(detail.query_one("#facts")), what="the job's usage")


async def test_the_header_fits_a_small_terminal_and_grows_with_it() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=NARROW) as pilot:
        header = await header_of(pilot)
        assert header.mode == "narrow" and header.region.height == 2
        assert not header.query_one(ThroughputPlot).region  # no plot at all
        lines = text(header.query_one("#stats-lines")).splitlines()
        assert lines[0].startswith("60 min: 785 done, 2 failed · 46/min now · $41.27")
        assert lines[1].startswith("gpt-4o-mini 13% err p95 1.8s")
        table = jobs_screen(app).table
        assert table.region.height >= 7  # the jobs keep room for a few rows

        await pilot.resize_terminal(120, 40)
        await wait_for(pilot, lambda: header.mode == "medium")
        await pilot.pause()
        assert header.query_one(ThroughputPlot).region.width >= 30
        assert not header.query_one("#stats-usage").region  # it moved to the foot
        assert header.border_subtitle == ("$41.27 so far · 18M in · 2.1M out tokens · "
                                          "queue p1  1 job · 80 rows")
        await pilot.resize_terminal(*SIZE)
        await wait_for(pilot, lambda: header.mode == "wide")
        await pilot.pause()
        assert header.query_one("#stats-usage").region and not header.border_subtitle


async def test_while_disconnected_the_header_reads_stale() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        header = await header_of(pilot)
        banner = jobs_screen(app).query_one(FailingBanner)
        jobs_screen(app).post_message(FeedUpdate(Connection("down", "cannot reach relayd",
                                                           5.0)))
        await wait_for(pilot, lambda: header.has_class("-stale"))
        assert banner.has_class("-stale") and "stale since" in title(header)
        jobs_screen(app).post_message(FeedUpdate(Connection("live", "live events")))
        await wait_for(pilot, lambda: not header.has_class("-stale"))
        assert not banner.has_class("-stale") and "stale" not in title(header)


async def test_the_narrow_header_says_stale_too() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=NARROW) as pilot:
        header = await header_of(pilot)
        jobs_screen(app).post_message(FeedUpdate(Connection("down", "cannot reach relayd",
                                                           5.0)))
        await wait_for(pilot, lambda: header.has_class("-stale"))
        assert text(header.query_one("#stats-lines")).startswith("stale 60 min:")


async def test_a_model_that_starts_failing_is_announced_and_its_banner_leaves_when_it_heals(
) -> None:
    fake = FakeRelay(replay=False)
    fake.stats_answer = calm()
    app = app_on(fake, stats_every=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await header_of(pilot)
        banner = jobs_screen(app).query_one(FailingBanner)
        assert not banner.display

        fake.stats_answer = None  # the canned numbers: gpt-4o-mini is failing
        await wait_for(pilot, lambda: banner.display, what="the banner")
        await wait_for(pilot, lambda: any(
            n.title == "A model is failing" and n.message ==
            "gpt-4o-mini: 100% connection errors" and n.severity == "error"
            for n in app._notifications))

        fake.stats_answer = calm()
        await wait_for(pilot, lambda: not banner.display, what="the banner leaves")
        await wait_for(pilot, lambda: any(n.message == "gpt-4o-mini is no longer failing."
                                          for n in app._notifications))


async def test_a_model_failing_at_the_start_is_in_the_banner_without_a_notification() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await header_of(pilot)
        assert jobs_screen(app).query_one(FailingBanner).display
        assert not [n for n in app._notifications if n.title == "A model is failing"]


async def test_a_relayd_without_stats_shows_no_header() -> None:
    fake = FakeRelay(replay=False)
    fake.stats_answer = RelayError(404, "No route GET /v1/stats.")
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        watch = jobs_screen(app).stats_watch
        await wait_for(pilot, lambda: watch._posted, what="the first answer")
        await pilot.pause()
        assert not jobs_screen(app).query_one(StatsHeader).display
        assert not jobs_screen(app).query_one(FailingBanner).display


async def test_w_widens_the_window() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        header = await header_of(pilot)
        await pilot.press("w")
        await wait_for(pilot, lambda: header.stats is not None and header.stats.minutes == 360,
                       what="the 6 h window")
        assert fake.stats_asked[-1] == 360
        assert title(header).startswith("Workspace · last 6 h")
        assert any(n.message == "The header shows the last 6 h." for n in app._notifications)


async def test_the_plot_follows_the_theme_and_uses_the_terminals_colours_in_ansi_themes() -> None:
    fake = FakeRelay(replay=False)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        plot = (await header_of(pilot)).query_one(ThroughputPlot)
        assert plot.theme == "auto"  # plotext's colours from the theme's RGB
        app.theme = "ansi-dark"
        await wait_for(pilot, lambda: plot.theme == "clear", what="the ANSI plot")
        assert "0┤" in drawing(plot)  # the axes in the terminal's own colour
        app.theme = "textual-light"
        await wait_for(pilot, lambda: plot.theme == "auto")


async def test_a_narrow_banner_leaves_out_the_attempts_rather_than_wrap() -> None:
    fake = FakeRelay(replay=False)
    fake.stats_answer = calm() | {"failing": [
        {"model": "backup", "error": "connection", "share": 1.0, "attempts": 30,
         "message": "backup: 100% connection errors"},
        {"model": "gpt-4o-mini", "error": "connection", "share": 1.0, "attempts": 30,
         "message": "gpt-4o-mini: 100% connection errors"}]}
    app = app_on(fake)
    async with app.run_test(size=NARROW) as pilot:
        await header_of(pilot)
        banner = jobs_screen(app).query_one(FailingBanner)
        await wait_for(pilot, lambda: text(banner) == (
            "✗ backup: 100% connection errors · ✗ gpt-4o-mini: 100% connection errors"))
        assert banner.region.height == 1
        await pilot.resize_terminal(*SIZE)
        await wait_for(pilot, lambda: text(banner).endswith(
            "✗ gpt-4o-mini: 100% connection errors (30 recent attempts)"))


async def test_the_header_shows_the_budget_against_its_spend() -> None:
    fake = FakeRelay(replay=False)
    fake.stats_answer = calm() | {"budget": {
        "usd": 50.0, "nano_usd": 50_000_000_000, "period": "month",
        "spent_nano_usd": 50_000_000_000, "spent_usd": 50.0, "remaining_nano_usd": 0,
        "resets_at": "2026-11-01T00:00:00Z", "spent": True}}
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        header = await header_of(pilot)
        usage = text(header.query_one("#stats-usage"))
        assert "budget $50.00 of $50.00 this month · spent: paused" in usage
    app = app_on(fake)
    async with app.run_test(size=NARROW) as pilot:
        header = await header_of(pilot)
        assert "(budget $50.00 of $50.00 this month · spent: paused)" in text(
            header.query_one("#stats-lines"))


async def test_a_header_that_saw_no_row_finish_asks_again_when_rows_run() -> None:
    """The stats were made before the job's rows finished; the live feed says they did:
    the header asks relayd again at once instead of contradicting the table for 5 s."""
    from relaytui.live import JobEvent
    from relaytui.testing import canned_jobs, job_event

    fake = FakeRelay(replay=False)
    fake.stats_answer = calm() | {"throughput": [], "models": []}
    app = app_on(fake, stats_every=60.0)
    async with app.run_test(size=NARROW) as pilot:
        header = await header_of(pilot)
        assert "no row finished in the window" in text(header.query_one("#stats-lines"))
        asked = len(fake.stats_asked)
        running = next(j for j in canned_jobs() if j["id"] == job_id(1))
        progress = job_event(running) | {"completed": running["completed"] + 1}
        jobs_screen(app).post_message(FeedUpdate(JobEvent("job.progress", progress, NOW)))
        await wait_for(pilot, lambda: len(fake.stats_asked) > asked, what="a new ask")
