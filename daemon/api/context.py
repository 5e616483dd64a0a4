"""What the HTTP layer is given: the store, the actors to `tell`, the config, a clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from daemon.api.events import EventHub
from daemon.config import Config
from daemon.outbound.policy import Resolver, system_resolver
from daemon.store.files import FileStore
from daemon.store.repo import Repo


@dataclass
class Services:
    repo: Repo
    config: Config
    scheduler: Any  # proxy: wake(), cancel(seq)
    notifier: Any  # proxy: job_created(job), job_changed(seq)
    files: FileStore
    validator: Any = None  # proxy: validate(seq)
    hub: EventHub = field(default_factory=EventHub)
    clock: Callable[[], float] = time.time
    resolve: Resolver = system_resolver
    accepting: bool = True

    def validator_alive(self) -> bool:
        return self.validator is not None and self.validator.actor_ref.is_alive()


SERVICES = web.AppKey("services", Services)
