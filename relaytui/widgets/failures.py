"""A failed worker becomes a notification, never a crash: screens and widgets that run
workers route `Worker.StateChanged` here (the message does not bubble)."""

from __future__ import annotations

from textual.widget import Widget
from textual.worker import Worker, WorkerState


def report_failure(node: Widget, event: Worker.StateChanged) -> None:
    if event.state == WorkerState.ERROR:
        error = event.worker.error
        node.notify(f"{event.worker.name or 'background task'} failed: "
                    f"{type(error).__name__}: {error}", title="Error", severity="error",
                    timeout=10)
