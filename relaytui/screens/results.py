"""The results of a job, read a page at a time (`RelayClient.result_pages`), or, for
a job still running, the rows finished so far, growing as rows finish
(`RelayClient.results_so_far`, polled until the job ends): browse (the highlighted
one in full below), search, open a row in full (its request,
tool rounds and attempts), and save them all to a `.jsonl` or `.csv` file (writing is
`relaytui.export`). A job with tool-calling records gets a Rounds column: each row's
tool rounds, marked when the round limit ended the loop or a tool answered with an
error; a finished workflow record shows its steps there."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.widgets import DataTable, Input, LoadingIndicator, Static
from textual.worker import Worker, get_current_worker

from relaytui.api import RelayApi
from relaytui.client import RelayError
from relaytui.export import FORMATS, ExportError, is_error, matches, result_text, write_results
from relaytui.models import JobView
from relaytui.progress import ENDED
from relaytui.repairs import repair_summary, repairs_cell, repairs_text
from relaytui.rows import needs_a_look, rounds_cell, summary_text, tool_summary
from relaytui.screens.base import RelayScreen
from relaytui.screens.row_detail import RowDetailScreen
from relaytui.widgets.colours import theme_style
from relaytui.widgets.confirm import PromptScreen
from relaytui.widgets.footer import RelayFooter
from relaytui.workflows import steps_cell, totals_text, workflow_summary

SHOWN_AT_MOST = 5000  # more rows than this make the table slow; search narrows them
FOLLOW_EVERY_S = 1.0  # how often a running job's results are asked for new rows
RESULT_WIDTH, ROUNDS_WIDTH = 120, 9


def check_export_path(value: str) -> str | None:
    if not value:
        return "Type a file name."
    if Path(value).suffix.lower() not in FORMATS:
        return "The name must end in .jsonl or .csv."
    if not Path(value).expanduser().parent.is_dir():
        return f"{Path(value).expanduser().parent}: no such directory."
    return None


class ResultsScreen(RelayScreen):
    AUTO_FOCUS = "#results"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", tooltip="Close the search, or go back to the jobs"),
        Binding("slash", "search", "Search", key_display="/",
                tooltip="Show only results whose custom_id, content or error has these words"),
        Binding("o", "open_row", "Open row", tooltip="Open the highlighted row: its "
                "request, every tool round (calls, results, usage), its answer and attempts "
                "(also enter)"),
        Binding("s", "save", "Save", tooltip="Save every result to a .jsonl or .csv file"),
    ]

    def __init__(self, client: RelayApi, job: JobView) -> None:
        super().__init__()
        self.client, self.job = client, job
        self.items: list[dict[str, Any]] = []
        self.shown: list[dict[str, Any]] = []
        self.with_rounds = False  # some row ran a tool loop: the Rounds column is shown

    def compose(self) -> ComposeResult:
        yield Static(f"[b]Results[/b] — {escape(self.job.name or self.job.id)}  "
                     f"[dim]{self.job.id} · {self.job.status}[/dim]", classes="screen-title")
        yield Input(placeholder="search custom_id, content or error — enter keeps it, "
                    "escape clears", id="search")
        yield LoadingIndicator()
        yield DataTable(id="results", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="result-full"):
            yield Static("", id="result-text")
        yield Static("", id="results-summary", classes="summary")
        yield RelayFooter()

    def on_mount(self) -> None:
        self.query_one(DataTable).display = False
        self._load()

    def _columns(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("custom_id", key="custom_id", width=24)
        if self.with_rounds:
            table.add_column("Rounds", key="rounds", width=ROUNDS_WIDTH)
        width = RESULT_WIDTH - (ROUNDS_WIDTH + 2 * table.cell_padding) * self.with_rounds
        table.add_column("Result", key="result", width=width)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False,
          name="loading results")
    def _load(self) -> None:
        """Every page of the results (search and save need them all), counted on the
        summary line as they come; the table appears once the last one is in."""
        worker = get_current_worker()
        if not self.job.terminal and not self.job.is_template:  # a template never ends
            self._follow(worker)
            return
        items: list[dict[str, Any]] = []
        try:
            for page in self.client.result_pages(self.job.id):
                if worker.is_cancelled:  # the screen was closed
                    return
                items.extend(page["data"])
                if page.get("has_more"):
                    self.app.call_from_thread(self._loading, len(items))
        except RelayError as exc:
            self.app.call_from_thread(self._problem, exc.message)
            return
        self.app.call_from_thread(self._loaded, items)

    def _follow(self, worker: Worker[None]) -> None:
        """A running job's rows as they finish, each once (the cursor of the finish
        order), until a page that found nothing new says the job has ended."""
        cursor, first = "", True
        while not worker.is_cancelled:
            try:
                page = self.client.results_so_far(self.job.id, cursor=cursor)
            except RelayError as exc:
                if not worker.is_cancelled:
                    self.app.call_from_thread(self._problem, exc.message)
                return
            if worker.is_cancelled:  # the screen closed while it asked
                return
            ended = not page["has_more"] and page["status"] in ENDED
            if page["data"] or first or ended:
                self.app.call_from_thread(self._grew, page["data"], first=first, ended=ended)
                first = False
            cursor = page["next_cursor"]
            if ended:
                return
            if not page["has_more"]:
                worker.cancelled_event.wait(FOLLOW_EVERY_S)

    def _grew(self, items: list[dict[str, Any]], *, first: bool, ended: bool) -> None:
        if first:
            self._loaded(items)
        else:
            self._append(items)
        if not ended:
            self.query_one("#results-summary", Static).update(escape(
                f"{len(self.items)} results so far · the job is running: rows appear as "
                "they finish"))

    def _loading(self, count: int) -> None:
        self.query_one("#results-summary", Static).update(f"Loading results… {count:,} so far")

    def _loaded(self, items: list[dict[str, Any]]) -> None:
        self.items = items
        self.with_rounds = any(tool_summary(item) is not None
                               or workflow_summary(item) is not None
                               or repair_summary(item) is not None for item in items)
        self._columns()
        self.query_one(LoadingIndicator).display = False
        self.query_one(DataTable).display = True
        self._show()
        self.query_one(DataTable).focus()

    def _problem(self, message: str) -> None:
        self.query_one(LoadingIndicator).display = False
        self.query_one("#results-summary", Static).update(
            f"[$text-error]{escape(message)}[/]")

    def _show(self) -> None:
        needle = self.query_one("#search", Input).value
        self.shown = [item for item in self.items if matches(item, needle)]
        table = self.query_one(DataTable)
        table.clear()
        error_style = theme_style(self.app, "text-error")
        look_style = theme_style(self.app, "text-warning")
        for n, item in enumerate(self.shown[:SHOWN_AT_MOST]):
            table.add_row(*self._cells(item, error_style, look_style), key=str(n))
        self._summarise(needle)
        self._preview()

    def _cells(self, item: dict[str, Any], error_style: Style | str,
               look_style: Style | str) -> list[Text]:
        text = " ".join(result_text(item).split())
        cells = [Text(str(item.get("custom_id", "")), no_wrap=True, end="")]
        if self.with_rounds:
            summary = tool_summary(item)
            cell = (rounds_cell(summary) or steps_cell(workflow_summary(item))
                    or repairs_cell(repair_summary(item)))
            cells.append(Text(cell, no_wrap=True, end="",
                              style=look_style if needs_a_look(summary) else ""))
        cells.append(Text(text, style=error_style if is_error(item) else "",
                          no_wrap=True, overflow="ellipsis", end=""))
        return cells

    def _append(self, items: list[dict[str, Any]]) -> None:
        """Rows that finished since: those the search in force matches are added below
        the others, where the operator's place in the table stays put, up to the rows a
        table shows (past them, only the counts move). The first tool-calling or
        workflow row adds the Rounds column: the table is drawn again, once."""
        self.items.extend(items)
        if not self.with_rounds and any(tool_summary(i) is not None
                                        or workflow_summary(i) is not None for i in items):
            self.with_rounds = True
            self.query_one(DataTable).clear(columns=True)
            self._columns()
            self._show()
            return
        needle = self.query_one("#search", Input).value
        table = self.query_one(DataTable)
        error_style = theme_style(self.app, "text-error")
        look_style = theme_style(self.app, "text-warning")
        for item in (i for i in items if matches(i, needle)):
            if len(self.shown) < SHOWN_AT_MOST:
                table.add_row(*self._cells(item, error_style, look_style),
                              key=str(len(self.shown)))
            self.shown.append(item)
        self._summarise(needle)

    def _summarise(self, needle: str) -> None:
        errors = sum(1 for item in self.items if is_error(item))
        parts = [f"{len(self.items)} results, {errors} error{'s' if errors != 1 else ''}"]
        if needle.strip():
            parts.append(f"{len(self.shown)} match “{needle.strip()}”")
        if len(self.shown) > SHOWN_AT_MOST:
            parts.append(f"showing the first {SHOWN_AT_MOST}: search to narrow")
        if not self.items:
            parts = [f"No results ({self.job.status})."]
        self.query_one("#results-summary", Static).update(escape(" · ".join(parts)))

    @on(DataTable.RowHighlighted, "#results")
    def _preview(self) -> None:
        table = self.query_one(DataTable)
        text = self.query_one("#result-text", Static)
        if not table.row_count:
            text.update("")
            return
        item = self.shown[table.cursor_row]
        body = escape(result_text(item)) or "[dim](no text: o opens the whole row)[/dim]"
        label = "[$text-error]error[/]" if is_error(item) else "[dim]content[/dim]"
        summary = tool_summary(item)
        if summary is not None:
            colour = "$text-warning" if needs_a_look(summary) else "$text-muted"
            label += f" · [{colour}]⟳ {escape(summary_text(summary))}[/]"
        elif (totals := workflow_summary(item)) is not None:
            label += f" · [$text-muted]▸ workflow: {escape(totals_text(totals))}[/]"
        elif (repairs := repair_summary(item)) is not None:  # its repair history
            label += f" · [$text-muted]{escape(repairs_text(repairs))}[/]"
        text.update(f"[b]{escape(str(item.get('custom_id')))}[/b] {label}\n{body}")

    def _highlighted(self) -> dict[str, Any] | None:
        table = self.query_one(DataTable)
        if not table.row_count or not table.display:
            return None
        return self.shown[table.cursor_row]

    @on(DataTable.RowSelected, "#results")
    def action_open_row(self) -> None:
        item = self._highlighted()
        if item is None:
            self.notify("There is no row to open.", severity="warning")
            return
        self.app.push_screen(RowDetailScreen(self.client, self.job,
                                             str(item.get("custom_id", ""))))

    def action_search(self) -> None:
        search = self.query_one("#search", Input)
        search.add_class("-shown")
        search.focus()

    @on(Input.Changed, "#search")
    def _searched(self) -> None:
        if self.items:
            self._show()

    @on(Input.Submitted, "#search")
    def _search_done(self) -> None:
        self.query_one(DataTable).focus()

    def action_back(self) -> None:
        search = self.query_one("#search", Input)
        if search.has_class("-shown"):
            search.value = ""
            search.remove_class("-shown")
            self.query_one(DataTable).focus()
        else:
            self.app.pop_screen()

    def action_save(self) -> None:
        if not self.items:
            self.notify("There are no results to save.", severity="warning")
            return
        default = f"{self.job.id}.jsonl"
        self.app.push_screen(PromptScreen("Save every result to (.jsonl or .csv):",
                                          value=default, check=check_export_path), self._save)

    def _save(self, path: str | None) -> None:
        if path:
            self._write(path)

    @work(thread=True, group="save", exit_on_error=False, name="saving results")
    def _write(self, path: str) -> None:
        try:
            count = write_results(path, self.items)
        except ExportError as exc:
            self.app.call_from_thread(self.notify, str(exc), title="Not saved",
                                      severity="error")
            return
        self.app.call_from_thread(self.notify, f"{count} results saved to {path}",
                                  title="Saved")
