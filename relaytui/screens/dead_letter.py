"""The dead-letter inspector of one job, or of every job of the workspace: the rows that
exhausted retries and fallbacks, where each stands (open, re-driven to a job, discarded),
each row's messages and attempts; re-driving or discarding all or the marked ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import DataTable, LoadingIndicator, Static

from relaytui.api import RelayApi
from relaytui.client import RelayError
from relaytui.models import JobView
from relaytui.rows import attempts_cell, attempts_text
from relaytui.screens.base import RelayScreen
from relaytui.widgets.attempts import AttemptTable, plain
from relaytui.widgets.confirm import ConfirmScreen
from relaytui.widgets.footer import RelayFooter


class DeadLetterScreen(RelayScreen):
    """One job's dead letter, or (`job` None) the open rows of every job of the
    workspace. A row re-driven already shows the job it went to; re-driving it again,
    and re-driving all, ask first."""

    AUTO_FOCUS = "#dead"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", tooltip="Back to the jobs"),
        Binding("enter", "open", "Open", tooltip="Show the row's messages and every attempt"),
        Binding("space", "mark", "Mark", tooltip="Mark or unmark the row"),
        Binding("r", "redrive_marked", "Re-drive marked",
                tooltip="Re-drive the marked rows (or the highlighted one) into a new job; "
                "a row re-driven already asks first"),
        Binding("R", "redrive_all", "Re-drive all",
                tooltip="Re-drive every open dead-lettered row into a new job (asks first)"),
        Binding("x", "discard", "Discard",
                tooltip="Take the marked (or highlighted) open rows off the list (asks "
                "first)"),
    ]

    def __init__(self, client: RelayApi, job: JobView | None = None) -> None:
        super().__init__()
        self.client, self.job = client, job
        self.entries: list[dict[str, Any]] = []
        self.marked: set[str] = set()
        self.redriving = False

    @property
    def workspace_wide(self) -> bool:
        return self.job is None

    def compose(self) -> ComposeResult:
        if self.job is None:
            title = "[b]Dead letter[/b] — every job  [dim]open rows, newest job first[/dim]"
        else:
            title = (f"[b]Dead letter[/b] — {escape(self.job.name or self.job.id)}  "
                     f"[dim]{self.job.id}[/dim]")
        yield Static(title, classes="screen-title")
        yield LoadingIndicator()
        yield DataTable(id="dead", cursor_type="row", zebra_stripes=True)
        yield Static("", id="dead-summary", classes="summary")
        yield RelayFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label, width in dead_letter_columns(self.app.size.width,
                                                     workspace_wide=self.workspace_wide):
            table.add_column(label, key=key, width=width)
        table.display = False
        self._load()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False,
          name="loading the dead letter")
    def _load(self) -> None:
        try:
            if self.job is None:
                entries = self.client.all_dead_letter()["data"]
            else:
                entries = self.client.dead_letter(self.job.id)["data"]
        except RelayError as exc:
            self.app.call_from_thread(self._show_problem, exc.message)
            return
        self.app.call_from_thread(self._loaded, entries)

    def key_of(self, entry: dict[str, Any]) -> str:
        if self.workspace_wide:
            return f"{entry.get('batch_id')}/{entry['custom_id']}"
        return str(entry["custom_id"])

    def _loaded(self, entries: list[dict[str, Any]]) -> None:
        self.entries = entries
        self.query_one(LoadingIndicator).display = False
        table = self.query_one(DataTable)
        keep = self._highlighted_id()
        table.clear()
        table.display = True
        for entry in entries:
            cells: list[Any] = [Text("✓" if self.key_of(entry) in self.marked else " ",
                                     style="bold"), plain(entry.get("custom_id")),
                                Text(attempts_cell(entry), justify="right"),
                                plain(", ".join(entry.get("models") or [])),
                                state_text(entry), plain(entry.get("last_error"))]
            if self.workspace_wide:
                cells.insert(1, plain(entry.get("batch_name") or entry.get("batch_id")))
            table.add_row(*cells, key=self.key_of(entry))
        if keep is not None and keep in {self.key_of(e) for e in entries}:
            table.move_cursor(row=table.get_row_index(keep))
        table.focus()
        self._summarise()

    def _show_problem(self, message: str) -> None:
        self.query_one(LoadingIndicator).display = False
        self.query_one("#dead-summary", Static).update(f"[$text-error]{escape(message)}[/]")

    def _summarise(self) -> None:
        n = len(self.entries)
        still = sum(1 for e in self.entries if is_open(e))
        if not n:
            text = "No dead-lettered rows: nothing to re-drive."
        else:
            text = (f"{n} dead-lettered row{'s' if n != 1 else ''} ({still} open), "
                    f"{len(self.marked)} marked — space marks, r re-drives the marked (or "
                    "highlighted) rows, R re-drives all open, x discards, enter opens one")
        self.query_one("#dead-summary", Static).update(text)

    def _highlighted_id(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def _entry(self, key: str | None) -> dict[str, Any] | None:
        return next((e for e in self.entries if self.key_of(e) == key), None)

    def action_mark(self) -> None:
        key = self._highlighted_id()
        if key is None:
            return
        self.marked ^= {key}
        mark = Text("✓" if key in self.marked else " ", style="bold")
        table = self.query_one(DataTable)
        table.update_cell(key, "mark", mark)
        if table.cursor_row < table.row_count - 1:
            table.move_cursor(row=table.cursor_row + 1)
        self._summarise()

    @on(DataTable.RowSelected, "#dead")
    def action_open(self) -> None:
        entry = self._entry(self._highlighted_id())
        if entry is not None:
            self.app.push_screen(AttemptsScreen(entry))

    def _chosen(self) -> list[dict[str, Any]]:
        keys = self.marked or {k for k in [self._highlighted_id()] if k}
        return [e for e in self.entries if self.key_of(e) in keys]

    def action_redrive_marked(self) -> None:
        if self.refuses("Re-driving"):
            return
        chosen = self._chosen()
        again = [e for e in chosen if not is_open(e)]
        if not again:
            self._redrive(chosen, force=False)
            return
        where = ", ".join(sorted({str(e.get("redriven_to") or "discarded") for e in again}))
        self._ask(f"{len(again)} of the {len(chosen)} row(s) were re-driven or discarded "
                  f"already ({where}). Re-drive them again?",
                  lambda: self._redrive(chosen, force=True), yes="Re-drive again")

    def action_redrive_all(self) -> None:
        if self.refuses("Re-driving"):
            return
        still = [e for e in self.entries if is_open(e)]
        if not still:
            self.notify("No open dead-lettered rows: each was re-driven or discarded "
                        "already (r re-drives a row again).", severity="warning")
            return
        jobs = len({e.get("batch_id") for e in still}) if self.workspace_wide else 1
        self._ask(f"Re-drive all {len(still)} open dead-lettered row(s) into "
                  f"{jobs} new job(s)?", lambda: self._redrive(still, force=False),
                  yes="Re-drive all")

    def action_discard(self) -> None:
        if self.refuses("Discarding"):
            return
        chosen = [e for e in self._chosen() if is_open(e)]
        if not chosen:
            self.notify("Only open rows can be discarded.", severity="warning")
            return
        self._ask(f"Discard {len(chosen)} dead-lettered row(s)? They leave the open list "
                  "(the job's dead-letter count keeps them).",
                  lambda: self._discard(chosen), yes="Discard")

    def _ask(self, question: str, then: Callable[[], object], *, yes: str) -> None:
        def answered(ok: bool | None) -> None:
            if ok:
                then()
        self.app.push_screen(ConfirmScreen(question, yes=yes, no="Cancel"), answered)

    def _redrive(self, entries: list[dict[str, Any]], *, force: bool) -> None:
        if self.redriving:  # one re-drive at a time: never two jobs from one key press
            self.notify("A re-drive is already being sent.", severity="warning")
            return
        if entries:
            self.redriving = True
            self._send(by_job(entries, self.job), force)

    @work(thread=True, group="redrive", exit_on_error=False, name="re-drive")
    def _send(self, by_job: dict[str, list[str]], force: bool) -> None:
        for job_id, custom_ids in by_job.items():
            try:
                job = self.client.retry_dead_letter(job_id, custom_ids, force=force)
            except RelayError as exc:
                self.app.call_from_thread(self._sent, None, exc.message)
                continue
            self.app.call_from_thread(self._sent, job, None)
        self.app.call_from_thread(self._done)

    def _sent(self, job: dict[str, Any] | None, problem: str | None) -> None:
        if job is None:
            self.notify(problem or "refused", title="Re-drive refused", severity="error")
            return
        total = job.get("total") or (job.get("request_counts") or {}).get("total")
        self.notify(f"{total} row(s) re-driven as job {job['id']}", title="Re-driven",
                    timeout=8)

    def _done(self) -> None:
        self.redriving = False
        self.marked.clear()
        self._load()

    @work(thread=True, group="redrive", exit_on_error=False, name="discard")
    def _discard(self, entries: list[dict[str, Any]]) -> None:
        for job_id, custom_ids in by_job(entries, self.job).items():
            try:
                answer = self.client.discard_dead_letter(job_id, custom_ids)
            except RelayError as exc:
                self.app.call_from_thread(self.notify, exc.message, title="Discard refused",
                                          severity="error")
                continue
            self.app.call_from_thread(self.notify, f"{answer['discarded']} row(s) "
                                      f"discarded; {answer['dead_letter_open']} open",
                                      title="Discarded")
        self.app.call_from_thread(self._done)


def is_open(entry: dict[str, Any]) -> bool:
    return entry.get("state", "open") == "open" and not entry.get("redriven_to")


def dead_letter_columns(width: int, *, workspace_wide: bool) -> list[tuple[str, str, int]]:
    """The table's columns (key, label, width) for a terminal `width` wide: from 120
    columns, room for each; below, the names and models narrower (cut with `…`), so
    the state and the start of the last error stay on screen at 80."""
    roomy = width >= 120
    columns = [("mark", "✓", 1), ("custom_id", "custom_id", 24 if roomy else 14),
               ("attempts", "Attempts", 8), ("models", "Models tried", 20 if roomy else 12),
               ("state", "State", 14 if roomy else 10), ("error", "Last error", 66)]
    if workspace_wide:
        columns.insert(1, ("job", "Job", 24 if roomy else 14))
    return columns


def state_text(entry: dict[str, Any]) -> Text:
    """`open`, `→ 3f9c2a1b…` (the job it was re-driven to) or `discarded`."""
    if entry.get("redriven_to"):
        return Text(f"→ {str(entry['redriven_to'])[:10]}…", style="dim")
    if entry.get("state") == "discarded":
        return Text("discarded", style="dim")
    return Text("open")


def by_job(entries: list[dict[str, Any]], job: JobView | None) -> dict[str, list[str]]:
    """The custom_ids of `entries`, grouped by the job each belongs to."""
    grouped: dict[str, list[str]] = {}
    for entry in entries:
        owner = job.id if job is not None else str(entry["batch_id"])
        grouped.setdefault(owner, []).append(str(entry["custom_id"]))
    return grouped


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
                         f"{escape(attempts_text(self.entry))}", classes="question")
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
        self.query_one(AttemptTable).show(self.entry)
