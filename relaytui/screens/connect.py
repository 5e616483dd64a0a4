"""Asking for relayd's URL and an API key (when none is known, or to change them); the
answer is a `Settings` through `dismiss`, or None."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from relaytui.settings import Settings


class ConnectScreen(ModalScreen[Settings | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, url: str, key: str | None = None, *, reason: str = "") -> None:
        super().__init__(classes="dialog-screen")
        self.url, self.key, self.reason = url, key, reason

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("[b]Connect to relayd[/b]", classes="question")
            if self.reason:
                yield Static(self.reason, classes="hint", markup=False)
            yield Label("URL")
            yield Input(self.url, id="url")
            yield Label("API key (from `relayd keys create --workspace NAME`)")
            yield Input(self.key or "", password=True, placeholder="rk_…", id="key")
            yield Static("Saved to your Relay config file (mode 0600).", classes="hint")
            yield Static("", id="problem", classes="problem")
            with Horizontal(classes="buttons"):
                yield Button("Connect", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#key" if self.url else "#url", Input).focus()

    @on(Input.Submitted)
    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        url = self.query_one("#url", Input).value.strip().rstrip("/")
        key = self.query_one("#key", Input).value.strip()
        if not url.startswith(("http://", "https://")):
            self.query_one("#problem", Static).update("The URL starts with http:// or https://")
        elif not key:
            self.query_one("#problem", Static).update("Paste an API key.")
        else:
            self.dismiss(Settings(url=url, key=key))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
