"""Health: whether the store takes writes. A probe writes one database row and one
small file every few seconds, even when the daemon is idle; `/healthz` answers from
what it last found, so a supervisor or a load balancer can act on a full disk or a
failing database, and sees it heal with the first good write.

Anything else that meets a storage fault (an API request) reports it at once, so
health does not wait for the next probe to say so. A core part of the process that
died (actors/vitals.py) is recorded here too: it makes `/healthz` degraded, naming the
part, until the process exits.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import pykka

from daemon.actors.contained import contained
from daemon.actors.proxies import ActorProxyOf, message
from daemon.domain.every import Every
from daemon.store.faults import StoreError, StoreUnavailable
from daemon.store.files import FileStore
from daemon.store.interface import Store

log = logging.getLogger("relay.health")

PROBE_EVERY_S = 5.0


@dataclass(frozen=True)
class Death:
    """Which core parts of the process died (their names), and when."""

    parts: tuple[str, ...]
    at: float


class Health:
    """The store's health as last seen: written by the probe, the API and the writers
    (each on its own thread, under one lock), read by `/healthz` and `/metrics` as one
    `(fault, since)` pair; and the `death` of core parts, once (one assignment)."""

    def __init__(self) -> None:
        self.state: tuple[StoreError | None, float | None] = (None, None)
        self.death: Death | None = None  # for good: the process exits
        self._lock = threading.Lock()

    def died(self, parts: tuple[str, ...], *, now: float) -> None:
        """Core parts of the process died: it is degraded until it exits."""
        self.death = Death(parts, now)

    def record(self, fault: StoreError | None, *, now: float) -> None:
        with self._lock:
            was, since = self.state
            if fault is None:
                if was is not None:
                    log.warning("the store takes writes again, after %.0f s",
                                now - (since or now))
                self.state = (None, None)
                return
            if was is None:
                log.error("the store cannot write: %s (%s)", fault.code, fault.detail)
                since = now
            self.state = (fault, since)

    @property
    def fault(self) -> StoreError | None:
        return self.state[0]

    @property
    def ok(self) -> bool:
        return self.state[0] is None


def probe(repo: Store, files: FileStore, *, now: float) -> StoreError | None:
    """One probe write to the database and one to the files folder."""
    try:
        repo.probe_write(now=now)
        files.probe()
    except StoreError as fault:
        return fault
    except Exception as exc:  # whatever stops the probe, the store is not shown to write
        return StoreUnavailable(f"{type(exc).__name__}: {exc}")
    return None


class HealthProbe(pykka.ThreadingActor):
    """Runs `probe` every `every` seconds of `tick(now)`, on its own thread, so the
    timer never waits on a slow disk."""

    def __init__(self, *, repo: Store, files: FileStore, health: Health,
                 every: float = PROBE_EVERY_S) -> None:
        super().__init__()
        self.repo = repo
        self.files = files
        self.health = health
        self.every = Every(every)

    @contained
    def tick(self, now: float) -> None:
        if self.every.due(now):
            self.health.record(probe(self.repo, self.files, now=now), now=now)


class HealthProbeProxy(ActorProxyOf[HealthProbe]):
    tick = message(HealthProbe.tick)
