"""The app-wide keys: they work on every screen. `RelayApp` binds them and the help
screen lists them, so both read them from here (neither imports the other for them)."""

from __future__ import annotations

from textual.binding import Binding, BindingType

APP_BINDINGS: list[BindingType] = [
    Binding("question_mark", "help", "Help", key_display="?",
            tooltip="Show every key of every screen"),
    Binding("k", "connection", "Connection", show=False,
            tooltip="Change the relayd URL and API key (saved for next time)"),
    Binding("t", "toggle_theme", "Light/dark", show=False,
            tooltip="Switch between the light and the dark theme"),
    Binding("ctrl+p", "command_palette", "Palette", show=False,
            tooltip="Find any action by name (the command palette)"),
    Binding("q", "quit", "Quit", tooltip="Quit the TUI (relayd keeps running)"),
]
