"""The Prometheus series of `GET /metrics` (daemon/api/metrics.py serves them).

Most numbers are read from the store when Prometheus scrapes (the store is the
source of truth): jobs by status, queue depth, rows by outcome, webhooks from the
job table (`ScrapedCounts`), and upstream attempts from the attempt log past the
last scrape's mark (`Meters.feed`: latency histogram, outcomes, retries). What the
store does not hold is counted here as it happens, by wrappers the wiring puts
around the executors (`MeteredExecutor`: rows in flight, rows ended by a bug;
`MeteredToolCaller`: tool executor calls). Labels are model and outcome, and workspace
only when `[metrics] per_workspace` is on. Each daemon has its own registry.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from daemon.domain.jobs import STATUSES, RowWork
from daemon.domain.outcome import RowOutcome
from daemon.domain.output_check import OUTCOMES
from daemon.domain.stats import OK, AttemptSample, DaemonCounts
from daemon.domain.tool_config import ToolConfig
from daemon.executors import RowExecutor
from daemon.executors.lane import Lane, Paused
from daemon.executors.tool_loop import ToolCaller, ToolCallFailed, ToolRequest, ToolResult

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
TAIL_MOST = 50_000  # attempts read per scrape; the rest wait for the next one


class ScrapedCounts(Collector):
    """The job table's numbers, as read for the scrape under way."""

    def __init__(self, *, per_workspace: bool) -> None:
        self.per_workspace = per_workspace
        self.latest = DaemonCounts()

    def collect(self) -> Iterator[Metric]:
        counts = self.latest
        jobs = self._family(GaugeMetricFamily, "relay_jobs", "Jobs by status.", ["status"],
                            [((s,), 0) for s in STATUSES]
                            + [((status,), n, ws) for ws, status, n in counts.jobs])
        queue_jobs = self._family(GaugeMetricFamily, "relay_queue_jobs",
                                  "Jobs waiting to run (validating or queued), by priority.",
                                  ["priority"], [((str(p),), n, ws)
                                                 for ws, p, n, _ in counts.queue])
        queue_rows = self._family(GaugeMetricFamily, "relay_queue_rows",
                                  "Rows of the jobs waiting to run, by priority.", ["priority"],
                                  [((str(p),), rows, ws) for ws, p, _, rows in counts.queue])
        rows = self._family(CounterMetricFamily, "relay_rows",
                            "Rows ended, by the job's model and outcome (completed, failed, "
                            "dead_letter; a dead-lettered row is not also counted failed).",
                            ["model", "outcome"],
                            [((model, outcome), n, ws) for ws, model, outcome, n in counts.rows])
        pending = self._family(GaugeMetricFamily, "relay_rows_pending",
                               "Rows of running jobs not finished yet.", [],
                               [((), n, ws) for ws, n in counts.pending])
        hooks = self._family(CounterMetricFamily, "relay_webhook_deliveries",
                             "Completion webhooks by outcome (delivered, failed, pending).",
                             ["outcome"], [((o,), n, ws) for ws, o, n in counts.webhooks])
        spend = GaugeMetricFamily(
            "relay_workspace_spend_nano_usd", "What each workspace with a budget spent in "
            "its current period (every node's spend), in nano-USD.",
            labels=["workspace", "period"])
        budget = GaugeMetricFamily(
            "relay_workspace_budget_nano_usd", "Each workspace's budget for its period, in "
            "nano-USD (`relayd workspaces budget`).", labels=["workspace", "period"])
        for ws, period, nano, spent in counts.budgets:  # per workspace, whatever the flag
            spend.add_metric([ws, period], spent)
            budget.add_metric([ws, period], nano)
        outputs = self._family(CounterMetricFamily, "relay_output_validation",
                               "Checked answers (a JSON schema or json_object) by outcome: "
                               "valid at once, repaired, still invalid (invalid_output).",
                               ["outcome"], [((o,), 0) for o in OUTCOMES]
                               + [((o,), n, ws) for ws, o, n in counts.outputs])
        yield from (jobs, queue_jobs, queue_rows, rows, pending, hooks, spend, budget, outputs)

    def _family(self, kind: type[GaugeMetricFamily | CounterMetricFamily], name: str,
                doc: str, labels: list[str], samples: Iterable[tuple[Any, ...]]) -> Metric:
        """Sums samples `(label values, value[, workspace])` over workspaces unless
        series are per workspace."""
        names = [*labels, "workspace"] if self.per_workspace else labels
        family = kind(name, doc, labels=names)
        summed: dict[tuple[str, ...], float] = defaultdict(float)
        for values, value, *ws in samples:
            if self.per_workspace and not ws:
                continue  # a zero placeholder only the daemon-wide series needs
            key = (*values, *ws) if self.per_workspace else tuple(values)
            summed[key] += value
        for key, value in summed.items():
            family.add_metric(list(key), value)
        return family


GAP_S = 60.0  # an attempt id missing this long was rolled back, not committed late


@dataclass
class AttemptMark:
    """Which attempts of the log are counted. Ids are handed out as attempts are
    inserted but become visible as their transactions commit, and on PostgreSQL those
    run side by side (every job writes on its own thread; nodes share the log): id 100
    can appear after id 120 was read. So the mark is the id up to which every attempt
    is counted; those counted past it are remembered, and an id still missing after
    `GAP_S` (a rolled-back write) is given up."""

    mark: int
    seen: set[int] = field(default_factory=set)
    missing: dict[int, float] = field(default_factory=dict)  # id -> when first missed

    def take(self, samples: Sequence[AttemptSample], now: float) -> list[AttemptSample]:
        """The samples (read past `mark`) not counted yet; moves the mark."""
        new = [s for s in samples if s.id > self.mark and s.id not in self.seen]
        self.seen.update(s.id for s in new)
        top = max(self.seen, default=self.mark)
        for missing in range(self.mark + 1, top):
            if missing not in self.seen:
                self.missing.setdefault(missing, now)
        while self.mark < top:
            after = self.mark + 1
            if after in self.seen:
                self.seen.discard(after)
            elif now - self.missing.get(after, now) < GAP_S:
                break
            self.missing.pop(after, None)
            self.mark = after
        return new


class RowsInFlight(Collector):
    """`relay_rows_in_flight`: rows being run now, by model. Counted on the I/O loop, where
    every row runs (a plain dict: a Prometheus gauge takes a lock twice a row), and
    read when Prometheus scrapes (a copy of a dict is one step for the interpreter)."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("relay_rows_in_flight", "Rows being run now, by model.",
                                   labels=["model"])
        for model, n in sorted(dict(self.rows).items()):
            family.add_metric([model], n)
        yield family


class Meters:
    """One daemon's series and the attempt log's mark."""

    def __init__(self, *, per_workspace: bool = False) -> None:
        self.per_workspace = per_workspace
        self.registry = CollectorRegistry(auto_describe=True)
        self.counts = ScrapedCounts(per_workspace=per_workspace)
        self.registry.register(self.counts)
        upstream = ["model", "workspace"] if per_workspace else ["model"]
        self.latency = Histogram(
            "relay_upstream_request_duration_seconds",
            "Upstream attempts' duration, by model (every attempt, answered or not).",
            upstream, buckets=LATENCY_BUCKETS, registry=self.registry)
        self.requests = Counter(
            "relay_upstream_requests", "Upstream attempts by model and outcome (ok, 429, "
            "5xx, timeout, connection, other).", [*upstream, "outcome"], registry=self.registry)
        self.retries = Counter(
            "relay_upstream_retries", "Upstream attempts that retried a model the row had "
            "tried before.", upstream, registry=self.registry)
        self.in_flight = RowsInFlight()
        self.registry.register(self.in_flight)
        self.executor_calls = Counter(
            "relay_executor_calls", "Tool executor calls by type (http, mcp) and outcome "
            "(ok, failed); a failed MCP discovery (tools/list) counts as failed.",
            ["type", "outcome"], registry=self.registry)
        self.internal_errors = Counter(
            "relay_internal_errors", "Rows ended internal_error: an executor raised, which is "
            "a bug in Relay (the traceback is in relayd's log).", registry=self.registry)
        self.store_writable = Gauge(
            "relay_store_writable", "1 while the store takes writes; 0 while a probe or a "
            "request meets a storage fault (then /healthz is 503 degraded).",
            registry=self.registry)
        self.attempts: AttemptMark | None = None  # from the start, or the first scrape
        self.lock = threading.Lock()

    def start_at(self, last_id: int) -> None:
        """Count the attempts after `last_id` (the log's last at this start)."""
        self.attempts = AttemptMark(last_id)

    @property
    def mark(self) -> int | None:
        """Every attempt up to this id is counted (None before counting starts)."""
        return None if self.attempts is None else self.attempts.mark

    def feed(self, samples: Sequence[AttemptSample], *, now: float) -> None:
        """Count attempts read from the log past the mark (one scrape's worth), each
        once; counting has started (`start_at`)."""
        assert self.attempts is not None, "start_at comes first"
        for a in self.attempts.take(samples, now):
            labels = (a.model, a.workspace) if self.per_workspace else (a.model,)
            self.latency.labels(*labels).observe(a.duration_ms / 1000)
            self.requests.labels(*labels, a.outcome).inc()
            if a.retry:
                self.retries.labels(*labels).inc()

    def exposition(self, counts: DaemonCounts) -> bytes:
        self.counts.latest = counts
        return generate_latest(self.registry)


class MeteredExecutor:
    """A row executor counted in `relay_rows_in_flight` while it runs a row, and in
    `relay_internal_errors_total` when it raises (the worker ends that row
    `internal_error`)."""

    def __init__(self, inner: RowExecutor, meters: Meters) -> None:
        self.inner = inner
        self.meters = meters

    async def run(self, work: RowWork, lane: Lane) -> RowOutcome:
        rows, model = self.meters.in_flight.rows, work.model
        rows[model] = rows.get(model, 0) + 1
        try:
            return await self.inner.run(work, lane)
        except Paused:  # its job was paused: the row is handed back, not an error
            raise
        except Exception:
            self.meters.internal_errors.inc()
            raise
        finally:
            rows[model] -= 1

    async def release(self, job_seq: int) -> None:
        release = getattr(self.inner, "release", None)
        if release is not None:
            await release(job_seq)


class MeteredToolCaller:
    """A tool executor whose calls are counted by type and outcome."""

    def __init__(self, inner: ToolCaller, meters: Meters) -> None:
        self.inner = inner
        self.meters = meters

    async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
        try:
            results = await self.inner.call(config, request)
        except ToolCallFailed:
            self.meters.executor_calls.labels(config.type, "failed").inc()
            raise
        self.meters.executor_calls.labels(config.type, OK).inc()
        return results

    async def tools(self, config: ToolConfig, *, job_seq: int) -> list[dict[str, Any]] | None:
        """Discovery (MCP `tools/list`): a failure is a failed call. A success is not
        counted, since most answers come from the session's cache, not the wire."""
        try:
            return await self.inner.tools(config, job_seq=job_seq)
        except ToolCallFailed:
            self.meters.executor_calls.labels(config.type, "failed").inc()
            raise

    async def release(self, job_seq: int) -> None:
        await self.inner.release(job_seq)
