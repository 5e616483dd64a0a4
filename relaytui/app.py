"""The `relay` operator TUI: the App, the factory that gives it its collaborators, and
`run(url, key)`, which the CLI calls. Screens and widgets do the work; the app only
connects (asking for a key when none is known) and opens the jobs screen."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import App
from textual.binding import BindingType

from relaytui import settings as settings_file
from relaytui.api import RelayApi
from relaytui.client import RelayClient, RelayError
from relaytui.commands import RelayCommands
from relaytui.health import EVERY_S
from relaytui.keys import APP_BINDINGS, MOVES, colon_action, hide_writes
from relaytui.messages import KeyRefused
from relaytui.models import key_hint
from relaytui.nodes import EVERY_S as NODES_EVERY_S
from relaytui.screens.connect import ConnectScreen
from relaytui.screens.help import HelpScreen
from relaytui.screens.jobs import JobsScreen
from relaytui.screens.nodes import NodesScreen
from relaytui.settings import Settings
from relaytui.widgets.command_line import CommandLine

LIGHT, DARK = "textual-light", "textual-dark"


class RelayApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "Relay"
    COMMANDS = App.COMMANDS | {RelayCommands}
    BINDINGS: ClassVar[list[BindingType]] = [*APP_BINDINGS]
    # Every screen is `-short` in a terminal of fewer than 34 lines (80×24): the
    # dialogs drop their padding and margins there, so their buttons stay on screen.
    # (Textual declares it `ClassVar[...] | None`: an instance variable to mypy)
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]  # noqa: RUF012

    def __init__(self, client: RelayApi | None, settings: Settings, *,
                 clock: Callable[[], float], save: Callable[[Settings], object],
                 connect: Callable[[str, str], RelayApi], start_dir: Path,
                 health_every: float = EVERY_S, stats_every: float = EVERY_S,
                 nodes_every: float = NODES_EVERY_S, read_only: bool = False) -> None:
        super().__init__()
        self.read_only = read_only
        if read_only:
            hide_writes(self)
        self.client, self.settings = client, settings
        self.clock, self.save, self.connect, self.start_dir = clock, save, connect, start_dir
        self.health_every, self.stats_every = health_every, stats_every
        self.nodes_every = nodes_every
        self.jobs_screen: JobsScreen | None = None
        self._clients = [client] if client is not None else []

    def on_mount(self) -> None:
        if self.client is None:
            self.push_screen(ConnectScreen(self.settings.url, reason="No API key is known "
                                           "yet: enter relayd's URL and a key."),
                             self._connected)
        else:
            self._open(self.client)

    async def _connected(self, chosen: Settings | None) -> None:
        if chosen is None:
            if self.client is None:
                self.exit(return_code=1, message="relay: no API key given; nothing to show.")
            return
        client = self.connect(chosen.url, chosen.key or "")
        problem = await asyncio.to_thread(key_problem, client)
        if problem is not None:  # never saved: ask again, saying why
            client.close()
            self.push_screen(ConnectScreen(chosen.url, chosen.key, reason=problem),
                             self._connected)
            return
        try:
            self.save(chosen)
        except OSError as exc:
            self.notify(f"could not save the settings: {exc}", severity="warning")
        self.settings = chosen
        self.client = client
        self._clients.append(client)
        self._open(client)

    def _open(self, client: RelayApi) -> None:
        """A fresh jobs screen (and live feed) for this connection."""
        screen = JobsScreen(client, url=self.settings.url, key=key_hint(
            self.settings.key), clock=self.clock, start_dir=self.start_dir,
            health_every=self.health_every, stats_every=self.stats_every)
        if self.jobs_screen is None:
            self.push_screen(screen)
        else:
            self.switch_screen(screen)
        self.jobs_screen = screen

    def refuses(self, what: str) -> bool:
        """In read-only mode: say that `what` is off, and return True."""
        if self.read_only:
            self.notify(f"{what} is off: relay was started with --read-only.",
                        title="Read-only", severity="warning")
        return self.read_only

    def action_connection(self) -> None:
        if self.refuses("Changing the key"):
            return
        if self.screen is self.jobs_screen:
            self.push_screen(ConnectScreen(self.settings.url, self.settings.key),
                             self._connected)
        else:
            self.notify("Change the connection from the jobs screen.", severity="warning")

    @on(KeyRefused)
    def _key_refused(self, message: KeyRefused) -> None:
        """relayd refused the key: the key dialog opens by itself, saying why."""
        if not self.read_only and self.screen is self.jobs_screen:
            self.push_screen(ConnectScreen(self.settings.url, self.settings.key,
                                           reason=message.reason), self._connected)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_move(self, where: str) -> None:
        """`j` `k` `g` `G`: ↓ ↑ home end on the focused table, tree or pane."""
        target = self.screen.focused or self.screen
        for action in MOVES[where]:
            method = getattr(target, f"action_{action}", None)
            if method is not None:
                method()
                return

    def action_command_line(self) -> None:
        if not isinstance(self.screen, CommandLine):
            self.push_screen(CommandLine(), self._colon)

    async def _colon(self, line: str | None) -> None:
        if not line or not line.strip():
            return
        action = colon_action(line)
        if action is None:
            self.notify(f"Unknown command :{line.strip()} — try :jobs, :dead, :nodes, "
                        ":help, :key or :q.", title="Command", severity="error")
            return
        await self.run_action(action)

    async def action_show_jobs(self) -> None:
        """Back to the jobs screen from wherever the operator is."""
        while self.jobs_screen is not None and self.screen is not self.jobs_screen \
                and len(self.screen_stack) > 2:
            await self.pop_screen()

    async def action_show_dead_letter(self) -> None:
        await self.action_show_jobs()
        if self.jobs_screen is not None and self.screen is self.jobs_screen:
            self.jobs_screen.action_dead_letter_all()

    def action_show_nodes(self) -> None:
        """The nodes view, over whatever screen is open (once connected)."""
        if self.client is not None and not isinstance(self.screen, NodesScreen):
            self.push_screen(NodesScreen(self.client, every=self.nodes_every))

    def action_toggle_theme(self) -> None:
        self.theme = DARK if "light" in self.theme else LIGHT

    def on_unmount(self) -> None:
        for client in self._clients:
            client.close()


def key_problem(client: RelayApi) -> str | None:
    """Why relayd would not take this key (a call that needs one: `GET /v1/models`), or
    None when it does. A key is checked so before it is saved."""
    try:
        client.models()
    except RelayError as exc:
        if exc.status == 401:
            return f"relayd refused this key: {exc.message}"
        return f"The key could not be checked: {exc.message}"
    return None


def build_app(client: RelayApi | None, settings: Settings, *,
              clock: Callable[[], float] = time.time,
              save: Callable[[Settings], object] = settings_file.save,
              connect: Callable[[str, str], RelayApi] = RelayClient,
              start_dir: Path | None = None, health_every: float = EVERY_S,
              stats_every: float = EVERY_S, nodes_every: float = NODES_EVERY_S,
              read_only: bool = False) -> RelayApp:
    """The app with its collaborators: a `RelayApi` (a `RelayClient`; in tests, one over
    `relaytui.testing.FakeRelay`'s mock transport; None asks for a key), where settings
    are saved, the clock that ages and rates are read from, how often relayd's health,
    the workspace's stats and the nodes view are asked, and whether it only watches
    (`read_only`: nothing is submitted, cancelled, re-driven or discarded, and the key
    is not changed)."""
    return RelayApp(client, settings, clock=clock, save=save, connect=connect,
                    start_dir=start_dir or Path.cwd(), health_every=health_every,
                    stats_every=stats_every, nodes_every=nodes_every,
                    read_only=read_only)


def run(url: str, key: str | None, *, read_only: bool = False) -> int:
    """Open the TUI on relayd at `url`; returns the exit code."""
    settings = Settings(url=url.rstrip("/"), key=key or None)
    client = RelayClient(settings.url, key) if key else None
    app = build_app(client, settings, read_only=read_only)
    app.run()
    return app.return_code or 0
