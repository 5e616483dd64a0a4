"""`?`: every key of every screen, read from the screens' own bindings so it never
drifts from what the keys do."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.widgets import Static

from relaytui.keys import APP_BINDINGS, WRITES
from relaytui.screens.base import RelayScreen
from relaytui.screens.dead_letter import AttemptsScreen, DeadLetterScreen
from relaytui.screens.jobs import JobsScreen
from relaytui.screens.nodes import NodesScreen
from relaytui.screens.results import ResultsScreen
from relaytui.screens.row_detail import RowDetailScreen
from relaytui.screens.upload import UploadScreen
from relaytui.widgets.footer import RelayFooter
from relaytui.widgets.hanging import HangingText

# Keys the widgets bring (tables, trees, inputs) that an operator should know about.
MOVING = [Binding("up,down", "", "", tooltip="Move through rows (also j k, page up/down, "
                  "home end, g G)"),
          Binding("tab", "", "", tooltip="Move to the next field or pane (shift+tab back)")]


def _by_key(*screens: Iterable[BindingType]) -> list[BindingType]:
    """The bindings of screens that share their keys, each key once (the first one's)."""
    seen: dict[str, BindingType] = {}
    for bindings in screens:
        for binding in bindings:
            if isinstance(binding, Binding):
                seen.setdefault(binding.key, binding)
    return list(seen.values())


def sections() -> list[tuple[str, list[BindingType]]]:
    return [
        ("Everywhere", [*APP_BINDINGS, *MOVING]),
        ("Jobs (home)", [Binding("enter", "", "", tooltip="Open the results of a finished "
                                 "job"), *JobsScreen.BINDINGS]),
        ("Dead letter (d)", DeadLetterScreen.BINDINGS),
        ("Results (v)", ResultsScreen.BINDINGS),
        ("A row (enter in the dead letter; o or enter in the results)",
         _by_key(AttemptsScreen.BINDINGS, RowDetailScreen.BINDINGS)),
        ("Upload (u)", [*UploadScreen.BINDINGS, Binding("enter", "", "", tooltip=(
            "In the tree: pick the file; in the path field: read it now"))]),
        ("Nodes (n)", NodesScreen.BINDINGS),
    ]


KEYS_WIDTH = 16  # the keys' column, then a space and the description


def _under_description(plain: str) -> int:
    return 2 + KEYS_WIDTH + 1 if plain.startswith("  ") else 2


class HelpScreen(RelayScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "app.pop_screen", "Close")]

    def compose(self) -> ComposeResult:
        yield Static("[b]Keys[/b] — every screen's keys; ctrl+p finds any action by name",
                     classes="screen-title")
        with VerticalScroll(id="help"):
            # a key's description, wrapped, goes on under its description
            yield HangingText(self._text().split("\n"), at=_under_description)
        yield RelayFooter()

    def _text(self) -> str:
        return "\n".join(self._section(title, bindings) for title, bindings in sections())

    def _section(self, title: str, bindings: Iterable[BindingType]) -> str:
        lines = [f"[b $text-primary]{escape(title)}[/]"]
        for binding in bindings:
            if not isinstance(binding, Binding):
                continue
            keys = " ".join(self._key(k.strip()) for k in binding.key.split(","))
            about = binding.tooltip or binding.description
            if self.read_only and binding.action in WRITES:
                about += " — off: read-only"
            lines.append(f"  [b]{escape(keys):<{KEYS_WIDTH}}[/b] {escape(about)}")
        return "\n".join(lines) + "\n"

    def _key(self, key: str) -> str:
        return self.app.get_key_display(Binding(key, ""))
