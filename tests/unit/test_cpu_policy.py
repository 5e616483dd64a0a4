"""`[gateway] cpu_policy`: threads started under `batch_threads` are Linux batch work;
the thread that started them gets its own policy back."""

from __future__ import annotations

import os
import threading

import pytest

from daemon.cpu_policy import batch_threads

pytestmark = pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="Linux's policies")


def policy_of_a_thread_started(policy: str) -> int:
    seen: list[int] = []
    with batch_threads(policy):
        thread = threading.Thread(target=lambda: seen.append(os.sched_getscheduler(0)))
        thread.start()
        thread.join(timeout=10)
    return seen[0]


def test_threads_started_inside_are_batch_work_and_the_starter_is_put_back() -> None:
    before = os.sched_getscheduler(0)
    assert policy_of_a_thread_started("batch") == os.SCHED_BATCH
    assert os.sched_getscheduler(0) == before != os.SCHED_BATCH


def test_the_normal_policy_changes_nothing() -> None:
    before = os.sched_getscheduler(0)
    assert policy_of_a_thread_started("normal") == before != os.SCHED_BATCH
    assert os.sched_getscheduler(0) == before


def test_the_starter_is_put_back_when_starting_fails() -> None:
    before = os.sched_getscheduler(0)
    with pytest.raises(RuntimeError), batch_threads("batch"):
        assert os.sched_getscheduler(0) == os.SCHED_BATCH
        raise RuntimeError("a start that failed")
    assert os.sched_getscheduler(0) == before


def test_a_policy_the_operator_chose_is_kept() -> None:
    """A thread under another policy than the normal one (idle here, as `chrt -i` would
    set it) starts its threads under that one and keeps it. The thread is thrown away
    after: leaving the idle policy may need a privilege."""
    seen: list[int] = []

    def starter() -> None:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        seen.append(policy_of_a_thread_started("batch"))
        seen.append(os.sched_getscheduler(0))

    thread = threading.Thread(target=starter)
    thread.start()
    thread.join(timeout=10)
    assert seen == [os.SCHED_IDLE, os.SCHED_IDLE]
