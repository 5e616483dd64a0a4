"""One row of a job in full (`GET /v1/batches/{id}/rows/{custom_id}`): its status,
model, attempts and error; its request (secrets shown as `***`); for a tool-calling
record the transcript round by round; for a workflow record where it stands, its
totals and the callback's answers step by step; the final answer (a workflow's
output); and every attempt."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.widgets import LoadingIndicator, Static

from relaytui.api import RelayApi
from relaytui.client import RelayError
from relaytui.models import JobView
from relaytui.repairs import repair_summary, repairs_text
from relaytui.rows import attempt_lines, attempts_text, error_text, summary_text, tool_summary
from relaytui.screens.base import RelayScreen
from relaytui.widgets.attempts import AttemptTable
from relaytui.widgets.footer import RelayFooter
from relaytui.widgets.transcript import RowTranscript
from relaytui.workflows import facts_part, is_workflow

# A row's own statuses (not a job's): how each is shown.
STATUSES = {"completed": ("$text-success", "✓ completed"), "failed": ("$text-error", "✗ failed"),
            "pending": ("$text-warning", "◌ pending")}


def facts_text(detail: dict[str, Any]) -> str:
    """The row's line of facts: status, model, attempts, tool rounds (a workflow's
    steps and requests), dead letter."""
    status = str(detail.get("status") or "?")
    colour, label = STATUSES.get(status, ("$foreground", status))
    attempts = detail.get("attempts") or 0
    workflow = is_workflow(detail)
    parts = [f"[b {colour}]{escape(label)}[/]",
             f"model [b]{escape(str(detail.get('model') or '—'))}[/b]"]
    if attempts or not workflow:  # a workflow's requests are not attempts of the row
        parts.append(escape(attempts_text(detail)))
    summary = tool_summary({"response": {"body": detail.get("response")}})
    if workflow:
        parts.append(escape(facts_part(detail)))
    elif summary is not None:
        parts.append(escape(summary_text(summary)))
    elif (repairs := repair_summary({"response": {"body": detail.get("response")}})):
        parts.append(escape(repairs_text(repairs)))
    elif detail.get("tool_rounds"):
        parts.append(f"{detail['tool_rounds']} tool round"
                     f"{'s' if detail['tool_rounds'] != 1 else ''}")
    if detail.get("dead_letter"):
        parts.append("[$text-warning]dead-lettered[/]")
    line = " · ".join(parts)
    if error := error_text(detail):
        line += f"\n[$text-error]{escape(error)}[/]"
    return line


class RowDetailScreen(RelayScreen):
    AUTO_FOCUS = "#row-scroll"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", tooltip="Close the row, back to the list"),
    ]

    def __init__(self, client: RelayApi, job: JobView, custom_id: str) -> None:
        super().__init__()
        self.client, self.job, self.custom_id = client, job, custom_id
        self.detail: dict[str, Any] | None = None
        self.problem: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(f"[b]Row[/b] {escape(self.custom_id)} — "
                     f"{escape(self.job.name or self.job.id)}  [dim]{self.job.id}[/dim]",
                     classes="screen-title")
        yield LoadingIndicator()
        yield Static("", id="row-facts")
        with VerticalScroll(id="row-scroll"):
            yield RowTranscript(id="transcript")
        yield AttemptTable(id="row-attempts")
        yield RelayFooter()

    def on_mount(self) -> None:
        self.query_one("#row-scroll").border_title = "Conversation"
        self.query_one(AttemptTable).border_title = "Attempts"
        self._shown(False)
        self._load()

    def _shown(self, loaded: bool) -> None:
        self.query_one(LoadingIndicator).display = not loaded
        for part in ("#row-scroll", "#row-attempts"):
            self.query_one(part).display = loaded

    @work(thread=True, exclusive=True, group="load", exit_on_error=False,
          name="loading the row")
    def _load(self) -> None:
        try:
            detail = self.client.row(self.job.id, self.custom_id)
        except RelayError as exc:
            self.app.call_from_thread(self._failed, exc.message)
            return
        self.app.call_from_thread(self._loaded, detail)

    def _loaded(self, detail: dict[str, Any]) -> None:
        self.detail, self.problem = detail, None
        self.query_one("#row-facts", Static).update(facts_text(detail))
        self.query_one(RowTranscript).show(detail)
        attempts = attempt_lines(detail)
        self.query_one(AttemptTable).show(detail)
        self._shown(True)
        if is_workflow(detail):
            self.query_one("#row-scroll").border_title = "Workflow"
            # a record that tried nothing on its own gets no empty table
            self.query_one(AttemptTable).display = bool(attempts)
        self.query_one("#row-scroll").focus()

    def _failed(self, message: str) -> None:
        self.problem = message
        self.query_one(LoadingIndicator).display = False
        self.query_one("#row-facts", Static).update(f"[$text-error]{escape(message)}[/]")
