"""`relay web` in a real headless Chromium: the served TUI on the CLI tests' shared
relayd, with a job running (each row sleeps in the simulator), driven over CDP
(`tests.e2e.browser`): the jobs table with its progress moving, a job's results, the
help screen, read-only mode refusing a cancel, and a screenshot. One server, one
browser, one test."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from daemon.testing import free_port, stop_process, wait_until, wait_until_async
from tests.cli.conftest import Run
from tests.e2e.browser import Page, chromium, chromium_path
from tests.e2e.harness import Relayd, rows

pytestmark = pytest.mark.e2e

# 8 at a time: over 4 minutes of running, so the job is still running however slowly a
# loaded machine brings the browser up (canceled at the end, when the test is done).
ROWS, SLEEP_MS = 4000, 500
WAIT_S = 20.0  # for each screen after the first
FIRST_WAIT_S = 60.0  # for the page's first screen (textual-serve starts the app on demand)
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def browser_executable() -> str:
    path = chromium_path()
    if path is None:
        pytest.skip("Chromium is not installed here (.ci/run installs Debian's `chromium` "
                    "package with apt-get; it could not on this machine)")
    return path


@pytest.fixture
def web_server(shared_relayd: Relayd, workspace: str,
               tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`relay web --read-only` on a free port, on the shared relayd as the test's
    workspace: the URL by flag, the key by environment."""
    port = free_port()
    env = dict(os.environ, RELAY_API_KEY=shared_relayd.key(workspace),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    env.pop("RELAY_URL", None)
    with (tmp_path / "relay-web.log").open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "relaytui", "web", "--port", str(port), "--read-only",
             "--url", shared_relayd.url], env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: listening(port, server), timeout=WAIT_S,
                   message="relay web to listen")
        yield f"http://127.0.0.1:{port}/", server
    finally:
        stop_process(server, timeout=10)


def listening(port: int, server: subprocess.Popen[bytes]) -> bool:
    assert server.poll() is None, f"relay web exited with {server.returncode}"
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.timeout(240)
def test_the_tui_in_a_browser(browser_executable: str, relay: Callable[..., Run],
                              http: httpx.Client, write: Callable[..., Path],
                              web_server: tuple[str, subprocess.Popen[bytes]],
                              tmp_path: Path, shared_relayd: Relayd, workspace: str) -> None:
    url, server = web_server
    done = relay("submit", write("done.jsonl", rows(3, prefix="done")), "--model",
                 "gpt-4o-mini", "--name", "web-done", "--wait")
    assert done.code == 0, done.err
    slow = write("slow.jsonl", rows(ROWS, prefix="slow",
                                    text=f"Classify slowly [sim:sleep={SLEEP_MS}]"))
    submitted = relay("submit", slow, "--model", "gpt-4o-mini", "--name", "web-slow",
                      "--json")
    assert submitted.code == 0, submitted.err
    job_id = submitted.json()["id"]
    try:
        shot = asyncio.run(drive(url, browser_executable, tmp_path))
        assert http.get(f"/v1/batches/{job_id}").json()["status"] in ("queued", "running",
                                                                      "completed")
    finally:
        http.post(f"/v1/batches/{job_id}/cancel")  # the shared daemon's slot, back
    data = shot.read_bytes()
    assert data.startswith(PNG) and len(data) > 10_000
    key = shared_relayd.key(workspace)
    assert not [c for c in command_lines() if key in c], "the key is on a command line"
    assert server.poll() is None


async def drive(url: str, executable: str, tmp_path: Path) -> Path:
    async with chromium(tmp_path / "chromium", executable) as page:
        await page.call("Page.enable")
        await page.call("Page.navigate", url=url)
        await wait_until_async(page.find_terminal, timeout=FIRST_WAIT_S, every=0.2,
                               message="the page's terminal")

        # The jobs table, the running job's Done/Total moving.
        progress = rf"running\s+web-slow.*?(\d+)/{ROWS}"
        first = await until(page, progress, "the running job in the jobs table",
                            wait_s=FIRST_WAIT_S)
        await until(page, progress, "its progress to move", differs=first.group(1))

        # The finished job's results (a running one's come when it ends), found with
        # the search (the table's order follows the jobs' states), then back.
        await page.press("/")
        await until(page, r"filter by name, id or model", "the search field")
        await page.type_text("web-done")
        await page.press("Enter")
        await until(page, r"Jobs — 1 of 2 jobs.*(?:\n.*)*─ Job ─.*\n│ web-done ",
                    "the search to leave the finished job alone, selected")
        await page.press("v")
        await until(page, r"done-2", "the job's results")
        await page.press("Escape")
        await until(page, r"Jobs — 1 of 2 jobs", "the jobs again")
        await page.press("Escape")
        await until(page, r"Jobs — 2 of 2 jobs", "the search cleared")

        # Read-only: the cancel key says why it does nothing.
        await page.press("c")
        await until(page, r"off: relay was started with --read-only", "read-only's refusal")

        # The help screen.
        await page.press("?")
        await until(page, r"Keys — every screen's keys", "the help screen")
        return await page.screenshot(tmp_path / "relay-web.png")


async def until(page: Page, pattern: str, what: str, differs: str | None = None,
                wait_s: float = WAIT_S) -> re.Match[str]:
    """The first screen whose text matches `pattern` (with `differs`: whose first group
    is not that), within `wait_s`."""

    async def check() -> re.Match[str] | None:
        found = re.search(pattern, await page.terminal_text())
        return found if found and (differs is None or found.group(1) != differs) else None

    try:
        found: re.Match[str] = await wait_until_async(check, timeout=wait_s, every=0.2,
                                                      message=what)
        return found
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; the screen:\n{await page.terminal_text()}") from None


def command_lines() -> list[str]:
    """Every process's command line that can be read here."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue
    return found
