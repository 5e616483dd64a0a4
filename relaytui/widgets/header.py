"""The top line: which relayd, which workspace (until the event stream names it, the
key, by its public prefix), and whether the live feed is connected, polling, or down
and retrying when, fitted to one line; below it, a red banner while relayd's store
cannot write, and one while a model is failing (from `GET /v1/stats`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.cells import cell_len
from textual.content import Content
from textual.markup import escape
from textual.widgets import Static

from relaytui.health import StoreHealth
from relaytui.live import Connection
from relaytui.stats import Failing
from relaytui.stats_text import banner

_STATES = {
    "connecting": ("$text-warning", "◌ connecting…"),
    "live": ("$text-success", "● live"),
    "polling": ("$text-warning", "◐ polling"),
    "down": ("$text-error", "✗ disconnected"),
    "refused": ("$text-error", "✗ key refused"),
}


class ConnectionBar(Static):
    """Shows a `Connection`; counts down to the next retry once a second. It is one
    line: what does not fit leaves, the least needed first (see `lines`)."""

    def __init__(self, url: str, workspace: str | None = None, *, key: str = "",
                 clock: Callable[[], float], read_only: bool = False,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.url, self.workspace, self.key, self.clock = url, workspace, key, clock
        self.read_only = read_only
        self.connection = Connection("connecting")
        self._retry_at: float | None = None

    def on_mount(self) -> None:
        self.set_interval(1.0, self._redraw)
        self._redraw()

    def show(self, connection: Connection) -> None:
        self.connection = connection
        self._retry_at = (None if connection.retry_in is None
                          else self.clock() + connection.retry_in)
        self.set_class(connection.state in ("down", "refused"), "-down")
        self._redraw()

    def on_resize(self) -> None:
        self._redraw()

    def show_target(self, url: str, workspace: str | None) -> None:
        self.url, self.workspace = url, workspace
        self._redraw()

    @property
    def retry_in(self) -> int | None:
        if self._retry_at is None:
            return None
        return max(round(self._retry_at - self.clock()), 0)

    def _redraw(self) -> None:
        width = self.content_region.width or 10_000  # before the first layout: all of it
        lines = self.lines()
        self.update(next((line for line in lines
                          if Content.from_markup(line).cell_length <= width), lines[-1]))

    def lines(self) -> list[str]:
        """The top line, from the whole of it to the least of it: the detail of the
        connection shortens, then leaves; then the word "Relay"; the URL, who and the
        state always stay (cut at the end, if even they do not fit)."""
        colour, label = _STATES.get(self.connection.state, ("$text-warning", "?"))
        who = (f"[dim]workspace[/dim] {escape(self.workspace)}" if self.workspace
               else f"[dim]key[/dim] {escape(self.key)}")
        where = f"{escape(self.url)}  {who}  [{colour}]{label}[/]"
        if self.read_only:
            where += "  [b $text-warning]read-only[/]"
        lines = [f"[b]Relay[/b]  {where}{detail}" for detail in self._details()]
        return [*lines, f"[b]Relay[/b]  {where}", where]

    def _details(self) -> list[str]:
        """The connection's detail, longest first."""
        c = self.connection
        if c.state == "down":
            wait = self.retry_in
            when = "retrying now…" if not wait else f"retrying in {wait}s"
            return [f"  [$text-error]{escape(c.detail)}, {when}[/]",
                    f"  [$text-error]{when}[/]"]
        if c.state == "refused":
            how, short = (("restart relay with another --key", "restart with another --key")
                          if self.read_only else ("press [b]K[/b] to enter a key",
                                                  "[b]K[/b]: another key"))
            return [f"  [$text-error]{escape(c.detail)}[/] — {how} "
                    f"(retrying in {self.retry_in or 0}s)",
                    f"  [$text-error]{escape(c.detail)}[/] — {short}", f"  {how}",
                    f"  {short}"]
        if c.state == "polling":
            return [f"  [dim]{escape(c.detail)}[/dim]"]
        return []


class StoreBanner(Static):
    """relayd's store is degraded: why and since when. Hidden while it takes writes."""

    def show(self, health: StoreHealth) -> None:
        self.update(escape(health.banner()))
        self.set_class(health.degraded, "-shown")


class FailingBanner(Static):
    """The models failing now: which, and how (and on how many attempts, when that fits
    on the line). Hidden while none is."""

    failing: Sequence[Failing] = ()

    def show(self, failing: Sequence[Failing]) -> None:
        self.failing = failing
        self.set_class(bool(failing), "-shown")
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        text = banner(self.failing)
        if cell_len(text) > self.content_region.width:
            text = banner(self.failing, attempts=False)
        self.update(escape(text))
