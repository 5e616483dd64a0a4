"""What the HTTP layer is given: the store, the actors to `tell` (their typed proxies),
the config, a clock."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from aiohttp import web

from daemon.actors.health import Health
from daemon.actors.membership import Node
from daemon.actors.notifier import NotifierProxy
from daemon.actors.scheduler import SchedulerProxy
from daemon.actors.validator import ValidatorProxy
from daemon.api.events import EventHub
from daemon.config import Config
from daemon.domain.estimate import Estimate, ModelLimits, estimate
from daemon.metering import Meters
from daemon.outbound.policy import Resolver, system_resolver
from daemon.store.files import FileStore
from daemon.store.interface import Store

HISTORY_S = 7 * 24 * 3600.0  # how far back a workspace's rows count as recent


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

    def model_limits(self) -> dict[str, ModelLimits]:
        """Each configured model's pace: the router's learned rpm, tpm and concurrency
        where it has them (lower than the configured ones once an upstream announced its
        own)."""
        states = self.model_states()
        found = {}
        for model in self.config.models:
            state = states.get(model.alias) or {}
            found[model.alias] = ModelLimits(
                rpm=state.get("rpm", model.rpm), tpm=state.get("tpm", model.tpm),
                concurrency=int(state.get("concurrency") or model.max_concurrency),
                input_usd_per_mtok=model.input_usd_per_mtok,
                output_usd_per_mtok=model.output_usd_per_mtok)
        return found

    def estimate(self, rows: Iterable[tuple[str, Mapping[str, Any]]], *, workspace_id: int,
                 discount: Decimal) -> Estimate:
        """What `(model, body)` rows would take and cost, by the workspace's recent rows
        and the models' limits now. Blocking: reads the store."""
        history = self.repo.model_history(workspace_id, since=self.clock() - HISTORY_S)
        return estimate(rows, limits=self.model_limits(), history=history, discount=discount)


SERVICES = web.AppKey("services", Services)
