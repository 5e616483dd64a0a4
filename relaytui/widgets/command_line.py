"""`:` opens a one-line prompt at the bottom, as in k9s and vim: `enter` runs the
command, `escape` closes it. It returns the text typed; the app says what it means."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from relaytui.keys import colon_hint


class CommandLine(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Close")]

    def compose(self) -> ComposeResult:
        with Horizontal(id="command-bar"):
            yield Static(":", id="colon")
            yield Input(placeholder=colon_hint(), id="command-line")

    @on(Input.Submitted)
    def _run(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)
