"""This node among the nodes sharing the database.

`Membership` registers the node, beats on its own thread every `heartbeat_s`
(which renews every lease the node holds: a lease lives while its node's heartbeat
is younger than `lease_s`), tells the router the node's part of every model's
cluster-wide limits whenever the live nodes change, and leaves on a graceful stop
(its leases go back at once). The scheduler tells it which jobs run here; the beat
writes them, for `GET /v1/nodes` and for the other nodes to know a job is in hand.

A node that joins others tells them (they beat at once, on the bus) and dispatches
once each has beaten since: a beat is written after its node has taken its smaller
share of each limit. On SQLite there is
one node: at start it takes back every lease an earlier process left (that process is
gone: the daemon holds the database's OS lock before it gets here, store/owner.py). On
PostgreSQL, a node registered at this node's address is an earlier process of it
(two cannot listen on one address): its leases go back at start, with no wait for
them to lapse; each node's address must therefore be its own.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Collection
from typing import Any

from daemon.domain.cluster import NodeRecord, Part, alive_ids, beaten_since, part_of
from daemon.domain.jobs import RowWork
from daemon.store.faults import log_failure
from daemon.store.interface import Store

log = logging.getLogger("relay.membership")

FORGET_AFTER_S = 86_400.0  # a node silent this long is dropped from the node table


class Node:
    """What the scheduler and supervisors need of their node: its id, which nodes
    count as alive, and where to say which jobs run here. Standing alone (tests, one
    process), it is the only node, never beats and always leads."""

    def __init__(self, node_id: str = "local", *, lease_s: float = 15.0) -> None:
        self.id = node_id
        self.lease_s = lease_s
        self.jobs: frozenset[int] = frozenset()
        self.settled: frozenset[int] = frozenset()  # jobs its supervisors are done with
        self.part = Part()
        self.shared = False  # other processes may use the database (PostgreSQL)
        self.lock = threading.Lock()  # `jobs` and `settled`: scheduler and supervisors
        # Moves on whenever the node was silent past its lease (frozen, or cut off from
        # the database): rows leased in an earlier epoch may be another node's now.
        self.epoch = 0

    def ready(self, now: float) -> bool:
        """Whether this node may dispatch (a node joining others waits: `Membership`)."""
        return True

    @property
    def leads(self) -> bool:
        """The first of the live nodes does the cluster's chores no node is on: ending
        a job nobody holds (left, expired), so several nodes do not write its result
        files at once."""
        return self.part.rank == 0

    def alive_after(self, now: float) -> float:
        """A node whose heartbeat is older than this is lost, and so are its leases."""
        return now - self.lease_s

    def running(self, jobs: Collection[int]) -> None:
        """The scheduler's jobs here, but those a supervisor left (until the scheduler
        has heard, after which a job may be joined again)."""
        with self.lock:
            current = frozenset(jobs)
            self.settled &= current
            self.jobs = current - self.settled

    def settle(self, seq: int) -> None:
        """A supervisor is leaving a job: the heartbeat must not list it again, whatever
        the scheduler has not heard yet."""
        with self.lock:
            self.settled = self.settled | {seq}
            self.jobs = self.jobs - {seq}

    def unsettle(self, seq: int) -> None:
        """It stays after all (it ends the job): listed until the scheduler hears."""
        with self.lock:
            self.settled = self.settled - {seq}
            self.jobs = self.jobs | {seq}

    def left(self, seq: int) -> bool:
        """Whether a supervisor here left `seq` (settled it without ending it) and the
        scheduler has not heard yet."""
        with self.lock:
            return seq in self.settled

    def holds_leases(self, now: float) -> bool:
        """Whether this node's leases surely still hold (alone: always)."""
        return True

    def holds(self, work: RowWork) -> bool:
        """Whether this node surely still holds `work`'s lease (fencing: asked before
        each call of the row): leased in this epoch, and the leases have not lapsed."""
        return work.epoch == self.epoch and self.holds_leases(self.now())

    def now(self) -> float:
        return time.time()


class Membership(Node):
    def __init__(self, repo: Store, *, address: str, version: str, lease_s: float,
                 heartbeat_s: float, clock: Callable[[], float], shared: bool,
                 on_part: Callable[[Part], None] = lambda part: None) -> None:
        super().__init__(f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}", lease_s=lease_s)
        self.repo = repo
        self.address = address
        self.version = version
        self.heartbeat_s = heartbeat_s
        self.clock = clock
        self.shared = shared
        self.on_part = on_part
        self.started_at = clock()
        self.beat_at = self.started_at  # the last heartbeat the store took
        self.lapsed_at: float | None = None  # `beat_at` when the last epoch began
        self.stopping = False
        self.joining_at: float | None = None  # joined live nodes: waits for their beats
        self.announce: Callable[[dict[str, Any]], None] = lambda message: None
        self.beating = threading.Lock()  # one beat at a time (heartbeat and bus threads)
        self.stopped = threading.Event()
        self.wake = threading.Event()  # beat now
        self.thread = threading.Thread(target=self._run, name="relay-heartbeat", daemon=True)

    def start(self) -> None:
        now = self.clock()
        self._register(now)
        if not self.shared:
            released = self.repo.sole_node(self.id)
            if released:
                log.info("took back %d row leases an earlier process held", released)
        self._replace_earlier()
        others = self._others(now)
        if others:  # they learn of this node at their next beat: wait for that
            # Read after the registration is stored: a beat dated from here on is
            # written by a node that has read the node list with this one in it.
            self.joining_at = self.clock()
            self.announce({"kind": "joined"})  # so they beat at once
        self._apply([n.id for n in others])
        self.thread.start()

    def beat(self, now: float) -> None:
        """One heartbeat: follow the live nodes, renew, re-register if forgotten. Never
        fails (a failure is logged: the leases lapse `lease_s` after the last beat) and
        does nothing once the node has left. The live nodes are read and this node's
        shares applied before the beat is written: a joining node that sees this beat
        (dated after its own registration) knows this node has shrunk for it."""
        with self.beating:
            if self.stopped.is_set():
                return
            if not self.holds_leases(now) and self.lapsed_at != self.beat_at:
                self._lapsed(f"silent for {now - self.beat_at:.1f} s, past its lease")
            try:
                nodes = self.repo.nodes()
                self._apply(alive_ids(nodes, now, self.lease_s))
                if not self.repo.beat(self.id, now=now, jobs=self.jobs,
                                      stopping=self.stopping):
                    log.warning("node %s was forgotten by the cluster; registering again",
                                self.id)
                    self._lapsed("forgotten by the cluster")
                    self._register(now)
                self.beat_at = now
                if any(n.heartbeat_at < now - FORGET_AFTER_S for n in nodes):
                    self.repo.forget_nodes(before=now - FORGET_AFTER_S, keep=self.id)
            except Exception as exc:
                log_failure(log, f"heartbeat of node {self.id} failed; its leases lapse "
                            f"{self.lease_s:g} s after the last one", exc)

    def holds_leases(self, now: float) -> bool:
        """Whether this node's leases surely still hold: its last heartbeat is younger
        than `lease_s` less half a heartbeat (one failed beat is no cause). After a
        longer silence (the database out of reach) other nodes may have taken its
        rows, so it starts none of those it had leased. Alone on the database: always."""
        return not self.shared or now - self.beat_at < self.lease_s - self.heartbeat_s / 2

    def now(self) -> float:
        return self.clock()

    def _lapsed(self, why: str) -> None:
        """Other nodes may have taken over this node's rows: a new lease epoch, so none
        leased before starts or goes on here (its supervisors drop them and lease
        again; the store refuses what they would still write)."""
        self.epoch += 1
        self.lapsed_at = self.beat_at  # one new epoch per silence, however long
        log.warning("node %s was %s: the rows it leased before may run elsewhere now; "
                    "it drops them and leases again", self.id, why)

    def ready(self, now: float) -> bool:
        """A node that joined live nodes dispatches once each of them has beaten since
        (and so taken its smaller share of every limit). A node that does not beat
        holds it back until it is lost (`lease_s`): until then it may use its old share,
        and both at once would exceed the cluster's limits."""
        if self.joining_at is None:
            return True
        if not beaten_since(self._others(now), self.joining_at):
            return False
        self.joining_at = None
        return True

    def listening(self, address: str) -> None:
        """The listener's port is known (it was 0 in the config)."""
        self.address = address
        self._register(self.clock())
        self._replace_earlier()

    def drain(self) -> None:
        """SIGTERM: the next beat, at once on the heartbeat thread, says `stopping`."""
        self.stopping = True
        self.wake.set()

    def leave(self) -> None:
        """Stop beating and give every lease back at once."""
        self.stopped.set()
        self.wake.set()
        if self.thread.is_alive():
            self.thread.join(timeout=2)
        with self.beating:  # a beat under way (the bus's) ends first
            self.jobs = frozenset()
            try:
                released = self.repo.leave(self.id)
            except Exception as exc:
                log_failure(log, f"node {self.id} could not give its leases back; they "
                            f"lapse in {self.lease_s:g} s", exc)
                return
        if released:
            log.info("gave back %d row leases", released)

    def _others(self, now: float) -> list[NodeRecord]:
        """The other live nodes."""
        return [n for n in self.repo.nodes() if n.id != self.id and n.alive(now, self.lease_s)]

    def _replace_earlier(self) -> None:
        """Among nodes, one registered at this node's address is an earlier process of
        it: its leases go back now, with no wait for them to lapse."""
        if (self.shared and not self.address.endswith(":0")
                and self.repo.forget_nodes(keep=self.id, address=self.address)):
            log.info("an earlier process at %s is gone: its rows are free at once",
                     self.address)

    def _register(self, now: float) -> None:
        self.beat_at = now
        self.repo.register_node(NodeRecord(
            id=self.id, address=self.address, version=self.version,
            started_at=self.started_at,
            heartbeat_at=now, stopping=self.stopping, jobs=tuple(sorted(self.jobs))))

    def _apply(self, live: list[str]) -> None:
        part = part_of(self.id, live)
        if part != self.part:
            log.info("node %s is %d of %d live nodes: its share of each model's limits "
                     "follows", self.id, part.rank + 1, part.nodes)
            self.part = part
            self.on_part(part)

    def _run(self) -> None:
        while not self.stopped.is_set():
            self.wake.wait(self.heartbeat_s)
            self.wake.clear()
            self.beat(self.clock())  # never raises: the thread lives as long as the node
