"""The cluster's pure rules: node health, shares of a limit, lease sizes; and how a
model's gate and pace take a node's share."""

from __future__ import annotations

import pytest

from daemon.config import ModelConfig
from daemon.domain.cluster import (
    HEALTHY,
    LATE,
    LOST,
    STOPPING,
    NodeRecord,
    Part,
    beaten_since,
    lease_size,
    part_of,
)
from daemon.domain.concurrency import AdaptiveLimit
from daemon.domain.ratelimit import ModelPace
from daemon.upstream.gate import ModelGate

NOW = 1_700_000_000.0


def node(beat: float, *, stopping: bool = False) -> NodeRecord:
    return NodeRecord(id="n", address="http://n:1", version="1", started_at=NOW - 100,
                      heartbeat_at=beat, stopping=stopping)


@pytest.mark.parametrize(("age", "stopping", "health"), [
    (0.0, False, HEALTHY), (9.9, False, HEALTHY), (10.0, False, LATE), (14.9, False, LATE),
    (15.0, False, LOST), (1.0, True, STOPPING), (20.0, True, LOST)])
def test_health_follows_the_heartbeat(age: float, stopping: bool, health: str) -> None:
    assert node(NOW - age, stopping=stopping).health(NOW, 15.0) == health


@pytest.mark.parametrize(("limit", "nodes", "shares"), [
    (8, 3, [3, 3, 2]), (9, 3, [3, 3, 3]), (1000, 2, [500, 500]), (32, 1, [32]),
    (2, 3, [1, 1, 1])])  # below the node count: each keeps 1 (documented)
def test_shares_add_up_to_the_limit(limit: int, nodes: int, shares: list[int]) -> None:
    assert [Part(nodes, rank).of(limit) for rank in range(nodes)] == shares


def test_a_nodes_part_is_its_rank_among_the_live() -> None:
    assert part_of("b", ["c", "a"]) == Part(nodes=3, rank=1)
    assert part_of("a", []) == Part(nodes=1, rank=0)
    assert Part(2, 0).of_rate(None) is None


def test_a_joining_node_waits_for_a_beat_of_each_other_node_since_it_joined() -> None:
    joined = NOW + 0.5
    assert beaten_since([], joined)  # nobody to wait for
    assert beaten_since([node(joined), node(NOW + 3)], joined)
    assert not beaten_since([node(NOW + 3), node(NOW)], joined)  # one beat before it


def test_leases_follow_the_concurrency_within_bounds() -> None:
    assert [lease_size(c) for c in (1, 4, 16, 32, 100)] == [16, 16, 64, 128, 256]


def test_a_smaller_ceiling_caps_what_was_learned() -> None:
    limit = AdaptiveLimit(32, limit=20, good=20, failed=28)
    limit.cap(10)
    assert (limit.maximum, limit.limit, limit.good, limit.failed) == (10, 10, 10, None)
    limit.cap(16)  # a node left: room to grow again, from where it stands
    assert (limit.maximum, limit.limit) == (16, 10)


def test_the_pace_takes_its_share_of_configured_and_announced_rates() -> None:
    pace = ModelPace(rpm=600, tpm=90_000, upstream_rpm=300)
    pace.share(Part(nodes=3, rank=2), NOW)
    assert (pace.effective_rpm, pace.effective_tpm) == (100, 30_000)


def test_a_gate_shrinks_to_its_share_and_grows_back() -> None:
    gate = ModelGate(ModelConfig(alias="m", base_url="http://x", model="m",
                                 max_concurrency=8, adaptive=False))
    gate.share(Part(nodes=3, rank=2), NOW)
    assert (gate.maximum, gate.slots.limit) == (2, 2)
    gate.share(Part(nodes=1, rank=0), NOW)
    assert (gate.maximum, gate.slots.limit) == (8, 8)
