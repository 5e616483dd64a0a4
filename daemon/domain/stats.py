"""What the operator's numbers mean: how an upstream attempt's failure is classed, when
a model counts as failing, and the workspace's stats view (`GET /v1/stats`) built from
the store's aggregates. No I/O: the store sums, this page decides and renders.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from daemon.domain.stamps import iso

OK = "ok"
ERROR_CLASSES = ("429", "5xx", "timeout", "connection", "other")
UPSTREAM_FAULTS = ERROR_CLASSES[:4]  # what says the model, not the row, is failing
_WORDS = {"429": "429 rate limits", "5xx": "5xx errors", "timeout": "timeouts",
          "connection": "connection errors", "other": "other errors"}

FAILING_WINDOW_S = 300  # "failing now" looks at the rows finished in the last 5 minutes
FAILING_MIN_ATTEMPTS = 3  # fewer attempts than this say nothing yet
FAILING_SHARE = 0.5  # a model is failing when at least half its attempts failed


def attempt_class(status_code: int | None, error: str | None) -> str:
    """One attempt's outcome: ok, or which failure (the router writes a call that got
    no answer as "timeout: …" or "connection: …")."""
    if error is None:
        return OK
    if status_code == 429:
        return "429"
    if status_code is not None and 500 <= status_code <= 599:
        return "5xx"
    if status_code is None and error.startswith(("timeout", "connection")):
        return error.split(":", 1)[0]
    return "other"


@dataclass(frozen=True)
class AttemptCount:
    """How many attempts on `model` came to `outcome` (ok or an error class)."""

    model: str
    outcome: str
    n: int


@dataclass(frozen=True)
class Latency:
    """A model's latency over its successful attempts, in milliseconds."""

    model: str
    p50_ms: int
    p95_ms: int
    samples: int


@dataclass(frozen=True)
class Usage:
    """Tokens and cost, so far."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_nano_usd: int = 0


@dataclass(frozen=True)
class JobUsage:
    id: str
    name: str
    model: str
    usage: Usage


@dataclass(frozen=True)
class QueueDepth:
    """Jobs waiting to run at one priority, and the rows they hold."""

    priority: int
    jobs: int
    rows: int


@dataclass(frozen=True)
class WorkspaceStats:
    """The store's aggregates for one workspace, as `GET /v1/stats` reads them."""

    now: float
    since: float
    bucket_s: int
    throughput: Sequence[tuple[int, int, int]]  # (bucket index, completed, failed)
    attempts: Sequence[AttemptCount]
    recent: Sequence[AttemptCount]  # the last FAILING_WINDOW_S
    latencies: Sequence[Latency]
    jobs: Sequence[JobUsage]  # the window's jobs, newest first
    total: Usage  # every job of the workspace, summed
    queue: Sequence[QueueDepth] = field(default_factory=tuple)
    outputs: tuple[int, int, int] = (0, 0, 0)  # checked answers: valid, repaired, invalid


@dataclass(frozen=True)
class AttemptSample:
    """One upstream attempt, as `/metrics` reads the attempt log past its last mark."""

    id: int
    workspace: str
    model: str
    outcome: str  # ok or an error class
    duration_ms: int
    retry: bool  # the row had tried this model before


@dataclass(frozen=True)
class DaemonCounts:
    """What `/metrics` reads from the job table at each scrape, per workspace name."""

    jobs: Sequence[tuple[str, str, int]] = ()  # (workspace, status, jobs)
    queue: Sequence[tuple[str, int, int, int]] = ()  # (workspace, priority, jobs, rows)
    rows: Sequence[tuple[str, str, str, int]] = ()  # (workspace, model, outcome, rows)
    pending: Sequence[tuple[str, int]] = ()  # (workspace, rows left in running jobs)
    webhooks: Sequence[tuple[str, str, int]] = ()  # (workspace, delivered|failed|pending, n)
    # (workspace, period, budget, spent this period), nano-USD, of those with a budget
    budgets: Sequence[tuple[str, str, int, int]] = ()
    outputs: Sequence[tuple[str, str, int]] = ()  # (workspace, valid|repaired|invalid, n)


@dataclass(frozen=True)
class Failing:
    model: str
    error: str  # the error class most of its attempts met
    share: float  # of all its recent attempts
    attempts: int

    @property
    def message(self) -> str:
        return f"{self.model}: {round(self.share * 100)}% {_WORDS[self.error]}"


def by_model(counts: Iterable[AttemptCount]) -> dict[str, dict[str, int]]:
    """model -> {ok, 429, 5xx, timeout, connection, other}, every class present."""
    found: dict[str, dict[str, int]] = {}
    for c in counts:
        found.setdefault(c.model, dict.fromkeys((OK, *ERROR_CLASSES), 0))[c.outcome] += c.n
    return found


def failing(recent: Iterable[AttemptCount]) -> list[Failing]:
    """The models failing now: enough recent attempts, at least FAILING_SHARE of them
    failed for the upstream's sake (429, 5xx, timeout, connection: a 400 is the row's
    fault, not the model's); named by the failure most of them met. Worst first."""
    found = []
    for model, counts in by_model(recent).items():
        total = sum(counts.values())
        failed = sum(counts[c] for c in UPSTREAM_FAULTS)
        if total < FAILING_MIN_ATTEMPTS or failed < total * FAILING_SHARE:
            continue
        worst = max(UPSTREAM_FAULTS, key=lambda c: counts[c])
        found.append(Failing(model, worst, counts[worst] / total, total))
    return sorted(found, key=lambda f: (-f.share, f.model))


def render(stats: WorkspaceStats, workspace: str,
           gates: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The stats view of one workspace; `gates` are the models' dispatch states now
    (the router's, shared by every workspace: concurrency, pause, limits)."""
    latency = {lat.model: lat for lat in stats.latencies}
    gates = gates or {}
    return {
        "object": "stats",
        "workspace": workspace,
        "generated_at": iso(stats.now),
        "window": {"since": iso(stats.since), "minutes": round((stats.now - stats.since) / 60),
                   "bucket_seconds": stats.bucket_s},
        "throughput": _throughput(stats),
        "models": [_model(model, counts, latency.get(model)) | _gate(gates.get(model))
                   for model, counts in sorted(by_model(stats.attempts).items())],
        "failing": [{"model": f.model, "error": f.error, "share": round(f.share, 4),
                     "attempts": f.attempts, "message": f.message}
                    for f in failing(stats.recent)],
        "usage": {"total": _usage(stats.total),
                  "jobs": [{"id": j.id, "name": j.name, "model": j.model, **_usage(j.usage)}
                           for j in stats.jobs]},
        "outputs": dict(zip(("valid", "repaired", "invalid"), stats.outputs, strict=True)),
        "queue": [{"priority": q.priority, "jobs": q.jobs, "rows": q.rows}
                  for q in stats.queue],
    }


def _throughput(stats: WorkspaceStats) -> list[dict[str, Any]]:
    """One point per bucket of the window, the empty ones too (a plot needs them)."""
    buckets = max(1, round((stats.now - stats.since) / stats.bucket_s))
    counted = {index: (completed, failed) for index, completed, failed in stats.throughput}
    return [{"at": iso(stats.since + i * stats.bucket_s),
             "completed": counted.get(i, (0, 0))[0], "failed": counted.get(i, (0, 0))[1]}
            for i in range(buckets)]


def _model(model: str, counts: dict[str, int], latency: Latency | None) -> dict[str, Any]:
    total = sum(counts.values())
    return {
        "model": model,
        "attempts": total,
        "errors": {c: counts[c] for c in ERROR_CLASSES},
        "error_rates": {c: round(counts[c] / total, 4) if total else 0.0
                        for c in ERROR_CLASSES},
        "latency_ms": {"p50": latency.p50_ms if latency else None,
                       "p95": latency.p95_ms if latency else None,
                       "samples": latency.samples if latency else 0},
    }


def _gate(state: dict[str, Any] | None) -> dict[str, Any]:
    """`dispatch`: what `GET /v1/models` says of the model's state, with ISO times."""
    if state is None:
        return {}
    paused_until = state.get("paused_until")
    return {"dispatch": {**state, "paused_until": iso(paused_until) if paused_until else None}}


def _usage(usage: Usage) -> dict[str, Any]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cost_nano_usd": usage.cost_nano_usd, "cost_usd": usage.cost_nano_usd / 1e9}
