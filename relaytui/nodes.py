"""The nodes view (`n`): the relayd processes sharing one database, from `GET /v1/nodes`
asked every few seconds: each one's address, health, version, heartbeat age and the
workspace's jobs it runs, the highlighted node's jobs in full below.

`NodeList` (the answer read, and its words) and `NodesWatch` (the asking, in a thread)
are plain; `NodesScreen` shows them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.markup import escape
from textual.message import Message
from textual.widgets import DataTable, LoadingIndicator, Static

from relaytui.client import RelayError
from relaytui.models import age_text, parse_time
from relaytui.screens.base import RelayScreen
from relaytui.watch import Watch
from relaytui.widgets.colours import theme_style
from relaytui.widgets.footer import RelayFooter

EVERY_S = 3.0  # a heartbeat comes every lease_s / 3 (5 s by default)
HEALTHS = ("healthy", "late", "stopping", "lost")  # in the summary's order
# health -> (theme colour, mark)
LOOKS = {"healthy": ("text-success", "●"), "late": ("text-warning", "◌"),
         "stopping": ("text-accent", "◐"), "lost": ("text-error", "✗")}


@dataclass(frozen=True)
class NodeJob:
    """One of the workspace's jobs a node runs; `status` is relayd's internal name."""

    id: str
    name: str
    status: str
    dialect: str

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> NodeJob:
        return cls(str(answer.get("id") or "?"), str(answer.get("name") or ""),
                   str(answer.get("status") or "?"), str(answer.get("dialect") or "relay"))


@dataclass(frozen=True)
class NodeView:
    id: str
    address: str
    version: str
    health: str
    silent_s: float | None  # since its last heartbeat, by relayd's clock
    up_s: float | None  # since it started, by relayd's clock
    this: bool  # the node that answered
    jobs: tuple[NodeJob, ...] = ()

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> NodeView:
        silent = answer.get("seconds_since_heartbeat")
        silent = float(silent) if isinstance(silent, int | float) else None
        jobs = _list(answer.get("jobs"))
        return cls(str(answer.get("id") or "?"), str(answer.get("address") or ""),
                   str(answer.get("version") or ""), str(answer.get("health") or "?"),
                   silent, _up(answer, silent), answer.get("self") is True,
                   tuple(NodeJob.from_answer(j) for j in jobs if isinstance(j, dict)))

    @property
    def heartbeat_text(self) -> str:
        """`1.2s ago` within a minute, then `12m ago`."""
        if self.silent_s is None:
            return "—"
        if self.silent_s < 60:
            return f"{self.silent_s:.1f}s ago"
        return f"{age_text(self.silent_s)} ago"

    @property
    def jobs_text(self) -> str:
        return ", ".join(job.name or job.id for job in self.jobs) or "—"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _up(answer: dict[str, Any], silent: float | None) -> float | None:
    """How long the node has run, all by relayd's clock (the TUI's may differ): its last
    heartbeat plus the time since, less its start."""
    beat, started = parse_time(answer.get("heartbeat_at")), parse_time(answer.get("started_at"))
    if beat is None or started is None or silent is None:
        return None
    return beat + silent - started


@dataclass(frozen=True)
class NodeList:
    """One answer of `GET /v1/nodes`, oldest node first; or why there is none."""

    nodes: tuple[NodeView, ...] = ()
    problem: str | None = None

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> NodeList:
        return cls(tuple(NodeView.from_answer(n) for n in _list(answer.get("data"))
                         if isinstance(n, dict)))

    @classmethod
    def refused(cls, exc: RelayError) -> NodeList:
        """relayd refused (a 404: an older relayd, or no Batch API access) or is down."""
        return cls(problem=f"No node list: {exc.message}")

    def node(self, node_id: str | None) -> NodeView | None:
        return next((n for n in self.nodes if n.id == node_id), None)

    def summary(self) -> str:
        """`3 nodes: 2 healthy, 1 lost · 4 of your jobs run on 2 of them`."""
        if self.problem is not None:
            return self.problem
        count = Counter(n.health for n in self.nodes)
        order = [h for h in HEALTHS if h in count] + sorted(set(count) - set(HEALTHS))
        healths = ", ".join(f"{count[h]} {h}" for h in order)
        jobs = sum(len(n.jobs) for n in self.nodes)
        running = sum(1 for n in self.nodes if n.jobs)
        nodes = f"{len(self.nodes)} node{'s' if len(self.nodes) != 1 else ''}"
        return f"{nodes}: {healths} · {jobs} of your jobs run on {running} of them"


class Source(Protocol):
    """What the watch needs of `RelayClient`."""

    def nodes(self) -> dict[str, Any]: ...


class NodesWatch(Watch[NodeList]):
    """`GET /v1/nodes` every `every` seconds; a refusal is posted too (it is shown)."""

    def __init__(self, client: Source, post: Callable[[NodeList], object], *,
                 every: float = EVERY_S) -> None:
        super().__init__(self._ask, post, every=every)
        self.client = client

    def _ask(self) -> NodeList:
        try:
            return NodeList.from_answer(self.client.nodes())
        except RelayError as exc:
            return NodeList.refused(exc)


# -- the screen ---------------------------------------------------------------------

COLUMNS = (("node", "Node", 30), ("address", "Address", 26), ("health", "Health", 11),
           ("version", "Version", 9), ("heartbeat", "Heartbeat", 10), ("up", "Up", 5),
           ("jobs", "Your jobs", 48))


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

    def __init__(self, client: Any, *, every: float = EVERY_S) -> None:
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
        yield Static("", id="node-jobs")
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
        pane = self.query_one("#node-jobs", Static)
        pane.display = node is not None
        pane.update("" if node is None else jobs_text(node))


def jobs_text(node: NodeView) -> str:
    """The node's jobs of this workspace, one a line: status, name, id and dialect."""
    title = f"[b]Your jobs on {escape(node.id)}[/b]"
    if not node.jobs:
        return f"{title}\n[dim]none: it runs no job of this workspace[/dim]"
    lines = [f"  {escape(job.status):<11} {escape(job.name or '(no name)')}  "
             f"[dim]{escape(job.id)} · {escape(job.dialect)}[/dim]" for job in node.jobs]
    return "\n".join([title, *lines])
