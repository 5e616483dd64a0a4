"""The app-wide keys: they work on every screen. `RelayApp` binds them and the help
screen lists them, so both read them from here (neither imports the other for them).
Also the `:` command line's words, the vim-style moves, and the actions that write to
relayd (off in `--read-only` mode)."""

from __future__ import annotations

from dataclasses import replace

from textual.binding import Binding, BindingType
from textual.dom import DOMNode

APP_BINDINGS: list[BindingType] = [
    Binding("question_mark", "help", "Help", key_display="?",
            tooltip="Show every key of every screen"),
    Binding("colon", "command_line", "Command", key_display=":", show=False,
            tooltip="A command: :jobs, :dead (every job's dead letter), :nodes, :help, :key, "
            ":q"),
    Binding("j", "move('down')", "Down", show=False, tooltip="Down a row (as ↓)"),
    Binding("k", "move('up')", "Up", show=False, tooltip="Up a row (as ↑)"),
    Binding("g", "move('top')", "Top", show=False, tooltip="To the first row (as home)"),
    Binding("G", "move('bottom')", "Bottom", show=False, tooltip="To the last row (as end)"),
    Binding("n", "show_nodes", "Nodes", show=False,
            tooltip="The relayd nodes sharing the database: health, heartbeat, version and "
            "your jobs on each"),
    Binding("K", "connection", "Connection", show=False,
            tooltip="Change the relayd URL and API key (saved for next time)"),
    Binding("t", "toggle_theme", "Light/dark", show=False,
            tooltip="Switch between the light and the dark theme"),
    Binding("ctrl+p", "command_palette", "Palette", show=False,
            tooltip="Find any action by name (the command palette)"),
    Binding("q", "quit", "Quit", tooltip="Quit the TUI (relayd keeps running)"),
]

# `:word` → the app action it runs.
COLON_COMMANDS = {"jobs": "show_jobs", "dead": "show_dead_letter", "nodes": "show_nodes",
                  "help": "help", "key": "connection", "q": "quit", "quit": "quit"}

# A move, and the actions that make it on the focused widget, the first it has: a
# table's and a tree's cursor, else a scroll.
MOVES = {"down": ("cursor_down", "scroll_down"), "up": ("cursor_up", "scroll_up"),
         "top": ("scroll_top", "scroll_home"), "bottom": ("scroll_bottom", "scroll_end")}

# Actions that change something in relayd (or the saved key): refused in read-only mode.
WRITES = frozenset({"cancel", "pause", "upload", "submit", "redrive_marked", "redrive_all",
                    "discard", "connection"})


def colon_hint() -> str:
    """The `:` prompt's placeholder: every command once (`q` for `:quit` too), with the
    app-wide key that does the same, so neither can be left out of it:
    `jobs · dead · nodes (n) · help (?) · key (K) · q`."""
    keys = {b.action: b.key_display or b.key for b in APP_BINDINGS if isinstance(b, Binding)}
    words: dict[str, str] = {}
    for word, action in COLON_COMMANDS.items():
        words.setdefault(action, word)
    return " · ".join(f"{word} ({keys[action]})" if action in keys and action != "quit"
                      else word for action, word in words.items())


def colon_action(line: str) -> str | None:
    """The action of a `:` command line (`jobs`, `:q`, ` dead `), None if unknown."""
    return COLON_COMMANDS.get(line.strip().removeprefix(":").strip().lower())


def hide_writes(node: DOMNode) -> None:
    """Read-only: this node's writing keys leave the footer. Their actions still run,
    to say why they refuse, so the bindings stay (`show=False` only)."""
    keys = node._bindings.key_to_bindings  # per instance: a copy of the class's
    for key, bindings in keys.items():
        keys[key] = [replace(b, show=False) if b.action in WRITES else b for b in bindings]
