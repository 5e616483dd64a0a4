"""The calls of one row, one line each: its model attempts and, for a tool-calling row,
its executor calls, in the order made: what was called (the model, or the executor and
the round), what it answered, how long it took, when it started and the error. The
dead-letter inspector and a row's detail show them so."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from relaytui.models import clock_text, parse_time
from relaytui.rows import attempt_lines


def plain(value: Any) -> Text:
    """One line of text for a cell ("—" for nothing), cut with an ellipsis."""
    text = " ".join(str(value if value is not None else "—").split())
    return Text(text, no_wrap=True, overflow="ellipsis", end="")


class AttemptTable(DataTable[Any]):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.add_columns("#", "Call", "Status", "Duration", "Started", "Error")

    def show(self, detail: dict[str, Any]) -> None:
        """The calls of a row detail or a dead-letter entry (`attempt_log`, and
        `executor_calls` where relayd gives them)."""
        self.clear()
        for n, line in enumerate(attempt_lines(detail), start=1):
            started = clock_text(parse_time(line["started_at"]))
            self.add_row(str(n), plain(line["call"]), plain(line["status"]),
                         Text(f"{line['duration_ms'] if line['duration_ms'] is not None else '—'}"
                              " ms", justify="right"),
                         started[11:] if started != "—" else started,
                         plain(line["error"]))
