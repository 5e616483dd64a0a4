"""relayd's threads share one core (`[gateway] cpu_affinity`).

relayd's Python work runs one thread at a time (the interpreter lock), and its threads
pass every row from one to another: the I/O loop hands the request to pyreqwest's
Tokio thread and gets the answer back, the job's supervisor and its store writer take
the outcomes. Spread over several cores, each of those hand-offs wakes a thread on
another core: an interrupt between processors (on a virtual machine, a trip through
the hypervisor), and the row's data moves between the cores' caches. Kept on one core,
the woken thread runs where the data already is, and the other cores are free for the
other programs of the host, such as a model server or the simulator in the bench
(relayd's core is not reserved: they may run there too). On the bench's 2-core
virtual machine, against an instant upstream, that was 1.17 times the rows a second at
0.88 times the CPU a row (the median of 6 rounds side by side; README, "Performance").
What it gives up is the overlap of work done outside the interpreter lock (SQLite, the
sockets) with Python on a second core: streaming an output file was a sixth slower.

`"auto"` (the default) keeps every thread of `relayd serve` on one CPU: the one its
main thread runs on when it starts serving, among those the process may run on (all,
or those `taskset`, systemd's `CPUAffinity` or a container's cpuset left it), when
those are two or more. A list of CPU numbers keeps the threads on those; `"none"`
leaves their placement to the kernel. Threads inherit the affinity of the thread that
starts them, so setting it on every thread alive at start covers the later ones too.
Elsewhere than Linux nothing changes, nor where the system refuses it (a warning says
so, and no thread is left changed).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Collection, Set

log = logging.getLogger(__name__)

AUTO, NONE = "auto", "none"
Setting = str | tuple[int, ...]  # AUTO, NONE, or the CPUs to keep to


def chosen_cpus(setting: Setting, *, allowed: Set[int], current: int | None) -> set[int] | None:
    """The CPUs relayd's threads keep to, None to leave them where the kernel puts them.
    `allowed`: the CPUs the process may run on; `current`: the one it runs on now."""
    if isinstance(setting, str):  # AUTO or NONE
        if setting != AUTO or len(allowed) < 2:  # nothing to choose
            return None
        return {current if current is not None and current in allowed else min(allowed)}
    if not allowed:
        return None
    listed = set(setting)
    kept = listed & allowed
    if kept != listed:
        log.warning("[gateway] cpu_affinity names CPUs relayd may not run on: %s "
                    "(it may run on %s)%s", _cpus(listed - allowed), _cpus(allowed),
                    "" if kept else "; the kernel places its threads")
    return kept or None


def keep_threads_on(setting: Setting) -> set[int] | None:
    """Keep every thread of this process (and so every one started later) on the CPUs
    `setting` chooses; the CPUs, or None where nothing changed."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    cpus = chosen_cpus(setting, allowed=allowed, current=current_cpu())
    if cpus is None:
        return None
    done: list[int] = []
    try:
        for tid in _threads():
            try:
                os.sched_setaffinity(tid, cpus)
            except ProcessLookupError:  # ended meanwhile
                continue
            done.append(tid)
    except OSError as exc:  # a sandbox that refuses it: every thread as it was
        for tid in done:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, allowed)
        log.warning("could not keep relayd's threads on CPU %s ([gateway] cpu_affinity): "
                    "%s", _cpus(cpus), exc)
        return None
    log.info("relayd's threads run on CPU %s ([gateway] cpu_affinity)", _cpus(cpus))
    return cpus


def current_cpu() -> int | None:
    """The CPU the calling thread ran on last (field 39 of its stat); None elsewhere."""
    try:
        with open("/proc/thread-self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return int(fields[36])  # the fields after the name start at the third
    except (OSError, IndexError, ValueError):
        return None


def _threads() -> list[int]:
    try:
        return [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        return [0]  # no /proc: the calling thread, and those it starts


def _cpus(cpus: Collection[int]) -> str:
    return ", ".join(str(c) for c in sorted(cpus))
