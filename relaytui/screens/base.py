"""What every screen shares: a worker that fails becomes a notification, never a crash."""

from __future__ import annotations

from textual.screen import Screen
from textual.worker import Worker

from relaytui.widgets.failures import report_failure


class RelayScreen(Screen[object]):
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        report_failure(self, event)
