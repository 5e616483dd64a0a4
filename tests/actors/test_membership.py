"""A node among others: registering, the wait before a joining node dispatches, its
part of the limits as nodes come and go, and leaving."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from daemon.actors.membership import Membership, Node
from daemon.domain.cluster import NodeRecord, Part
from daemon.domain.jobs import RowWork
from daemon.store import open_store
from daemon.store.interface import Store

NOW = 1_700_000_000.0


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Store]:
    store = open_store(f"sqlite:///{tmp_path / 'relay.db'}")
    yield store
    store.close()


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def member(repo: Store, clock: Clock, parts: list[Part], port: int, *,
           heartbeat_s: float = 1_000.0) -> Membership:
    # `shared`, as on PostgreSQL; the heartbeat thread waits longer than any test
    return Membership(repo, address=f"http://127.0.0.1:{port}", version="1", lease_s=15.0,
                      heartbeat_s=heartbeat_s, clock=clock, shared=True,
                      on_part=parts.append)


def test_nodes_share_the_limits_as_they_come_and_go(repo: Store) -> None:
    clock = Clock()
    first_parts: list[Part] = []
    second_parts: list[Part] = []
    first = member(repo, clock, first_parts, 1)
    first.start()
    assert first.ready(NOW)  # alone: it dispatches at once
    second = member(repo, clock, second_parts, 2)
    announced: list[dict[str, str]] = []
    second.announce = announced.append
    clock.now = NOW + 0.5
    second.start()
    assert announced == [{"kind": "joined"}]
    assert not second.ready(NOW + 1)  # the first has not taken its smaller share yet
    assert second_parts[-1].nodes == 2
    first.beat(NOW + 1)  # as told on the bus
    assert first_parts[-1].nodes == 2
    assert second.ready(NOW + 1)
    assert {first_parts[-1].rank, second_parts[-1].rank} == {0, 1}

    second.leave()
    first.beat(NOW + 2)
    assert first_parts[-1] == Part(nodes=1, rank=0)
    clock.now = NOW + 100  # the first's last beat is now old, but it is itself
    first.beat(NOW + 100)
    assert [n.id for n in repo.nodes()] == [first.id]
    first.leave()
    assert repo.nodes() == []


def test_a_joining_node_waits_for_a_silent_node_until_it_is_lost(repo: Store) -> None:
    """Under load a heartbeat comes late: the silent node still dispatches on its old
    share, so the joining one must not take its own beside it (they would add up to
    more than the limit), however many heartbeats pass, until the silent one is lost."""
    clock = Clock()
    silent = member(repo, clock, [], 1, heartbeat_s=2.0)
    silent.start()
    joining = member(repo, clock, [], 2, heartbeat_s=2.0)
    clock.now = NOW + 0.5
    joining.start()
    assert not joining.ready(NOW + 10)  # five heartbeats: the other has not beaten since
    assert not joining.ready(NOW + 14.9)  # still alive (lease_s 15)
    assert joining.ready(NOW + 15)  # lost: its leases and its share are void
    silent.stopped.set()
    joining.stopped.set()


def test_a_beat_dated_before_the_joining_node_was_stored_does_not_count(repo: Store) -> None:
    """As found in the cluster's limit test (7 calls at once against 6): a node dated
    its registration just after a joining node's clock read, but read the node list
    before the joining node's row was stored. It kept the larger share of two nodes
    while the joining node counted its beat as one since it joined and dispatched."""
    class Stepping(Clock):  # the joining node's clock moves on between its reads
        def __call__(self) -> float:
            self.now += 0.5
            return self.now - 0.5

    repo.register_node(NodeRecord(id="peer", address="http://127.0.0.1:9", version="1",
                                  started_at=NOW + 0.25, heartbeat_at=NOW + 0.25))
    joining = member(repo, Stepping(), [], 2)
    joining.start()  # reads NOW, registers, and then reads the clock again
    assert not joining.ready(NOW + 1)  # the peer's row predates this one's in the store
    repo.beat("peer", now=NOW + 1, jobs=())
    assert joining.ready(NOW + 1)
    joining.stopped.set()


def test_a_beat_is_written_after_the_share_is_taken(repo: Store) -> None:
    """A joining node trusts a beat dated after its registration: the node that wrote
    it had already shrunk for it (its share taken before the beat was stored)."""
    clock = Clock()
    beats_when_shrunk: list[float] = []
    first = member(repo, clock, [], 1)
    first.start()
    first.on_part = lambda part: beats_when_shrunk.append(
        next(n.heartbeat_at for n in repo.nodes() if n.id == first.id))
    clock.now = NOW + 0.5
    joining = member(repo, clock, [], 2)
    joining.start()
    assert not joining.ready(NOW + 0.5)

    first.beat(NOW + 1)

    assert beats_when_shrunk == [NOW]  # shrunk while its stored beat was the old one
    assert joining.ready(NOW + 1)
    first.stopped.set()
    joining.stopped.set()


def test_a_lost_node_stops_counting(repo: Store) -> None:
    clock = Clock()
    parts: list[Part] = []
    lost = member(repo, clock, [], 1)
    lost.start()
    survivor = member(repo, clock, parts, 2)
    survivor.start()
    assert parts[-1].nodes == 2
    survivor.beat(NOW + 16)  # the lost one last beat 16 s ago: past lease_s
    assert parts[-1] == Part(nodes=1, rank=0)
    lost.stopped.set()


def test_a_restart_at_the_same_address_replaces_the_earlier_process(repo: Store) -> None:
    clock = Clock()
    earlier = member(repo, clock, [], 7)
    earlier.start()
    earlier.stopped.set()  # killed: it never left
    again = member(repo, clock, [], 7)
    again.start()
    assert [n.id for n in repo.nodes()] == [again.id]
    assert again.ready(NOW)
    again.leave()


def test_a_settled_job_is_not_listed_again_until_the_scheduler_has_heard() -> None:
    node = Node()
    node.running({1, 2})
    node.settle(1)
    assert node.jobs == {2}
    node.running({1, 2, 3})  # the scheduler has not heard yet
    assert node.jobs == {2, 3}
    node.running({2, 3})  # it has: job 1 may be joined again later
    node.running({1, 2, 3})
    assert node.jobs == {1, 2, 3}


def test_leases_are_trusted_only_while_the_heartbeat_is_recent(repo: Store) -> None:
    clock = Clock()
    node = Membership(repo, address="http://127.0.0.1:1", version="1", lease_s=15.0,
                      heartbeat_s=5.0, clock=clock, shared=True)
    node._register(NOW)  # registered, its thread not started: it beats by hand
    assert node.holds_leases(NOW + 12.4)  # one missed beat is no cause
    assert not node.holds_leases(NOW + 12.5)  # lease_s less half a heartbeat
    node.beat(NOW + 12.5)
    assert node.holds_leases(NOW + 12.5)
    alone = Membership(repo, address="http://127.0.0.1:2", version="1", lease_s=15.0,
                       heartbeat_s=5.0, clock=clock, shared=False)
    assert alone.holds_leases(NOW + 1_000)  # one node on the database: always
    assert Node().holds_leases(NOW)


def test_a_forgotten_node_registers_again(repo: Store) -> None:
    clock = Clock()
    node = member(repo, clock, [], 1)
    node.start()
    repo.leave(node.id)  # as if another node had dropped it as long lost
    node.beat(NOW + 1)
    assert [n.id for n in repo.nodes()] == [node.id]
    node.leave()


def test_a_silence_past_the_lease_starts_a_new_lease_epoch(repo: Store) -> None:
    """Fencing: a node frozen (or cut off) past its lease may have lost its rows to
    another node. The heartbeat that ends the silence renews the node's own row at
    once, so the rows it leased before must be judged by their epoch, not by the
    heartbeat."""
    clock = Clock()
    node = Membership(repo, address="http://127.0.0.1:1", version="1", lease_s=15.0,
                      heartbeat_s=5.0, clock=clock, shared=True)
    node._register(NOW)
    leased = RowWork(id=1, job_seq=1, custom_id="r", model="m", endpoint="/v1/chat",
                     body={}, epoch=node.epoch)
    for beat in (5.0, 10.0, 15.0):  # beats on time keep the epoch
        clock.now = NOW + beat
        node.beat(clock.now)
    assert node.holds(leased)
    clock.now = NOW + 15.0 + 12.4  # frozen: not yet past the lease
    assert node.holds(leased)
    clock.now = NOW + 15.0 + 12.5
    assert not node.holds(leased)  # past it: no call of the row goes out
    clock.now = NOW + 15.0 + 20.0  # woken: the first beat renews the heartbeat ...
    node.beat(clock.now)
    assert node.holds_leases(clock.now)
    assert not node.holds(leased)  # ... but what was leased before stays fenced off
    assert node.holds(replace(leased, epoch=node.epoch))  # leased again: it may run
    epoch = node.epoch
    node.beat(clock.now + 5.0)
    assert node.epoch == epoch  # one new epoch per silence


def test_a_silence_cut_off_from_the_database_is_one_epoch(repo: Store,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    clock = Clock()
    node = Membership(repo, address="http://127.0.0.1:1", version="1", lease_s=15.0,
                      heartbeat_s=5.0, clock=clock, shared=True)
    node._register(NOW)

    def unreachable(*args: object, **kwargs: object) -> bool:
        raise OSError("the database is out of reach")

    monkeypatch.setattr(repo, "beat", unreachable)
    for beat in range(5, 60, 5):  # every beat fails for most of a minute
        node.beat(NOW + beat)
    assert node.epoch == 1
    monkeypatch.undo()
    node.beat(NOW + 60)
    assert node.epoch == 1 and node.holds_leases(NOW + 60)


def test_a_node_alone_on_the_database_always_holds_its_leases() -> None:
    node = Node()
    assert node.holds(RowWork(id=1, job_seq=1, custom_id="r", model="m",
                              endpoint="/v1/chat", body={}))
