"""The jobs table: one row per job of the board that passes the filters, running first
then newest. The name gives up room first; below that the columns an operator can do
without leave one by one (age, rows/s, priority, model, done/total), so at 80 columns
status, name, progress, failed, DL and ETA stay. A change touches only the cells whose
text changed; the order is fixed with `DataTable.sort` only when a job arrives or
changes group."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from relaytui.board import JobBoard
from relaytui.models import (
    NEVER_RAN_MARK,
    WITH_ERRORS,
    JobView,
    age_text,
    duration_text,
    eta_seconds,
    order_key,
    progress_bar,
    rate_text,
)
from relaytui.widgets.colours import theme_style

# key, label, width
COLUMNS = (("status", "Status", 13), ("name", "Name", 44), ("model", "Model", 14),
           ("priority", "Pri", 3), ("progress", "Progress", 15), ("count", "Done/Total", 11),
           ("failed", "Failed", 6), ("dead", "DL", 4), ("rate", "Rows/s", 6),
           ("age", "Age", 5), ("eta", "ETA", 8))
NAME_WIDTH = 40  # at first; `on_resize` gives it the room the other columns leave
NAME_MIN = 16  # narrower than this, a column leaves instead
DROPPED_FIRST = ("age", "rate", "priority", "model", "count")
_RIGHT = {"priority", "count", "failed", "dead", "rate", "age", "eta"}

LABELS = {"running": "▶ running", "queued": "· queued", "scheduled": "↻ scheduled",
          "completed": "✓ completed", WITH_ERRORS: "⚠ with errors", "failed": "✗ failed",
          "expired": "✗ expired", "canceled": "⊘ canceled", "cancelling": "cancelling…"}
# Theme variables, so the colours follow the theme (dark, light, ANSI-only).
COLOURS = {"running": "text-primary", "cancelling": "text-warning", "queued": "foreground",
           "scheduled": "text-accent", "completed": "text-success", "failed": "text-error",
           WITH_ERRORS: "warning",  # its own: the saturated amber, in bold (`_style`)
           "expired": "text-error", "canceled": "text-warning"}


class Keyed(Text):
    """A name cell that remembers its job, so `DataTable.sort` can order rows by job."""

    def __init__(self, text: str, job_id: str) -> None:
        super().__init__(text, no_wrap=True, overflow="ellipsis", end="")
        self.job_id = job_id


class JobTable(DataTable[Text]):
    @dataclass
    class Highlighted(Message):
        """The cursor is on this job now (None: the table is empty)."""

        job_id: str | None

    @dataclass
    class Opened(Message):
        """Enter was pressed on this job."""

        job_id: str

    def __init__(self, board: JobBoard, *, clock: Callable[[], float],
                 id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.board, self.clock = board, clock
        self.status_filter, self.text_filter = "all", ""
        self._shown: dict[str, dict[str, str]] = {}
        self._styles: dict[str, Style | str] = {}
        self.keys: tuple[str, ...] = ()

    def on_mount(self) -> None:
        self._columns(NAME_WIDTH)
        self.app.theme_changed_signal.subscribe(self, self._restyle)

    def on_resize(self) -> None:
        """The name column takes the width the others leave (a resize is rare)."""
        keys, width = fitting(self.size.width, padding=self.cell_padding)
        current = next((c.width for c in self.columns.values() if c.key == "name"), None)
        if width != current or keys != self.keys:
            self.clear(columns=True)
            self._columns(width, keys)
            self.fill()

    def _columns(self, name_width: int, keys: tuple[str, ...] | None = None) -> None:
        self.keys = keys or tuple(key for key, _, _ in COLUMNS)
        for key, label, width in COLUMNS:
            if key in self.keys:
                self.add_column(Text(label, justify="right" if key in _RIGHT else "left"),
                                key=key, width=name_width if key == "name" else width)

    def _restyle(self, _theme: object) -> None:
        self._styles.clear()
        self.fill()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.post_message(self.Highlighted(event.row_key.value))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.Opened(event.row_key.value))

    @property
    def selected_id(self) -> str | None:
        if not self.row_count:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return row_key.value

    def set_filters(self, status: str, text: str) -> None:
        self.status_filter, self.text_filter = status, text
        self.fill()

    def fill(self) -> None:
        """Rebuild from the board: at start, on a filter change or a theme change."""
        keep = self.selected_id
        self.clear()
        self._shown.clear()
        for view in self.board.views():
            if view.matches(self.status_filter, self.text_filter):
                self._add(view)
        self.select(keep)

    def upsert(self, view: JobView, *, moved: bool) -> None:
        """One job changed: add, update or drop its row."""
        if not view.matches(self.status_filter, self.text_filter):
            self.drop(view.id)
        elif view.id not in self._shown:
            self._add(view)
            self._reorder()
        else:
            self._update(view)
            if moved:
                self._reorder()

    def drop(self, job_id: str) -> None:
        if self._shown.pop(job_id, None) is not None:
            self.remove_row(job_id)

    def tick(self) -> None:
        """Once a second: ages, rates and ETAs move with the clock."""
        for job_id in list(self._shown):
            view = self.board.get(job_id)
            if view is not None:
                self._update(view, only=("rate", "age", "eta"))

    def _add(self, view: JobView) -> None:
        texts = self._texts(view)
        self._shown[view.id] = texts
        cells = [self._cell(view, key, texts[key]) for key in self.keys]
        self.add_row(*cells, key=view.id)

    def _update(self, view: JobView, only: tuple[str, ...] | None = None) -> None:
        texts, shown = self._texts(view), self._shown[view.id]
        for key in only or texts:
            if key in self.keys and texts[key] != shown.get(key):
                shown[key] = texts[key]
                self.update_cell(view.id, key, self._cell(view, key, texts[key]))

    def _texts(self, view: JobView) -> dict[str, str]:
        now = self.clock()
        rate = self.board.rate(view.id, now=now) if view.started_at else None
        return {
            "status": f"⏸ {view.paused}" if view.paused else LABELS.get(view.shown_status,
                                                                          view.status),
            "name": view.name or view.id, "model": view.model, "priority": view.priority_text,
            "progress": progress_bar(view.ran, view.total, never_ran=view.canceled or 0),
            "count": f"{view.ran}/{view.total}", "failed": str(view.failed),
            "dead": "—" if view.dead_letter is None else str(view.dead_letter),
            "rate": rate_text(rate if view.status not in ("queued", "scheduled") else None),
            "age": age_text(now - view.created_at if view.created_at else None),
            "eta": _eta(view, rate, now),
        }

    def _cell(self, view: JobView, key: str, text: str) -> Text:
        if key == "name":
            return Keyed(text, view.id)
        style = self._style(view.shown_status) if key in ("status", "progress") else ""
        if (key == "failed" and view.failed) or (key == "dead" and view.dead_letter):
            style = self._style("failed")
        cell = Text(text, style=style, justify="right" if key in _RIGHT else "left",
                    no_wrap=True, overflow="ellipsis", end="")
        if key == "progress" and NEVER_RAN_MARK in text:  # rows that never ran: dimmed
            start = text.index(NEVER_RAN_MARK)
            cell.stylize("dim", start, text.rindex(NEVER_RAN_MARK) + 1)
        return cell

    def _style(self, status: str) -> Style | str:
        if status not in self._styles:
            style = theme_style(self.app, COLOURS.get(status, "foreground"))
            if status == WITH_ERRORS and isinstance(style, Style):
                style += Style(bold=True)
            self._styles[status] = style
        return self._styles[status]

    def _reorder(self) -> None:
        keep = self.selected_id
        self.sort("name", key=lambda cell: order_key(self.board.get(cell.job_id)
                                                     or JobView(cell.job_id)))
        self.select(keep)

    def select(self, job_id: str | None) -> None:
        if job_id is not None and job_id in self._shown:
            self.move_cursor(row=self.get_row_index(job_id), scroll=False)


def _eta(view: JobView, rate: float | None, now: float) -> str:
    """A running job's ETA; a cron template's time to its next run (`due` once past)."""
    if view.status == "running":
        return duration_text(eta_seconds(view, rate))
    if view.is_template and view.status == "scheduled" and view.next_run_at is not None:
        left = view.next_run_at - now
        return duration_text(left) if left > 0 else "due"
    return ""


def fitting(width: int, *, padding: int = 1) -> tuple[tuple[str, ...], int]:
    """The columns shown in a table `width` wide (its content), and the name's width: every
    column while the name gets NAME_MIN, else fewer (`DROPPED_FIRST` leave first)."""
    keys = [key for key, _, _ in COLUMNS]
    widths = {key: w for key, _, w in COLUMNS}
    for leaving in (None, *DROPPED_FIRST):
        if leaving is not None:
            keys.remove(leaving)
        # `width` is inside the border; 2 more for a scrollbar, when the rows overflow
        spare = width - sum(widths[k] for k in keys if k != "name") \
            - 2 * padding * len(keys) - 2
        if spare >= NAME_MIN:
            break
    return tuple(keys), max(NAME_MIN, min(spare, NAME_WIDTH * 2))
