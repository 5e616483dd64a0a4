"""The scheduler and supervisors on real threads: admission order, per-model limits
shared across jobs, and the per-job bound on rows in flight."""

from __future__ import annotations

from collections.abc import Callable

from tests.actors.conftest import Running
from tests.actors.harness import PRIMARY, Upstream, wait_until

MODELS_LIMIT_2 = [{"alias": PRIMARY, "base_url": "http://upstream.test/v1", "max_concurrency": 2}]


def first_seen_tags(upstream: Upstream, tags: set[str]) -> list[str]:
    """The order in which the upstream first saw a row of each tagged job."""
    order = [p.split()[0] for p in upstream.prompts()]
    return [t for t in dict.fromkeys(order) if t in tags]


def test_queued_jobs_start_by_priority_then_oldest(start_daemon: Callable[..., Running],
                                                   upstream: Upstream) -> None:
    relay = start_daemon(upstream, gateway={"max_running_jobs": 1})
    relay.submit(["blocker BLOCK"], tag="blocker")
    wait_until(lambda: upstream.seen("blocker"), what="the blocking job to reach the upstream")
    jobs = [relay.submit([f"{tag} row {i}" for i in (1, 2)], priority=priority, tag=tag)
            for tag, priority in (("p1", 1), ("p5-older", 5), ("p5-newer", 5))]
    assert all(relay.job(j).status == "queued" for j in jobs)

    upstream.gate.set()

    wait_until(lambda: all(relay.job(j).status == "completed" for j in jobs), what="3 jobs")
    assert first_seen_tags(upstream, {"p1", "p5-older", "p5-newer"}) == [
        "p5-older", "p5-newer", "p1"]


def test_model_limit_is_shared_by_running_jobs(start_daemon: Callable[..., Running],
                                               upstream: Upstream) -> None:
    relay = start_daemon(upstream, gateway={"batch_concurrency": 4, "max_running_jobs": 2},
                         models=MODELS_LIMIT_2)
    a = relay.submit([f"a row {i} PAUSE" for i in range(8)], tag="a")
    wait_until(lambda: upstream.in_flight() == 2, what="job a to fill the model's slots")
    b = relay.submit([f"b row {i}" for i in range(8)], tag="b")
    wait_until(lambda: relay.job(b).status == "running", what="job b to start")

    # a's two other rows and b's four (its batch_concurrency) are held at the model's
    # gate: b's rows have had their chance, and the model's two slots are a's
    wait_until(lambda: relay.waiting_for_the_model() == 2 + 4, what="rows held at the gate")
    assert not upstream.seen("b row"), "job b got past a limit it shares with job a"
    assert upstream.in_flight() == 2

    upstream.pause.set()
    wait_until(lambda: all(relay.job(j).status == "completed" for j in (a, b)), what="2 jobs")
    assert upstream.peak[PRIMARY] == 2
    assert relay.job(a).completed == relay.job(b).completed == 8


def test_batch_concurrency_bounds_rows_in_flight(start_daemon: Callable[..., Running],
                                                 upstream: Upstream) -> None:
    relay = start_daemon(upstream, gateway={"batch_concurrency": 3})
    job = relay.submit([f"row {i} PAUSE" for i in range(12)])
    wait_until(lambda: upstream.in_flight() == 3, what="three rows in flight")

    # the fourth row has reached the job's slots and waits there
    wait_until(lambda: relay.waiting_in_the_lane(job) > 0, what="a row waiting for a slot")
    assert upstream.in_flight() == 3

    upstream.pause.set()
    wait_until(lambda: relay.job(job).status == "completed", what="the job")
    assert upstream.peak[PRIMARY] == 3
    assert relay.job(job).completed == 12
    assert len(upstream.calls) == 12
