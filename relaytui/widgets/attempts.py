"""The attempts of one row, one line each: the model tried, what it answered, how long
it took, when it started and the error. The dead-letter inspector and a row's detail
show them so."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from relaytui.models import clock_text, parse_time


def plain(value: Any) -> Text:
    """One line of text for a cell ("—" for nothing), cut with an ellipsis."""
    text = " ".join(str(value if value is not None else "—").split())
    return Text(text, no_wrap=True, overflow="ellipsis", end="")


class AttemptTable(DataTable[Any]):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.add_columns("#", "Model", "Status", "Duration", "Started", "Error")

    def show(self, attempt_log: list[dict[str, Any]]) -> None:
        self.clear()
        for n, attempt in enumerate(attempt_log, start=1):
            self.add_row(str(n), plain(attempt.get("model")), plain(attempt.get("status_code")),
                         Text(f"{attempt.get('duration_ms', '—')} ms", justify="right"),
                         clock_text(parse_time(attempt.get("started_at"))),
                         plain(attempt.get("error")))
