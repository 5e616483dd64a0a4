"""Nodes sharing one database: who is alive, how limits are shared, how many rows a
node leases at a time. Pure rules; `actors/membership.py` applies them.

A node is alive while its heartbeat is younger than `lease_s`; its leases on rows
live exactly as long. A model's cluster-wide limits are split between the live
nodes by rank (their ids in order), so the shares add up to the limit: with 3 nodes
and `max_concurrency = 8` the shares are 3, 3 and 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

LEASE_ROWS = 256  # the most rows one lease takes
HEALTHY, LATE, LOST, STOPPING = "healthy", "late", "lost", "stopping"


@dataclass(frozen=True)
class NodeRecord:
    id: str
    address: str
    version: str
    started_at: float
    heartbeat_at: float
    stopping: bool = False
    jobs: tuple[int, ...] = ()  # seqs of the jobs it runs

    def alive(self, now: float, lease_s: float) -> bool:
        return now - self.heartbeat_at < lease_s

    def health(self, now: float, lease_s: float) -> str:
        """`healthy` within two heartbeats, `late` until its leases lapse, then `lost`;
        `stopping` while it drains after SIGTERM."""
        if not self.alive(now, lease_s):
            return LOST
        if self.stopping:
            return STOPPING
        return HEALTHY if now - self.heartbeat_at < 2 * lease_s / 3 else LATE


class Share(Enum):
    """Where a job stands for one node, once it has given back its leases on it."""

    DONE = "done"  # no pending row is left: the job can end
    HELD = "held"  # another live node runs it (holds rows of it, or lists it)
    OPEN = "open"  # pending rows no live node holds: any node may lease them


@dataclass(frozen=True)
class Part:
    """This node's place among the live nodes: `rank` of `nodes` (0-based)."""

    nodes: int = 1
    rank: int = 0

    def of(self, limit: int) -> int:
        """This node's share of a cluster-wide `limit`: the shares of all nodes add up
        to it, and none is below 1 (a limit smaller than the node count is exceeded
        rather than leaving a node's rows waiting forever; the docs say so)."""
        base, extra = divmod(limit, self.nodes)
        return max(1, base + (1 if self.rank < extra else 0))

    def of_rate(self, limit: int | None) -> int | None:
        return None if limit is None else self.of(limit)


def alive_ids(nodes: Iterable[NodeRecord], now: float, lease_s: float, *,
              but: str | None = None) -> list[str]:
    """The ids of the `nodes` alive at `now`, `but` one."""
    return [n.id for n in nodes if n.id != but and n.alive(now, lease_s)]


def beaten_since(others: Iterable[NodeRecord], joined_at: float) -> bool:
    """Whether each of the `others` (the live nodes a node joined) has beaten since
    `joined_at`, the moment the joining node's registration was stored. Each beat is
    written after its node has read the live nodes and taken its share, so then every
    share counts the new node, and theirs and its own add up to each limit."""
    return all(n.heartbeat_at >= joined_at for n in others)


def part_of(node_id: str, live: Sequence[str]) -> Part:
    """`node_id`'s part among the `live` node ids (itself counted even if missing)."""
    ids = sorted(set(live) | {node_id})
    return Part(nodes=len(ids), rank=ids.index(node_id))


def lease_size(concurrency: int) -> int:
    """Rows a node leases at once for a job it runs with `concurrency` requests in
    flight: twice what it hands its worker (so a lease lasts a few round trips), at
    most `LEASE_ROWS`. Small leases keep a job's last rows spread over the nodes."""
    return max(16, min(LEASE_ROWS, 4 * concurrency))
