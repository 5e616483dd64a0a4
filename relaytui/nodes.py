"""The relayd processes sharing one database, read from `GET /v1/nodes`: each one's
address, health, version, heartbeat age and the workspace's jobs it runs. No Textual
here: the TUI's nodes view (`relaytui/screens/nodes.py`) and `relay nodes` both read
the answer with `NodeList` and say ages with its words; `NodesWatch` asks in a thread."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from relaytui.client import RelayError
from relaytui.models import age_text, parse_time
from relaytui.watch import Watch

EVERY_S = 3.0  # a heartbeat comes every lease_s / 3 (5 s by default)
HEALTHS = ("healthy", "late", "stopping", "lost")  # in the summary's order


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
    """One node, as the node that answered sees it."""

    id: str
    address: str
    version: str
    health: str
    silent_s: float | None  # since its last heartbeat, by relayd's clock
    up_s: float | None  # since it started, by relayd's clock
    this: bool  # the node that answered
    jobs: tuple[NodeJob, ...] = ()
    started_at: str | None = None  # as relayd wrote it (ISO 8601, UTC)

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> NodeView:
        silent = answer.get("seconds_since_heartbeat")
        silent = float(silent) if isinstance(silent, int | float) else None
        jobs = _list(answer.get("jobs"))
        started = answer.get("started_at")
        return cls(str(answer.get("id") or "?"), str(answer.get("address") or ""),
                   str(answer.get("version") or ""), str(answer.get("health") or "?"),
                   silent, _up(answer, silent), answer.get("self") is True,
                   tuple(NodeJob.from_answer(j) for j in jobs if isinstance(j, dict)),
                   started if isinstance(started, str) else None)

    @property
    def heartbeat_text(self) -> str:
        return heartbeat_text(self.silent_s)

    @property
    def jobs_text(self) -> str:
        return ", ".join(job.name or job.id for job in self.jobs) or "—"


def heartbeat_text(silent_s: float | None, *, unknown: str = "—") -> str:
    """`1.2s ago` within a minute, then `12m ago`; `unknown` when relayd did not say."""
    if silent_s is None:
        return unknown
    if silent_s < 60:
        return f"{silent_s:.1f}s ago"
    return f"{age_text(silent_s)} ago"


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
