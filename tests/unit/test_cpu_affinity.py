"""`[gateway] cpu_affinity`: which CPUs relayd's threads keep to, and that every thread
of the process keeps to them, those started after too."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from daemon.cpu_affinity import chosen_cpus, current_cpu

linux = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux's affinity")


def test_auto_keeps_to_the_cpu_it_runs_on() -> None:
    assert chosen_cpus("auto", allowed={0, 1, 2, 3}, current=2) == {2}


def test_auto_takes_the_lowest_allowed_when_the_current_cpu_is_unknown_or_not_allowed() -> None:
    assert chosen_cpus("auto", allowed={1, 3}, current=None) == {1}
    assert chosen_cpus("auto", allowed={1, 3}, current=0) == {1}


def test_auto_changes_nothing_on_one_cpu_and_none_never_does() -> None:
    assert chosen_cpus("auto", allowed={5}, current=5) is None
    assert chosen_cpus("none", allowed={0, 1}, current=0) is None
    assert chosen_cpus((0,), allowed=set(), current=None) is None


def test_a_list_keeps_to_its_cpus() -> None:
    assert chosen_cpus((1, 3), allowed={0, 1, 2, 3}, current=0) == {1, 3}


def test_a_list_naming_cpus_relayd_may_not_use_keeps_to_the_rest_and_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert chosen_cpus((1, 7), allowed={0, 1}, current=0) == {1}
        assert chosen_cpus((7, 9), allowed={0, 1}, current=0) is None
    assert [r.getMessage() for r in caplog.records] == [
        "[gateway] cpu_affinity names CPUs relayd may not run on: 7 (it may run on 0, 1)",
        "[gateway] cpu_affinity names CPUs relayd may not run on: 7, 9 (it may run on 0, 1); "
        "the kernel places its threads",
    ]


@linux
def test_the_current_cpu_is_one_the_process_may_run_on() -> None:
    assert current_cpu() in os.sched_getaffinity(0)


# A process of its own: pinning the test's would pin every later test of its worker.
PROBE = """
import json, os, sys, threading
from daemon.cpu_affinity import keep_threads_on
setting = json.loads(sys.argv[1])
started, go = threading.Event(), threading.Event()
def before():
    started.set()
    go.wait()
early = threading.Thread(target=before, daemon=True)  # a failing probe must not hang
early.start()
started.wait()
chosen = keep_threads_on(setting if isinstance(setting, str) else tuple(setting))
seen = []
late = threading.Thread(target=lambda: seen.append(sorted(os.sched_getaffinity(0))))
late.start()
late.join()
print(json.dumps({"chosen": sorted(chosen) if chosen else None,
                  "main": sorted(os.sched_getaffinity(0)),
                  "early": sorted(os.sched_getaffinity(early.native_id)), "late": seen[0]}))
go.set()
early.join()
"""


def run_probe(setting: object) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(setting)],
                          capture_output=True, text=True, timeout=30, check=True)
    found: dict[str, object] = json.loads(done.stdout)
    return found


@linux
def test_every_thread_keeps_to_the_listed_cpu_those_started_later_too() -> None:
    cpu = max(os.sched_getaffinity(0))
    assert run_probe([cpu]) == {"chosen": [cpu], "main": [cpu], "early": [cpu],
                                "late": [cpu]}


@linux
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to choose")
def test_auto_keeps_every_thread_on_one_allowed_cpu() -> None:
    found = run_probe("auto")
    chosen = found["chosen"]
    assert isinstance(chosen, list) and len(chosen) == 1
    assert set(chosen) <= os.sched_getaffinity(0)
    assert found["main"] == found["early"] == found["late"] == chosen


@linux
def test_none_leaves_every_thread_where_it_was() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    assert run_probe("none") == {"chosen": None, "main": allowed, "early": allowed,
                                 "late": allowed}
