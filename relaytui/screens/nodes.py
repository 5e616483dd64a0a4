"""The nodes view (`n`): the relayd processes sharing one database, asked every few
seconds through `NodesWatch`, one a row (address, health, version, heartbeat age, the
workspace's jobs it runs), the highlighted node's jobs in full below. The answer is
read, and its words made, in `relaytui/nodes.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.markup import escape
from textual.message import Message
from textual.widgets import DataTable, LoadingIndicator, Static

from relaytui.api import RelayApi
from relaytui.models import age_text
from relaytui.nodes import EVERY_S, NodeList, NodesWatch, NodeView
from relaytui.screens.base import RelayScreen
from relaytui.widgets.colours import theme_style
from relaytui.widgets.footer import RelayFooter
from relaytui.widgets.hanging import HangingText

COLUMNS = (("node", "Node", 30), ("address", "Address", 26), ("health", "Health", 11),
           ("version", "Version", 9), ("heartbeat", "Heartbeat", 10), ("up", "Up", 5),
           ("jobs", "Your jobs", 48))
# health -> (theme colour, mark)
LOOKS = {"healthy": ("text-success", "●"), "late": ("text-warning", "◌"),
         "stopping": ("text-accent", "◐"), "lost": ("text-error", "✗")}

class NodesScreen(RelayScreen):
    """Every node relayd knows, refreshed every `every` seconds; the highlighted node's
    jobs of this workspace below."""

    AUTO_FOCUS = "#nodes"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", tooltip="Back to where you were"),
        Binding("r", "refresh", "Refresh", tooltip="Ask relayd for the nodes now"),
    ]

    @dataclass
    class Listed(Message):
        nodes: NodeList

    def __init__(self, client: RelayApi, *, every: float = EVERY_S) -> None:
        super().__init__()
        self.nodes_watch = NodesWatch(
            client, lambda nodes: self.post_message(self.Listed(nodes)), every=every)
        self.listed = NodeList()

    def compose(self) -> ComposeResult:
        every = self.nodes_watch.every
        yield Static("[b]Nodes[/b] — the relayd processes sharing the database  "
                     f"[dim]asked every {every:g} s · health as the answering node sees "
                     "it[/dim]", classes="screen-title")
        yield LoadingIndicator()
        yield DataTable(id="nodes", cursor_type="row", zebra_stripes=True)
        yield HangingText(id="node-jobs")
        yield Static("", id="nodes-summary", classes="summary")
        yield RelayFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label, width in COLUMNS:
            table.add_column(label, key=key, width=width)
        table.display = False
        self.query_one("#node-jobs").display = False
        self.run_worker(self.nodes_watch.run, thread=True, name="node list",
                        group="nodes", exit_on_error=False)

    def on_unmount(self) -> None:
        self.nodes_watch.stop()

    def action_refresh(self) -> None:
        self.nodes_watch.ask_now()

    @on(Listed)
    def _listed(self, message: Listed) -> None:
        """A list fills the table; a refusal is said below it, the last list kept."""
        self.query_one(LoadingIndicator).display = False
        if message.nodes.problem is None:
            self._fill(message.nodes)
        self.query_one("#nodes-summary", Static).update(self._summary(message.nodes))

    def _fill(self, listed: NodeList) -> None:
        self.listed = listed
        table = self.query_one(DataTable)
        keep = self.highlighted_id()
        table.clear()
        table.display = True
        for node in listed.nodes:
            table.add_row(*self._cells(node), key=node.id)
        if keep is not None and listed.node(keep) is not None:
            table.move_cursor(row=table.get_row_index(keep))
        self._show_jobs()

    def _cells(self, node: NodeView) -> list[Text]:
        colour, mark = LOOKS.get(node.health, ("foreground", "?"))
        name = Text(node.id, no_wrap=True, overflow="ellipsis", end="")
        if node.this:
            name.append(" (this)", style="bold")
        return [name, Text(node.address, no_wrap=True, overflow="ellipsis", end=""),
                Text(f"{mark} {node.health}", style=theme_style(self.app, colour)),
                Text(node.version), Text(node.heartbeat_text, justify="right"),
                Text(age_text(node.up_s), justify="right"),
                Text(node.jobs_text, no_wrap=True, overflow="ellipsis", end="")]

    def _summary(self, answer: NodeList) -> str:
        if answer.problem is None:
            return escape(answer.summary()) + "  [dim]r asks now, escape goes back[/dim]"
        before = " (the list above is the last relayd gave)" if self.listed.nodes else ""
        return f"[$text-error]{escape(answer.problem)}{before}[/]"

    def highlighted_id(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    @on(DataTable.RowHighlighted, "#nodes")
    def _show_jobs(self) -> None:
        node = self.listed.node(self.highlighted_id())
        pane = self.query_one("#node-jobs", HangingText)
        pane.display = node is not None
        pane.show_lines([] if node is None else jobs_text(node).split("\n"))


def jobs_text(node: NodeView) -> str:
    """The node's jobs of this workspace, one a line: status, dialect, id and name (the
    name last: where the pane is narrow, it is what wraps)."""
    title = f"[b]Your jobs on {escape(node.id)}[/b]"
    if not node.jobs:
        return f"{title}\n[dim]none: it runs no job of this workspace[/dim]"
    lines = [f"  {escape(job.status):<11} [dim]{escape(job.dialect):<9} {escape(job.id)}[/dim]"
             f"  {escape(job.name or '(no name)')}" for job in node.jobs]
    return "\n".join([title, *lines])
