"""Write the README's TUI screenshots (SVG) to docs/screenshots/.

    .venv/bin/python docs/make_screenshots.py

Each screen runs headless at 160×45 (the jobs screen at 80×24 too) on
`relaytui.testing.FakeRelay`: canned jobs and workspace stats at fixed times and a clock
that stands still, so the pictures only change when the UI does. Nothing talks to a real
relayd.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from relaytui.app import RelayApp, build_app  # noqa: E402
from relaytui.settings import Settings  # noqa: E402
from relaytui.testing import FakeRelay, job_id  # noqa: E402
from relaytui.widgets.job_detail import JobDetail  # noqa: E402
from relaytui.widgets.job_table import JobTable  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
SIZE = (160, 45)
KEY = "rk_demo7Kq2xLw9Vb4ZpR8sT1uYcN3"

Step = Callable[[Any, RelayApp], Awaitable[None]]


async def until(pilot: Any, check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise SystemExit("a screen did not settle; is something broken?")
        await pilot.pause(0.05)
    return value


async def settle(pilot: Any, app: RelayApp, fake: FakeRelay, select: int | None) -> None:
    jobs = app.jobs_screen
    await until(pilot, fake.replayed.is_set)
    await until(pilot, lambda: (v := jobs.board.get(job_id(2))) and v.completed == 556)
    await until(pilot, lambda: jobs.stats is not None)  # the header's numbers
    if select is not None:
        jobs.query_one(JobTable).select(job_id(select))
    detail = jobs.query_one(JobDetail)
    await until(pilot, lambda: detail.job_id and detail.loaded_id == detail.job_id)
    await pilot.pause()


async def shoot(name: str, *, select: int | None = None, theme: str | None = None,
                keys: tuple[str, ...] = (), then: Step | None = None,
                size: tuple[int, int] = SIZE) -> None:
    fake = FakeRelay()
    app = build_app(fake.client(), Settings("http://127.0.0.1:8080", KEY), clock=fake.clock,
                    save=lambda _: None, start_dir=Path("sample_data"))
    async with app.run_test(size=size) as pilot:
        if theme:
            app.theme = theme
        await settle(pilot, app, fake, select)
        await pilot.press(*keys)
        if then is not None:
            await then(pilot, app)
        await pilot.pause()
        app.save_screenshot(f"{name}.svg", str(OUT))
    print(f"wrote {OUT.relative_to(ROOT) / (name + '.svg')}")


async def loaded(pilot: Any, app: RelayApp) -> None:
    await until(pilot, lambda: getattr(app.screen, "entries", None)
                or getattr(app.screen, "items", None))


async def attempts(pilot: Any, app: RelayApp) -> None:
    await loaded(pilot, app)
    await pilot.press("enter")
    await until(pilot, lambda: app.screen.query("#attempts"))


async def upload(pilot: Any, app: RelayApp) -> None:
    form = app.screen
    await until(pilot, lambda: form.query_one("#model").value == "gpt-4o-mini")
    path = form.query_one("#path")
    path.cursor_blink = False
    path.focus()  # the tree has it at first, and enter there would fold it
    path.value = "sample_data/reviews.jsonl"
    await pilot.press("enter")
    await until(pilot, lambda: form.rows is not None)
    form.query_one("#name").value = "Review sentiment — November"
    form.query_one("#priority").value = "5"
    await until(pilot, lambda: form.query_one("#tree").root.children)


async def main() -> None:
    os.chdir(ROOT)  # the upload screen's tree starts at sample_data/
    OUT.mkdir(parents=True, exist_ok=True)
    await shoot("jobs")
    await shoot("jobs-80x24", size=(80, 24))
    await shoot("detail", select=3)
    await shoot("jobs-light", theme="textual-light", select=5)
    await shoot("dead-letter", select=5, keys=("d",), then=loaded)
    await shoot("dead-letter-row", select=5, keys=("d",), then=attempts)
    await shoot("results", select=5, keys=("v",), then=loaded)
    await shoot("upload", keys=("u",), then=upload)
    await shoot("help", keys=("question_mark",))


if __name__ == "__main__":
    asyncio.run(main())
