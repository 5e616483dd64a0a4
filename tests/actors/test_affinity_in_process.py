"""A `Daemon` started inside another program (these tests, an embedding) leaves that
program's CPUs alone: only `relayd serve` keeps its process on one core
(`runtime.serve`, `cpu_affinity.py`)."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from tests.actors.conftest import Running
from tests.actors.harness import Upstream, wait_until

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux's affinity")


def test_a_daemon_started_in_process_pins_none_of_its_threads(
        start_daemon: Callable[..., Running], upstream: Upstream) -> None:
    allowed = os.sched_getaffinity(0)
    relay = start_daemon(upstream, gateway={"cpu_affinity": "auto"})
    job = relay.submit(["fast"])
    wait_until(lambda: relay.repo.row_counts(job.seq)["completed"] == 1, what="the row")
    pinned = {}
    for tid in map(int, os.listdir("/proc/self/task")):
        try:
            cpus = os.sched_getaffinity(tid)
        except OSError:  # ended meanwhile
            continue
        if cpus != allowed:
            pinned[tid] = cpus
    assert not pinned
