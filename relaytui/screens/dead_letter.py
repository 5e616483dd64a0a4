"""The dead-letter inspector of one job: the rows that exhausted retries and fallbacks,
each row's messages and attempts, and re-driving all or the marked ones into a new job."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, LoadingIndicator, Static

from relaytui.client import RelayError
from relaytui.models import JobView
from relaytui.screens.base import RelayScreen
from relaytui.widgets.attempts import AttemptTable, plain


class DeadLetterScreen(RelayScreen):
    AUTO_FOCUS = "#dead"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", tooltip="Back to the jobs"),
        Binding("enter", "open", "Open", tooltip="Show the row's messages and every attempt"),
        Binding("space", "mark", "Mark", tooltip="Mark or unmark the row for re-driving"),
        Binding("r", "redrive_marked", "Re-drive marked",
                tooltip="Re-drive the marked rows (or the highlighted one) into a new job"),
        Binding("R", "redrive_all", "Re-drive all",
                tooltip="Re-drive every dead-lettered row into a new job"),
    ]

    def __init__(self, client: Any, job: JobView) -> None:
        super().__init__()
        self.client, self.job = client, job
        self.entries: list[dict[str, Any]] = []
        self.marked: set[str] = set()
        self.redriving = False

    def compose(self) -> ComposeResult:
        yield Static(f"[b]Dead letter[/b] — {escape(self.job.name or self.job.id)}  "
                     f"[dim]{self.job.id}[/dim]", classes="screen-title")
        yield LoadingIndicator()
        yield DataTable(id="dead", cursor_type="row", zebra_stripes=True)
        yield Static("", id="dead-summary", classes="summary")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label, width in (("mark", "✓", 1), ("custom_id", "custom_id", 24),
                                  ("attempts", "Attempts", 8), ("models", "Models tried", 26),
                                  ("error", "Last error", 86)):
            table.add_column(label, key=key, width=width)
        table.display = False
        self._load()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False,
          name="loading the dead letter")
    def _load(self) -> None:
        try:
            entries = self.client.dead_letter(self.job.id)["data"]
        except RelayError as exc:
            self.app.call_from_thread(self._show_problem, exc.message)
            return
        self.app.call_from_thread(self._loaded, entries)

    def _loaded(self, entries: list[dict[str, Any]]) -> None:
        self.entries = entries
        self.query_one(LoadingIndicator).display = False
        table = self.query_one(DataTable)
        table.display = True
        for entry in entries:
            table.add_row(Text(" "), plain(entry.get("custom_id")),
                          Text(str(entry.get("attempts", "")), justify="right"),
                          plain(", ".join(entry.get("models") or [])),
                          plain(entry.get("last_error")), key=entry["custom_id"])
        table.focus()
        self._summarise()

    def _show_problem(self, message: str) -> None:
        self.query_one(LoadingIndicator).display = False
        self.query_one("#dead-summary", Static).update(f"[$text-error]{escape(message)}[/]")

    def _summarise(self) -> None:
        n = len(self.entries)
        if not n:
            text = "No dead-lettered rows: nothing to re-drive."
        else:
            text = (f"{n} dead-lettered row{'s' if n != 1 else ''}, {len(self.marked)} "
                    "marked — space marks, r re-drives the marked (or highlighted) rows, "
                    "R re-drives all, enter opens one")
        self.query_one("#dead-summary", Static).update(text)

    def _highlighted_id(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def action_mark(self) -> None:
        custom_id = self._highlighted_id()
        if custom_id is None:
            return
        self.marked ^= {custom_id}
        mark = Text("✓" if custom_id in self.marked else " ", style="bold")
        table = self.query_one(DataTable)
        table.update_cell(custom_id, "mark", mark)
        if table.cursor_row < table.row_count - 1:
            table.move_cursor(row=table.cursor_row + 1)
        self._summarise()

    @on(DataTable.RowSelected, "#dead")
    def action_open(self) -> None:
        custom_id = self._highlighted_id()
        entry = next((e for e in self.entries if e["custom_id"] == custom_id), None)
        if entry is not None:
            self.app.push_screen(AttemptsScreen(entry))

    def action_redrive_marked(self) -> None:
        chosen = sorted(self.marked) or [i for i in [self._highlighted_id()] if i]
        if chosen:
            self._redrive(chosen)

    def action_redrive_all(self) -> None:
        if self.entries:
            self._redrive(None)

    def _redrive(self, custom_ids: list[str] | None) -> None:
        if self.redriving:  # one re-drive at a time: never two jobs from one key press
            self.notify("A re-drive is already being sent.", severity="warning")
            return
        self.redriving = True
        self._send(custom_ids)

    @work(thread=True, group="redrive", exit_on_error=False, name="re-drive")
    def _send(self, custom_ids: list[str] | None) -> None:
        try:
            job = self.client.retry_dead_letter(self.job.id, custom_ids)
        except RelayError as exc:
            self.app.call_from_thread(self._sent, None, exc.message)
            return
        self.app.call_from_thread(self._sent, job, None)

    def _sent(self, job: dict[str, Any] | None, problem: str | None) -> None:
        self.redriving = False
        if job is None:
            self.notify(problem or "refused", title="Re-drive refused", severity="error")
            return
        total = job.get("total") or (job.get("request_counts") or {}).get("total")
        self.notify(f"{total} row(s) re-driven as job {job['id']}", title="Re-driven",
                    timeout=8)
        self.marked.clear()
        table = self.query_one(DataTable)
        for entry in self.entries:
            table.update_cell(entry["custom_id"], "mark", Text(" "))
        self._summarise()


class AttemptsScreen(ModalScreen[None]):
    """One dead-lettered row: its messages and every attempt the router made."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close", tooltip="Close the row's messages and attempts")]

    def __init__(self, entry: dict[str, Any]) -> None:
        super().__init__(classes="dialog-screen")
        self.entry = entry

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Static(f"[b]{escape(self.entry['custom_id'])}[/b]  "
                         f"{self.entry.get('attempts')} attempts", classes="question")
            with VerticalScroll(classes="messages"):
                yield Static(self._messages())
            yield AttemptTable(id="attempts")
            yield Static(f"[$text-error]{escape(str(self.entry.get('last_error') or ''))}[/]",
                         classes="problem")
            yield Static("[dim]escape closes[/dim]")

    def _messages(self) -> str:
        lines = []
        for message in self.entry.get("messages") or []:
            content = message.get("content")
            text = content if isinstance(content, str) else repr(content)
            lines.append(f"[b]{escape(str(message.get('role')))}[/b]: {escape(text)}")
        return "\n".join(lines) or "[dim](no messages: an OpenAI record, see its body)[/dim]"

    def on_mount(self) -> None:
        self.query_one(AttemptTable).show(self.entry.get("attempt_log") or [])
