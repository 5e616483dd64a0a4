"""relayd's own work yields the CPU to other programs when it wakes (`[gateway] cpu_policy`).

Linux's `SCHED_BATCH` policy tells the kernel's scheduler that a thread is batch work:
it gets its fair share of the CPU as before, but waking up it never preempts the
program running on a core; it waits for that program's turn to end. relayd's threads
wake thousands of times a second (each row passes from the I/O loop to the HTTP
client's Tokio thread and back, and on to the job's supervisor and store writer).
Under the normal policy every wake-up may take a core from a model server on the same
host (Ollama, llama.cpp, vLLM's front end, or the simulator in the bench) for a moment,
and every request in flight waits meanwhile. In the bench's overhead job the simulator
was preempted 0.33 times a row, and 0.02 times under `SCHED_BATCH`, where Relay did
1.16 times the rows a second at 0.85 times the CPU a row; a latency-bound job against a
local upstream lost about 1.5 % (README, "Performance").

Threads inherit the policy of the thread that starts them. `batch_threads` holds it
while the runtime starts its threads (the I/O loop, whose first request starts the
HTTP client's Tokio thread, the scheduler, which starts every job's supervisor and
store writer, the validator and the rest), then puts the starting thread back. The
API's loop and the threads it starts keep the normal policy, so a client's request
still preempts relayd's own batch work.

Elsewhere (not Linux) the policy does not exist and nothing changes; nor does it for a
relayd an operator started under a policy of their own.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

log = logging.getLogger(__name__)


@contextlib.contextmanager
def batch_threads(policy: str) -> Iterator[None]:
    """Threads started inside run under `SCHED_BATCH` when `policy` is "batch" (and the
    system has it); the calling thread gets its own policy back after. A process an
    operator started under another policy than the normal one (`chrt`, systemd's
    `CPUSchedulingPolicy`) keeps it."""
    batch = getattr(os, "SCHED_BATCH", None)
    if policy != "batch" or batch is None or not hasattr(os, "sched_setscheduler") \
            or os.sched_getscheduler(0) != os.SCHED_OTHER:  # an operator's own choice
        yield
        return
    if not _set(batch, "SCHED_BATCH"):
        yield
        return
    try:
        yield
    finally:
        _set(os.SCHED_OTHER, "the normal policy")


def _set(policy: int, name: str) -> bool:
    """Set the calling thread's policy (pid 0 is the calling thread on Linux)."""
    try:
        os.sched_setscheduler(0, policy, os.sched_param(0))
    except OSError as exc:  # a sandbox that refuses it: relayd runs as before
        log.warning("could not set a thread's CPU policy to %s ([gateway] cpu_policy): %s",
                    name, exc)
        return False
    return True
