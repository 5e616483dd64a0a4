"""Whether the process's core parts are alive, and what happens when one is not.

The core parts are what a daemon starts once and cannot run without: the actors
Scheduler, Validator, Notifier, HealthProbe and Sweeper, and the threads of the
heartbeat and the I/O loop. (A job's supervisor and its row worker are not: the
scheduler revives them.) A core part that died is not started again in place. The
process is crash-only, every state being in the store: it says so on `/healthz`
(degraded, naming the part), drains as on SIGTERM and exits with status 70
(EX_SOFTWARE), for its manager (systemd, a container runtime) to start it again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping

from daemon.actors.health import Health

log = logging.getLogger("relay.vitals")

EX_SOFTWARE = getattr(os, "EX_SOFTWARE", 70)  # sysexits.h: an internal software error


def dead_parts(parts: Mapping[str, Callable[[], bool]]) -> tuple[str, ...]:
    """The names of the parts whose liveness check says no, in order."""
    return tuple(name for name, alive in parts.items() if not alive())


class Vitals:
    """Checks the core parts at each `check(now)` (a ticker target); the first time one
    is dead, records it in `health` and calls `on_death` once."""

    def __init__(self, parts: Mapping[str, Callable[[], bool]], *, health: Health,
                 on_death: Callable[[], object]) -> None:
        self.parts = parts
        self.health = health
        self.on_death = on_death

    def check(self, now: float) -> None:
        if self.health.death is not None:  # told already: the process is stopping
            return
        dead = dead_parts(self.parts)
        if not dead:
            return
        log.error("%s died: relayd stops and exits with status %d, for its manager to "
                  "start it again (every state is in the store)", ", ".join(dead),
                  EX_SOFTWARE)
        self.health.died(dead, now=now)
        self.on_death()
