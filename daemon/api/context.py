"""What the HTTP layer is given: the store, the actors to `tell` (their typed proxies),
the config, a clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from daemon.actors.health import Health
from daemon.actors.membership import Node
from daemon.actors.notifier import NotifierProxy
from daemon.actors.scheduler import SchedulerProxy
from daemon.actors.validator import ValidatorProxy
from daemon.api.events import EventHub
from daemon.config import Config
from daemon.metering import Meters
from daemon.outbound.policy import Resolver, system_resolver
from daemon.store.files import FileStore
from daemon.store.interface import Store


@dataclass
class Services:
    repo: Store
    config: Config
    scheduler: SchedulerProxy
    notifier: NotifierProxy
    files: FileStore
    validator: ValidatorProxy
    hub: EventHub = field(default_factory=EventHub)
    clock: Callable[[], float] = time.time
    resolve: Resolver = system_resolver
    accepting: bool = True
    health: Health = field(default_factory=Health)
    meters: Meters = field(default_factory=Meters)  # /metrics: its series and marks
    model_states: Callable[[], dict[str, dict[str, Any]]] = dict  # the router's, by alias
    node: Node = field(default_factory=Node)  # this node: GET /v1/nodes marks it

    def actors_alive(self) -> bool:
        """The actors a new job is handed to are there to take it."""
        return (self.scheduler.actor_ref.is_alive()
                and self.validator.actor_ref.is_alive())


SERVICES = web.AppKey("services", Services)
