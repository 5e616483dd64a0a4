"""Wiring: builds the store, the router on its I/O loop and the actors, and stops
them in the order that loses nothing (stop dispatching, store outcomes, then
cancel what is still in flight; those rows stay pending and run after restart)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib.metadata
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError
from typing import Any

import pykka

from daemon.actors.health import Health, HealthProbe, HealthProbeProxy
from daemon.actors.membership import Membership
from daemon.actors.notifier import Notifier, NotifierProxy
from daemon.actors.scheduler import Scheduler, SchedulerProxy
from daemon.actors.supervisor import JobSupervisor, SupervisorProxy
from daemon.actors.sweeper import Sweeper, SweeperProxy, sweep_leftovers
from daemon.actors.validator import Validator, ValidatorProxy
from daemon.actors.vitals import EX_SOFTWARE, Vitals
from daemon.api.app import create_app
from daemon.api.context import Services
from daemon.api.events import EventHub
from daemon.api.listener import Listener
from daemon.config import Config
from daemon.cpu_affinity import keep_threads_on
from daemon.cpu_policy import batch_threads
from daemon.dialects import dialect_of, event_view
from daemon.domain.cluster import Part
from daemon.domain.jobs import Job
from daemon.executors import ChatExecutor, Executors
from daemon.executors.http_tools import HttpToolCaller
from daemon.executors.mcp_tools import McpToolCaller
from daemon.executors.store_calls import StoreCalls
from daemon.executors.tool_hosts import HostLimits
from daemon.executors.tool_loop import RoundLog, ToolCaller, ToolLoopExecutor
from daemon.executors.validated import ValidatedExecutor
from daemon.executors.workflow import WorkflowExecutor, WorkflowLog
from daemon.logs import set_node
from daemon.metering import MeteredExecutor, MeteredToolCaller, Meters
from daemon.notify import NotifySocket, Watchdog, message, serving, watchdog_every
from daemon.outbound import webhook
from daemon.outbound.http import OutboundClient
from daemon.outbound.policy import Resolver, system_resolver
from daemon.store import open_store, sqlite_path
from daemon.store.bus import Bus, NoBus, PgBus
from daemon.store.faults import log_failure
from daemon.store.files import FileStore
from daemon.store.owner import Holder, Ownership, own
from daemon.upstream.clients import make_transport
from daemon.upstream.ioloop import IOLoop
from daemon.upstream.router import Router
from daemon.upstream.transport import Transport

log = logging.getLogger("relay.daemon")

VERSION = importlib.metadata.version("relay")
TICK_S = 0.25
STOP_BUDGET_S = 8.0
SHARE_WAIT_S = 5.0  # the most a heartbeat waits for the router to take new shares
BIND_FAILED_STOP_S = 1.0  # nothing ran yet: `relayd serve` exits within 2 s of a busy port


def stuck_threads() -> list[str]:
    """Threads that would keep the process alive after a stop (actor threads are not
    daemon threads)."""
    return [t.name for t in threading.enumerate()
            if t is not threading.main_thread() and not t.daemon and t.is_alive()]


class Ticker:
    """Calls each target with `now` every `interval` seconds, on its own thread. A
    target that fails (an actor that died, a bug) is logged when it starts failing and
    again when it recovers; the others are called all the same, and the timer never
    stops for it: cron, expiry, the watchdog and the probes all hang off it."""

    def __init__(self, targets: Mapping[str, Callable[[float], Any]], *, interval: float,
                 clock: Callable[[], float]) -> None:
        self.targets = targets
        self.interval = interval
        self.clock = clock
        self.failing: set[str] = set()  # targets whose last call failed
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="relay-ticker", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=2)

    def tick(self, now: float) -> None:
        """One round: every target, each failure contained."""
        for name, target in self.targets.items():
            try:
                target(now)
            except Exception as exc:
                self._failed(name, exc)
            else:
                if name in self.failing:
                    self.failing.discard(name)
                    log.warning("the ticker ticks the %s again", name)

    def _failed(self, name: str, exc: Exception) -> None:
        if name in self.failing:
            return  # said once a streak: the ticker runs 4 times a second
        self.failing.add(name)
        if isinstance(exc, pykka.ActorDeadError):
            log.error("the ticker cannot tick the %s: the actor is dead", name)
        else:
            log_failure(log, f"the ticker's call of the {name} failed", exc)

    def _run(self) -> None:
        while not self.stopped.wait(self.interval):
            self.tick(self.clock())


class Daemon:
    """Everything `relayd serve` runs besides the HTTP listener."""

    def __init__(self, config: Config, *, clock: Callable[[], float] = time.time,
                 transport: Transport | None = None, resolve: Resolver = system_resolver,
                 tick_interval: float = TICK_S,
                 on_death: Callable[[], object] = lambda: None,
                 notify: NotifySocket | None = None, watchdog_s: float | None = None) -> None:
        self.config = config
        self.notify = notify  # the service manager's socket (daemon/notify.py), if any
        self.watchdog_s = watchdog_s  # ping it this often (half its WATCHDOG_USEC)
        if notify is not None and watchdog_s is not None:  # a tick at least every ping
            tick_interval = min(tick_interval, watchdog_s)
        self.on_death = on_death  # a core part died (any thread): stop, then exit 70
        self.clock = clock
        self.resolve = resolve
        self.tick_interval = tick_interval
        gateway = config.gateway
        self.io_loop = IOLoop()
        connections = max(100, gateway.batch_concurrency * gateway.max_running_jobs)
        self.router = Router(config.models, config.retry,
                             transport=transport or make_transport(
                                 gateway.transport, config.retry,
                                 connection_limit=connections,
                                 max_response_bytes=gateway.max_response_bytes))
        self.models = {m.alias: m for m in config.models}
        self.hub = EventHub()
        self.meters = Meters(per_workspace=config.metrics.per_workspace)

    def start(self) -> Services:
        """Start everything; DatabaseInUse, before anything started, if another process
        runs on this SQLite database. Every thread started here is batch work
        (`cpu_policy.py`); the API's are not."""
        with batch_threads(self.config.gateway.cpu_policy):
            return self._start()

    def _start(self) -> Services:
        cluster, server = self.config.cluster, self.config.server
        address = cluster.address or node_address(server.host, server.port)
        self.started_at = time.time()  # wall time, for the lock file's reader
        self.ownership = self._own(address)
        server.data_dir.mkdir(parents=True, exist_ok=True)
        try:  # a database it cannot open (a newer schema, say) keeps no lock
            self.repo = open_store(self.config.store_url)
        except BaseException:
            if self.ownership is not None:
                self.ownership.release()
            raise
        self.io_loop.start()
        self.membership = Membership(
            self.repo, address=address,
            version=VERSION, lease_s=cluster.lease_s, heartbeat_s=cluster.heartbeat_s,
            clock=self.clock, shared=self.repo.SHARED, on_part=self._share)
        self.bus: Bus = (PgBus(self.config.store_url, origin=self.membership.id)
                         if self.repo.SHARED else NoBus())
        self.membership.announce = self.bus.publish
        self.membership.start()
        set_node(self.membership.id)  # on every JSON log line from here on
        self.io_loop.add_cleanup(self.router.aclose)
        self.outbound = OutboundClient(
            allow_private=self.config.security.allow_private_targets, resolve=self.resolve,
            max_bytes=self.config.gateway.max_response_bytes)
        self.io_loop.add_cleanup(self.outbound.aclose)
        self.health = Health()  # before the executors, which report storage faults to it
        self.executors = self._executors()
        self.notifier = NotifierProxy.of(Notifier.start(
            repo=self.repo, publish=self.hub.publish, deliver=self._deliver, clock=self.clock,
            broadcast=self._broadcast, node=self.membership.id))
        self.files = FileStore(self.config.server.data_dir)
        sweep_leftovers(self.repo, self.files, now=time.time())  # mtimes are wall time
        self.sweeper = SweeperProxy.of(Sweeper.start(
            repo=self.repo, files=self.files, retention_days=self.config.retention.days))
        self.prober = HealthProbeProxy.of(HealthProbe.start(repo=self.repo, files=self.files,
                                                            health=self.health))
        self.scheduler = SchedulerProxy.of(Scheduler.start(
            repo=self.repo, files=self.files, slots=self.config.gateway.max_running_jobs,
            start_supervisor=self._start_supervisor, notifier=self.notifier,
            clock=self.clock, models=self.models, node=self.membership,
            tell_cancel=self._tell_cancel))
        self.bus.start(self._hear)
        # A node that joined before the bus listened was not heard: shrink for it now
        # rather than at the next heartbeat (it waits for that beat to dispatch).
        self.membership.beat(self.clock())
        self.validator = ValidatorProxy.of(Validator.start(
            repo=self.repo, files=self.files, scheduler=self.scheduler, resolve=self.resolve,
            allow_private=self.config.security.allow_private_targets,
            notifier=self.notifier, models=self.models, node=self.membership,
            clock=self.clock, limits=self.config.limits,
            prices={m.alias: m.input_usd_per_mtok for m in self.config.models}))
        for job in self.repo.unclaimed_validations(  # left by a previous process
                node=self.membership.id, alive_after=self.membership.alive_after(self.clock())):
            self.validator.validate(job.seq)
        parts = self._core_parts()
        self.vitals = Vitals(parts, health=self.health, on_death=self.on_death)
        # `defer` (a tell): a dead actor raises here, where the ticker sees it, rather
        # than in a future nobody reads; each tick is @contained, so none kills its actor.
        targets: dict[str, Callable[[float], Any]] = {
            "scheduler": self.scheduler.tick.defer,
            "notifier": self.notifier.tick.defer,
            "sweeper": self.sweeper.tick.defer,
            "health probe": self.prober.tick.defer,
            "validator": self.validator.tick.defer,
            "vitals": self.vitals.check}
        if self.notify is not None and self.watchdog_s is not None:  # after the vitals
            targets["service watchdog"] = Watchdog(
                self.notify.send, every=self.watchdog_s, tick=self.tick_interval,
                alive=lambda: serving(parts, self.health)).tick
        self.ticker = Ticker(targets, interval=self.tick_interval, clock=self.clock)
        self.ticker.start()
        self.services = Services(repo=self.repo, config=self.config, scheduler=self.scheduler,
                                 notifier=self.notifier, files=self.files, hub=self.hub,
                                 validator=self.validator, clock=self.clock,
                                 resolve=self.resolve, health=self.health,
                                 model_states=self.router.model_states, meters=self.meters,
                                 node=self.membership)
        self.meters.start_at(self.repo.last_attempt_id())  # /metrics counts from this start
        return self.services

    def stop(self, budget: float = STOP_BUDGET_S) -> None:
        """Graceful stop: nothing new starts, finished outcomes are stored, the rest
        stays pending for the next start."""
        deadline = time.monotonic() + budget
        self.services.accepting = False
        self.ticker.stop()
        self.membership.drain()
        try:
            for drained in self._drain_jobs(timeout=budget / 2):
                drained.get(timeout=max(0.1, deadline - time.monotonic()))
        except (pykka.Timeout, pykka.ActorDeadError):
            log.warning("drain did not finish in time; unflushed rows will re-run")
        self.io_loop.stop(timeout=max(0.5, deadline - time.monotonic()))
        try:
            pykka.ActorRegistry.stop_all(block=True,
                                         timeout=max(0.5, deadline - time.monotonic()))
        except pykka.Timeout:
            log.warning("some actors did not stop in time: %s", stuck_threads())
        self.bus.stop()
        self.membership.leave()  # what is still leased goes back: another node takes it
        self.repo.close()
        if self.ownership is not None:
            self.ownership.release()

    def listening(self, address: str) -> None:
        """The listener's port is known (it was 0 in the config): the node's address,
        and the name on the database's lock, say it."""
        self.membership.listening(address)
        if self.ownership is not None:
            self.ownership.announce(self._holder(address))

    def _own(self, address: str) -> Ownership | None:
        """This process's hold on its SQLite database (None on PostgreSQL, which nodes
        share): store/owner.py."""
        database = sqlite_path(self.config.store_url)
        # Resolved: one database reached through a symlink or another path is one lock.
        return None if database is None else own(database.resolve(), self._holder(address))

    def _holder(self, address: str) -> Holder:
        return Holder(pid=os.getpid(), address=address, since=self.started_at)

    def _core_parts(self) -> dict[str, Callable[[], bool]]:
        """What the process cannot run without (actors/vitals.py), by name."""
        return {"scheduler": self.scheduler.actor_ref.is_alive,
                "validator": self.validator.actor_ref.is_alive,
                "notifier": self.notifier.actor_ref.is_alive,
                "health probe": self.prober.actor_ref.is_alive,
                "sweeper": self.sweeper.actor_ref.is_alive,
                "heartbeat": self.membership.thread.is_alive,
                "I/O loop": self.io_loop.alive}

    def _drain_jobs(self, *, timeout: float) -> list[pykka.Future[None]]:
        """Ask the supervisors to stop dispatching and store what finished; their
        futures. Through the scheduler, or each supervisor if the scheduler died."""
        try:
            return self.scheduler.drain().get(timeout=timeout) or []
        except pykka.ActorDeadError:
            return [SupervisorProxy.of(ref).drain()
                    for ref in pykka.ActorRegistry.get_by_class(JobSupervisor)]

    def _executors(self) -> Executors:
        tools, allow_private = self.config.tools, self.config.security.allow_private_targets
        limits = HostLimits(tools.max_concurrency_per_host)
        mcp = McpToolCaller(limits, allow_private=allow_private, resolve=self.resolve,
                            sessions_per_job=tools.mcp_sessions_per_job,
                            max_bytes=self.config.gateway.max_response_bytes)
        callers: dict[str, ToolCaller] = {
            "http": MeteredToolCaller(HttpToolCaller(self.outbound, limits), self.meters),
            "mcp": MeteredToolCaller(mcp, self.meters)}
        calls = StoreCalls(health=self.health, clock=self.clock)  # storage faults: waited out
        record_bytes = self.config.limits.max_record_bytes
        workflows = WorkflowExecutor(
            self.router, self.outbound, limits, WorkflowLog(self.repo, calls), self.config.retry,
            secret=self.repo.webhook_secret, models=frozenset(self.models),
            max_record_bytes=record_bytes)
        tool_loop = ToolLoopExecutor(self.router, callers, RoundLog(self.repo, calls),
                                     self.config.retry, max_record_bytes=record_bytes)
        checked = ValidatedExecutor(self.router, RoundLog(self.repo, calls))
        return Executors(chat=MeteredExecutor(ChatExecutor(self.router), self.meters),
                         tools=MeteredExecutor(tool_loop, self.meters),
                         workflows=MeteredExecutor(workflows, self.meters),
                         checked=MeteredExecutor(checked, self.meters))

    def _start_supervisor(self, job: Job, scheduler: SchedulerProxy) -> SupervisorProxy:
        return SupervisorProxy.of(JobSupervisor.start(
            job, repo=self.repo, files=self.files, executors=self.executors,
            io_loop=self.io_loop,
            scheduler=scheduler, notifier=self.notifier,
            concurrency=self.config.gateway.batch_concurrency, models=self.models,
            clock=self.clock, health=self.health, node=self.membership))

    def _share(self, part: Part) -> None:
        """The live nodes changed (on the heartbeat thread): the router, on the I/O loop,
        takes this node's part of every model's limits before the beat that follows
        tells the other nodes so."""
        with contextlib.suppress(RuntimeError, TimeoutError, CancelledError):  # stopping
            self.io_loop.submit(self.router.share(part)).result(timeout=SHARE_WAIT_S)

    def _broadcast(self, job: Job, event: str) -> None:
        self.bus.publish({"kind": "event", "seq": job.seq, "workspace": job.workspace_id,
                          "event": event})

    def _tell_cancel(self, seq: int) -> None:
        self.bus.publish({"kind": "cancel", "seq": seq})

    def _hear(self, message: dict[str, Any]) -> None:
        """Another node's message (on the bus thread): a node joined, a job's event for
        the streams open here, or a cancel for the job's supervisor here."""
        if message["kind"] == "joined":  # beat now: it waits for that to dispatch
            self.membership.beat(self.clock())
            return
        seq = int(message["seq"])
        if message["kind"] == "cancel":
            with contextlib.suppress(pykka.ActorDeadError):  # stopping: nothing runs here
                self.scheduler.cancel(seq, threading.Event(), tell_others=False)
        elif message["kind"] == "event" and self.hub.listens(int(message["workspace"])):
            job = self.repo.job_by_seq(seq)
            if job is not None:
                self.hub.publish(job.workspace_id, str(message["event"]), event_view(job))

    def _deliver(self, job: Job, secret: str, now: float) -> dict[str, Any]:
        """Runs in a notifier thread: the POST itself runs on the I/O loop."""
        sending = webhook.deliver(job, payload=dialect_of(job).webhook_payload(job),
                                  secret=secret, now=now, client=self.outbound)
        return self.io_loop.submit(sending).result(timeout=webhook.TIMEOUT_S * 2)


def node_address(host: str, port: int) -> str:
    """How other nodes and operators reach this one, when `[cluster] address` is unset."""
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"http://{host}:{port}"


def settle_garbage_collector() -> None:
    """Once started: what the start made lives as long as the daemon, so it leaves the
    cyclic collector's scans (`gc.freeze`). The collector's share of relayd's CPU during
    a fast job fell from 2.6 % to 0.9 % (perf). Collecting the youngest generation less
    often took it under 0.1 % but cost a few MB: not taken."""
    gc.collect()
    gc.freeze()


async def serve(config: Config, *, ready: Callable[[str], None] = print) -> int:
    """Run the daemon until SIGTERM or SIGINT, or until a core part dies, then stop
    gracefully. The exit status: 0, or 70 (EX_SOFTWARE) when a core part died. The
    whole process is relayd's: every thread of it, those started later too, keeps to the
    CPUs `[gateway] cpu_affinity` chooses (`cpu_affinity.py`; a `Daemon` started inside
    another program, as the tests do, leaves that program's threads alone)."""
    keep_threads_on(config.gateway.cpu_affinity)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    notify = NotifySocket.from_env(os.environ)  # run by systemd (Type=notify)?
    daemon = Daemon(config, on_death=lambda: loop.call_soon_threadsafe(stop.set),
                    notify=notify, watchdog_s=watchdog_every(os.environ, pid=os.getpid()))
    services = await asyncio.to_thread(daemon.start)
    try:
        listener = await Listener.open(create_app(services), config.server)
    except OSError:  # the port is taken, or the host is not ours: stop what started, at once
        services.accepting = False
        await asyncio.to_thread(daemon.stop, BIND_FAILED_STOP_S)
        raise
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    port = listener.port or config.server.port
    settle_garbage_collector()
    if not config.cluster.address and port != config.server.port:  # port 0: now known
        await asyncio.to_thread(daemon.listening, node_address(config.server.host, port))
    serving_at = f"serving http://{config.server.host}:{port}"
    ready(f"relayd: {serving_at} "
          f"(data in {config.server.data_dir}, {len(config.models)} models)")
    if notify is not None:  # listening, actors started: it accepts work
        notify.send(message(READY=1, STATUS=serving_at))
    await stop.wait()
    if notify is not None:
        notify.send(message(STOPPING=1, STATUS="draining"))
    services.accepting = False
    await asyncio.to_thread(daemon.stop)
    await listener.close()
    if (death := daemon.health.death) is not None:
        log.error("exiting with status %d: %s died", EX_SOFTWARE, ", ".join(death.parts))
        return EX_SOFTWARE
    return 0
