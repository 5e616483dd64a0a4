"""What every screen shares: a worker that fails becomes a notification, never a crash;
in read-only mode, the keys that write to relayd leave the footer, and pressing one says
why nothing happens."""

from __future__ import annotations

from textual.screen import Screen
from textual.worker import Worker

from relaytui.keys import hide_writes
from relaytui.widgets.failures import report_failure


class RelayScreen(Screen[object]):
    def __init__(self, *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        if self.read_only:
            hide_writes(self)

    @property
    def read_only(self) -> bool:
        return bool(getattr(self.app, "read_only", False))

    def refuses(self, what: str) -> bool:
        """In read-only mode: say that `what` is off, and return True."""
        if self.read_only:
            self.notify(f"{what} is off: relay was started with --read-only.",
                        title="Read-only", severity="warning")
        return self.read_only

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        report_failure(self, event)
