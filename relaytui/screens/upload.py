"""Submitting a file as a job: pick a `.csv` (one prompt per line, or a header naming the
prompt column) or `.jsonl` (Relay rows or OpenAI records) in the tree or by typing its
path, see its first rows as parsed, choose the model, name, priority, optional cron and
webhook, and submit once. With a template (`{column}`), the file is a table (a `.csv`
with a header, a `.jsonl` of objects or a `.parquet` file): the preview shows the first
rows' prompts as the template renders them, the whole table is checked before anything
is sent, and it goes as an OpenAI chat batch (`relaytui.table_jobs`), as `relay submit
--template` sends it. Reading and sending run in thread workers; a bad file or a refusal
is shown in the form, a refused row by its line in the file."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.markup import escape
from textual.timer import Timer
from textual.widgets import (
    Button,
    DataTable,
    DirectoryTree,
    Input,
    Label,
    LoadingIndicator,
    Select,
    Static,
)

from relaytui import table_jobs
from relaytui.api import RelayApi
from relaytui.client import RelayError, inline_batch
from relaytui.estimate_text import estimate_lines
from relaytui.formats import InputFile, InputFileError, read_input
from relaytui.screens.base import RelayScreen
from relaytui.table_batch import CHAT, Request, Template, TemplateError, parse_template
from relaytui.tables import Table, read_table
from relaytui.widgets.footer import RelayFooter

SUFFIXES = (".csv", ".jsonl", ".ndjson", ".parquet")
PREVIEW_ROWS = 5
# The daemon's `param` for a refused field, and the form field that shows it.
FIELDS = {"model": "#model", "cron": "#cron", "webhookUrl": "#webhook",
          "priority": "#priority", "name": "#name", "requests": "#path",
          "input_file_id": "#path", "template": "#template"}
Wanted = tuple[str, str, str]  # the path, prompt column and template asked for


class InputFileTree(DirectoryTree):
    """Folders and the files Relay can read; nothing hidden."""

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return [p for p in paths if not p.name.startswith(".")
                and (p.suffix.lower() in SUFFIXES or self._is_dir(p))]

    @staticmethod
    def _is_dir(path: Path) -> bool:
        try:
            return path.is_dir()
        except OSError:
            return False


def preview_cells(n: int, row: dict[str, Any]) -> tuple[str, str, str]:
    """custom_id, role and text of a row as parsed (a Relay row or an OpenAI record)."""
    custom_id = row.get("custom_id") or f"row-{n}"
    body = row.get("body") if isinstance(row.get("body"), dict) else None
    messages = (body or row).get("messages") or []
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    content = last.get("content", (body or {}).get("input", ""))
    text = content if isinstance(content, str) else repr(content)
    role = str(last.get("role", "")) + (f" → {body['model']}" if body and body.get("model")
                                        else "")
    return str(custom_id), role, " ".join(text.split())


class UploadScreen(RelayScreen):
    # Narrower than this, the tree goes above the form and the form's pairs stack.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # noqa: RUF012 (Textual types it so)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", tooltip="Back to the jobs, sending nothing"),
        Binding("ctrl+s", "submit", "Submit", tooltip="Submit the file as one job"),
    ]

    def __init__(self, client: RelayApi, *, start_dir: Path) -> None:
        super().__init__()
        self.client, self.start_dir = client, start_dir
        self.source: InputFile | None = None
        self.read_from: Wanted | None = None  # what was read
        self.table: tuple[Table, Template] | None = None  # with a template: what it fills
        self.submitting = False
        self._read_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static("[b]Upload a batch[/b] — a .csv (one prompt per line) or .jsonl "
                     "(Relay rows or OpenAI records), or with a template a table (.csv, "
                     ".jsonl, .parquet)", classes="screen-title")
        with Horizontal(id="upload-main"):
            yield InputFileTree(self.start_dir, id="tree")
            with VerticalScroll(id="form", can_focus=False):  # tab: tree → path
                with Horizontal(classes="row"):
                    with Vertical():
                        yield Label("File")
                        yield Input(placeholder="path to a .csv or .jsonl file, or pick one "
                                    "in the tree", id="path")
                    with Vertical(classes="narrow"):
                        yield Label("Prompt column")
                        yield Input(placeholder="CSV: auto", id="column")
                yield Label("Template (optional, for a table: {column} is its value, "
                            "{{ }} a brace)")
                yield Input(placeholder="e.g. Classify the sentiment of: {review}",
                            id="template")
                yield Static("", id="file-status")
                with Horizontal(classes="row"):
                    with Vertical():
                        yield Label("Model")
                        yield Select[str]([], prompt="loading models…", id="model")
                    with Vertical(classes="narrow"):
                        yield Label("Priority")
                        yield Input("0", type="integer", id="priority")
                yield Label("Name (optional)")
                yield Input(placeholder="defaults to a timestamp", id="name")
                with Horizontal(classes="row"):
                    with Vertical():
                        yield Label("Cron (optional: 5 fields, UTC)")
                        yield Input(placeholder="e.g. 0 2 * * *", id="cron")
                    with Vertical():
                        yield Label("Webhook URL (optional, HTTPS)")
                        yield Input(placeholder="https://…", id="webhook")
                yield Label("Preview (first rows as parsed, prompts as the template fills "
                            "them)")
                yield DataTable(id="preview", show_cursor=False)
                yield Static("", id="estimate")
                with Horizontal(id="submit-bar"):
                    yield Button("Submit", variant="primary", id="submit", disabled=True)
                    yield LoadingIndicator(id="busy")
                    yield Static("", id="submit-status")
        yield RelayFooter()

    def on_mount(self) -> None:
        preview = self.query_one("#preview", DataTable)
        for label, width in (("custom_id", 16), ("role", 10), ("content", 74)):
            preview.add_column(label, width=width)
        self.query_one("#busy").display = False
        self.query_one("#tree").focus()  # where ↓ works: pick a file
        self._load_models()

    # -- models ----------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="models", exit_on_error=False,
          name="loading models")
    def _load_models(self) -> None:
        try:
            names = [m["id"] for m in self.client.models()["data"]]
        except RelayError as exc:
            self.app.call_from_thread(self._models_failed, exc.message)
            return
        self.app.call_from_thread(self._models_loaded, names)

    def _models_loaded(self, names: list[str]) -> None:
        select = self.query_one("#model", Select)
        select.set_options((name, name) for name in names)
        select.prompt = "choose a model"
        if names:
            select.value = "gpt-4o-mini" if "gpt-4o-mini" in names else names[0]

    def _models_failed(self, message: str) -> None:
        self.query_one("#model", Select).prompt = "models unavailable"
        self._status(f"[$text-error]cannot load the models: {escape(message)}[/]")

    # -- the file --------------------------------------------------------------------

    @on(DirectoryTree.FileSelected)
    def _picked(self, event: DirectoryTree.FileSelected) -> None:
        self.query_one("#path", Input).value = str(event.path)
        self._read_now()

    @property
    def rows(self) -> list[dict[str, Any]] | None:
        return None if self.source is None else self.source.rows

    def _wanted(self) -> Wanted:
        return (self.query_one("#path", Input).value.strip(),
                self.query_one("#column", Input).value.strip(),
                self.query_one("#template", Input).value)

    @on(Input.Changed, "#path")
    @on(Input.Changed, "#column")
    @on(Input.Changed, "#template")
    def _typed(self) -> None:
        self.source, self.read_from, self.table = None, None, None
        self._sync_submit()
        if self._read_timer is not None:
            self._read_timer.stop()
        self._read_timer = self.set_timer(0.4, self._read_now)

    @on(Input.Submitted, "#path")
    @on(Input.Submitted, "#column")
    @on(Input.Submitted, "#template")
    def _read_now(self) -> None:
        if self._read_timer is not None:
            self._read_timer.stop()
        wanted = self._wanted()
        if not wanted[0]:
            self._file_status("")
            return
        if self.read_from == wanted:
            return
        self._file_status("[dim]reading…[/dim]")
        self.query_one("#busy").display = True
        self._read(wanted)

    @work(thread=True, exclusive=True, group="read", exit_on_error=False,
          name="reading the file")
    def _read(self, wanted: Wanted) -> None:
        path, column, template = wanted
        table: tuple[Table, Template] | None = None
        try:
            if template.strip():
                table, source = self._read_table(Path(path).expanduser(), template, column)
            else:
                source = read_input(Path(path).expanduser(), column=column or None)
        except (InputFileError, TemplateError) as exc:
            self.app.call_from_thread(self._read_failed, wanted, exc)
            return
        self.app.call_from_thread(self._read_ok, wanted, source, table)

    @staticmethod
    def _read_table(path: Path, text: str,
                    column: str) -> tuple[tuple[Table, Template], InputFile]:
        """The table and the records its rows make (every row checked, as `relay submit
        --template` checks them), as an InputFile: its rows are the preview's."""
        if column:
            raise TemplateError("a template fills the prompt from the columns: clear the "
                                "prompt column")
        template = parse_template(text)
        table = read_table(path)
        batch = table_jobs.table_batch(table, template, request=Request(model=""))
        lines = [line or 0 for line in table.lines]
        return (table, template), InputFile(batch.records, lines)

    def _read_ok(self, wanted: Wanted, source: InputFile,
                 table: tuple[Table, Template] | None = None) -> None:
        if self._wanted() != wanted:
            return
        self.query_one("#busy").display = self.submitting
        self.source, self.read_from, self.table = source, wanted, table
        rows = source.rows
        column = (f" · prompt column {escape(repr(source.prompt_column))}"
                  if source.prompt_column else "")
        if table is not None:
            shown = ", ".join(table[1].columns)
            column = f" · a table; the template fills {escape(shown)}"
        self._file_status(f"[$text-success]✓[/] {escape(Path(wanted[0]).name)}: {len(rows)} "
                          f"row{'s' if len(rows) != 1 else ''}{column}")
        self._preview(rows[:PREVIEW_ROWS])
        self.query_one("#path").remove_class("-invalid")
        self.query_one("#template").remove_class("-invalid")
        self._sync_submit()
        self._ask_estimate()

    def _read_failed(self, wanted: Wanted, error: InputFileError | TemplateError) -> None:
        if self._wanted() != wanted:
            return
        self.query_one("#busy").display = self.submitting
        if isinstance(error, TemplateError):
            self._file_status(f"[$text-error]✗ template: {escape(str(error))}[/]")
            self.query_one("#template").add_class("-invalid")
        else:
            where = f"line {error.line}: " if error.line is not None else ""
            self._file_status(f"[$text-error]✗ {escape(where + error.reason)}[/]")
            self.query_one("#path").add_class("-invalid")
        self._preview([])
        self._sync_submit()
        self._show_estimate("")

    def _preview(self, rows: list[dict[str, Any]]) -> None:
        table = self.query_one("#preview", DataTable)
        table.clear()
        for n, row in enumerate(rows, start=1):
            table.add_row(*(Text(c, no_wrap=True, overflow="ellipsis", end="")
                            for c in preview_cells(n, row)))

    # -- the estimate ----------------------------------------------------------------

    @on(Select.Changed, "#model")
    def _ask_estimate(self) -> None:
        """relayd's dry run of what Submit would send (`?dry_run=true`: nothing is
        stored), shown above the button: rows, tokens, cost, drain time, budget."""
        model = self.query_one("#model", Select).value
        if self.source is None or not isinstance(model, str):
            self._show_estimate("")
            return
        self._show_estimate("[dim]estimating…[/dim]")
        self._estimate(model, self.source, self.table, self.read_from)

    @work(thread=True, exclusive=True, group="estimate", exit_on_error=False,
          name="estimating")
    def _estimate(self, model: str, source: InputFile, table: tuple[Table, Template] | None,
                  wanted: Wanted | None) -> None:
        """Here, off the UI's thread: a table's rows are filled in for the body too."""
        try:
            answer = self.client.estimate(dry_run_body(model, source, table))
            text = "\n".join(escape(line) for line in estimate_lines(answer))
        except RelayError as exc:
            text = f"[dim]no estimate: {escape(exc.message)}[/dim]"
        except (KeyError, TypeError, ValueError) as exc:  # an answer not as documented
            text = f"[dim]no estimate: relayd's answer could not be read ({exc!r})[/dim]"
        self.app.call_from_thread(self._estimated, model, wanted, text)

    def _estimated(self, model: str, wanted: Wanted | None, markup: str) -> None:
        chosen = self.query_one("#model", Select).value
        if wanted == self.read_from and model == chosen:  # else a newer one is coming
            self._show_estimate(markup)

    def _show_estimate(self, markup: str) -> None:
        self.query_one("#estimate", Static).update(markup)

    # -- submitting ------------------------------------------------------------------

    def _sync_submit(self) -> None:
        self.query_one("#submit", Button).disabled = self.submitting or self.rows is None

    @on(Button.Pressed, "#submit")
    def action_submit(self) -> None:
        if self.submitting or self.refuses("Submitting"):  # one at a time
            return
        form = self._form()
        if form is None:
            return
        self.submitting = True
        self._sync_submit()
        for field in FIELDS.values():
            self.query_one(field).remove_class("-invalid")
        self.query_one("#busy").display = True
        self._status(f"submitting {len(self.rows or [])} rows…")
        if self.table is not None:
            self._send_table(form, self.table)
        else:
            self._send(form, self.source)

    def _form(self) -> dict[str, Any] | None:
        if self.source is None or self.read_from != self._wanted():
            self._status("[$text-error]Pick a readable .csv or .jsonl file first.[/]")
            return None
        model = self.query_one("#model", Select).value
        if not isinstance(model, str):
            self._status("[$text-error]Choose a model.[/]")
            return None
        priority = self.query_one("#priority", Input).value.strip() or "0"
        try:
            number = int(priority)
        except ValueError:
            self._refused("priority must be an integer", "priority")
            return None
        text = {k: self.query_one(f"#{k}", Input).value.strip() or None
                for k in ("name", "cron", "webhook")}
        if self.table is not None and (text["cron"] or text["webhook"] or number):
            what = "a cron" if text["cron"] else "a webhook" if text["webhook"] else "priority"
            self._refused(f"{what} is for Relay jobs: a table goes as an OpenAI batch",
                          "cron" if text["cron"] else "webhookUrl" if text["webhook"]
                          else "priority")
            return None
        return {"model": model, "requests": self.source.rows, "name": text["name"],
                "priority": number, "cron": text["cron"], "webhook_url": text["webhook"]}

    @work(thread=True, exclusive=True, group="submit", exit_on_error=False,
          name="submitting")
    def _send(self, form: dict[str, Any], source: InputFile | None) -> None:
        try:
            job = self.client.submit(**form)
        except RelayError as exc:
            self.app.call_from_thread(self._send_failed, exc, source)
            return
        except Exception:
            self.app.call_from_thread(self._send_done)
            raise
        self.app.call_from_thread(self._sent, job)

    @work(thread=True, exclusive=True, group="submit", exit_on_error=False,
          name="submitting the table")
    def _send_table(self, form: dict[str, Any], table: tuple[Table, Template]) -> None:
        source = self.source
        try:
            batch = table_jobs.table_batch(*table, request=Request(form["model"]),
                                           name=form["name"])
            job = table_jobs.submit(self.client, batch,
                                    filename=Path(table[0].path).with_suffix(".jsonl").name)
        except RelayError as exc:
            self.app.call_from_thread(self._send_failed, exc, source)
            return
        except Exception:
            self.app.call_from_thread(self._send_done)
            raise
        self.app.call_from_thread(self._sent, job)

    def _send_done(self) -> None:
        self.submitting = False
        self.query_one("#busy").display = False
        self._sync_submit()

    def _send_failed(self, exc: RelayError, source: InputFile | None) -> None:
        self._send_done()
        if exc.unreachable:
            self._status(f"[$text-error]{escape(exc.message)}[/] — nothing was stored; "
                         "try again when relayd is back")
            return
        line, field = source.locate(exc.param) if source else (None, exc.param)
        if source is None or line is None:
            self._refused(f"relayd refused the job ({exc.status}): {exc.message}", exc.param)
            return
        self._refused(f"relayd refused the job ({exc.status}): line {line}: "
                      f"{source.in_file_terms(exc.message)}", field, invalid="requests")

    def _refused(self, message: str, param: str | None, *,
                 invalid: str | None = None) -> None:
        """Show relayd's refusal and mark its field (`invalid`: the form field's param,
        when it is not `param`, as for a refused row: the file)."""
        field = f" [b](field: {escape(param)})[/b]" if param else ""
        self._status(f"[$text-error]{escape(message)}[/]{field}")
        marked = invalid or param
        if marked in FIELDS:
            self.query_one(FIELDS[marked]).add_class("-invalid")

    def _sent(self, job: dict[str, Any]) -> None:
        # `submitting` stays set: the screen closes, a second press reaches nothing
        total = job.get("total", (job.get("request_counts") or {}).get(
            "total", len(self.rows or [])))
        self.notify(f"{total} rows as job {job['id']} ({job.get('status')})",
                    title="Submitted", timeout=8)
        self.dismiss(job)

    def _status(self, markup: str) -> None:
        self.query_one("#submit-status", Static).update(markup)

    def _file_status(self, markup: str) -> None:
        self.query_one("#file-status", Static).update(markup)


def dry_run_body(model: str, source: InputFile,
                 table: tuple[Table, Template] | None) -> dict[str, Any]:
    """The body Submit would send: a Relay job, or a table's OpenAI batch inline."""
    if table is None:
        return {"model": model, "requests": source.rows}
    batch = table_jobs.table_batch(*table, request=Request(model))
    return inline_batch(batch.records, endpoint=CHAT)
