"""`[gateway] cpu_policy` and `cpu_affinity`: relayd's own work runs as Linux batch
work, its API does not; all its threads keep to one core.

A real relayd with a job in flight: the API's loop (the main thread) keeps the normal
policy, the HTTP client's Tokio thread and the job's own threads (its supervisor, started
while it runs) are `SCHED_BATCH`; with `cpu_policy = "normal"` no thread is. With
`cpu_affinity = "auto"` every thread, those started later included, may run on one CPU
only, the same for all; with `"none"` each may run on every CPU the test may."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from daemon import testing
from daemon.testing import Simulator
from tests.e2e.harness import Relayd, rows, wait_for_status

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="Linux's policies")]


def policies(pid: int) -> dict[int, tuple[str, int, frozenset[int]]]:
    """Each live thread of `pid`: its name, its scheduling policy and its CPUs."""
    found = {}
    for tid in map(int, os.listdir(f"/proc/{pid}/task")):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as comm:
                found[tid] = (comm.read().strip(), os.sched_getscheduler(tid),
                              frozenset(os.sched_getaffinity(tid)))
        except OSError:  # ended meanwhile
            continue
    return found


def batch_tids(pid: int) -> set[int]:
    return {tid for tid, (_, policy, _) in policies(pid).items() if policy == os.SCHED_BATCH}


@pytest.mark.parametrize(("policy", "affinity"), [("batch", "auto"), ("normal", "none")])
def test_relayds_own_threads_are_batch_work_on_one_core(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd],
        policy: str, affinity: str) -> None:
    sim = simulator_factory("--latency-ms", "400")
    relayd = relayd_factory(sim, gateway={"cpu_policy": policy,
                                          "cpu_affinity": affinity}).start()
    with relayd.client() as client:
        first = client.post("/v1/batches", json={"model": "gpt-4o-mini", "requests": rows(1)})
        wait_for_status(client, first.json()["id"], "completed")  # the HTTP client started
        idle = batch_tids(relayd.pid)
        created = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                                   "requests": rows(4)})
        assert created.status_code == 200, created.text
        if policy == "batch":  # the job's supervisor is started while its rows run
            testing.wait_until(lambda: batch_tids(relayd.pid) - idle, timeout=10,
                               message="no batch thread started for the job")
        threads = policies(relayd.pid)
        wait_for_status(client, created.json()["id"], "completed")
    names = {tid: name for tid, (name, _, _) in threads.items()}
    batch = {tid for tid, (_, got, _) in threads.items() if got == os.SCHED_BATCH}
    cores = {cpus for _, _, cpus in threads.values()}
    allowed = frozenset(os.sched_getaffinity(0))  # relayd's starting CPUs: the test's
    if affinity == "none" or len(allowed) < 2:
        assert cores == {allowed}
    else:  # every thread on the same one, the job's supervisor (started late) too
        assert len(cores) == 1 and len(next(iter(cores))) == 1 and cores <= {
            frozenset({cpu}) for cpu in allowed}, cores
    assert threads[relayd.pid][1] != os.SCHED_BATCH  # the API's loop
    tokio = [tid for tid, name in names.items() if name == "pyreqwest"]
    assert tokio, names
    if policy == "batch":
        assert set(tokio) <= batch
        assert len(batch) >= 6, names  # the I/O loop, the actors, the job's supervisor
    else:
        assert not batch
