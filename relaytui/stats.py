"""The workspace at a glance, as the jobs screen's header reads it: `GET /v1/stats` read
into a `WorkspaceStats` (rows finished per bucket, each model's error rates and latency,
the models failing now, tokens and cost, the queue by priority), and `StatsWatch`, which
asks every 5 s in one thread and posts what changed. How they are told: `stats_text.py`.
No Textual here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from relaytui.client import RelayError
from relaytui.models import JobView, parse_time
from relaytui.watch import Watch

EVERY_S = 5.0
WINDOWS = (15, 60, 360, 1440)  # minutes of history, in the order `w` goes through them
DEFAULT_MINUTES = 60
ERROR_CLASSES = ("429", "5xx", "timeout", "connection", "other")
# relayd's own words, for a failing model that comes without its `message`
_WORDS = {"429": "429 rate limits", "5xx": "5xx errors", "timeout": "timeouts",
          "connection": "connection errors", "other": "other errors"}


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _float(value: Any) -> float:
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def _maybe_int(value: Any) -> int | None:
    return None if value is None else _int(value)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


@dataclass(frozen=True)
class ModelHealth:
    """One model's upstream attempts in the window: how many, the share of them that
    met each error class (`ERROR_CLASSES`), and the latency of its successes."""

    model: str
    attempts: int = 0
    rates: tuple[float, ...] = (0.0,) * len(ERROR_CLASSES)
    p50_ms: int | None = None
    p95_ms: int | None = None
    concurrency: int | None = None  # allowed in flight now (adaptive), of `max_concurrency`
    max_concurrency: int | None = None
    paused: bool = False  # a 429 paused the model's dispatch

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> ModelHealth:
        rates, latency = answer.get("error_rates") or {}, answer.get("latency_ms") or {}
        dispatch = answer.get("dispatch")
        dispatch = dispatch if isinstance(dispatch, dict) else {}
        return cls(str(answer.get("model") or "?"), _int(answer.get("attempts")),
                   tuple(_float(rates.get(c)) for c in ERROR_CLASSES),
                   _maybe_int(latency.get("p50")), _maybe_int(latency.get("p95")),
                   _maybe_int(dispatch.get("concurrency")),
                   _maybe_int(dispatch.get("max_concurrency")), dispatch.get("paused") is True)

    @property
    def concurrency_text(self) -> str:
        """`16/64`: the concurrency allowed now of the most; `—` when not told."""
        if self.concurrency is None:
            return "—"
        most = f"/{self.max_concurrency}" if self.max_concurrency is not None else ""
        return f"{self.concurrency}{most}"

    @property
    def error_share(self) -> float:
        return min(sum(self.rates), 1.0)


@dataclass(frozen=True)
class Failing:
    """A model failing now: most of its recent attempts failed for the upstream's sake."""

    model: str
    error: str
    share: float
    attempts: int
    message: str  # relayd's words: "gpt-4o-mini: 100% connection errors"

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> Failing:
        model, error = str(answer.get("model") or "?"), str(answer.get("error") or "other")
        share = _float(answer.get("share"))
        message = answer.get("message") or \
            f"{model}: {round(share * 100)}% {_WORDS.get(error, error + ' errors')}"
        return cls(model, error, share, _int(answer.get("attempts")), str(message))


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @classmethod
    def from_answer(cls, answer: Any) -> Usage:
        if not isinstance(answer, dict):
            return cls()
        cost = answer.get("cost_usd")
        if cost is None:
            cost = _int(answer.get("cost_nano_usd")) / 1e9
        return cls(_int(answer.get("input_tokens")), _int(answer.get("output_tokens")),
                   _float(cost))

    @classmethod
    def of_job(cls, job: JobView) -> Usage | None:
        """A job's own tokens and cost; None when it was not told them."""
        if job.cost_nano_usd is None:
            return None
        return cls(job.input_tokens or 0, job.output_tokens or 0, job.cost_nano_usd / 1e9)


@dataclass(frozen=True)
class QueueLevel:
    """Jobs waiting to run at one priority, and the rows they hold."""

    priority: int
    jobs: int
    rows: int


@dataclass(frozen=True)
class BudgetUse:
    """The workspace's budget against its spend this period (`/v1/stats`' `budget`)."""

    usd: float
    spent_usd: float
    period: str  # month, day or none
    spent: bool  # its batches are paused until it is raised or the period rolls over

    @classmethod
    def from_answer(cls, answer: Any) -> BudgetUse | None:
        if not isinstance(answer, dict):
            return None
        return cls(usd=_float(answer.get("usd")), spent_usd=_float(answer.get("spent_usd")),
                   period=str(answer.get("period") or "none"), spent=bool(answer.get("spent")))


@dataclass(frozen=True)
class WorkspaceStats:
    """One answer of `GET /v1/stats`. Two answers that differ only in when they were
    made are equal (the watch posts changes)."""

    minutes: int = DEFAULT_MINUTES
    since: float | None = None
    bucket_s: int = 60
    completed: tuple[int, ...] = ()  # rows completed in each bucket, oldest first
    failed: tuple[int, ...] = ()
    models: tuple[ModelHealth, ...] = ()
    failing: tuple[Failing, ...] = ()
    total: Usage = Usage()  # every job of the workspace, so far
    jobs: tuple[tuple[str, Usage], ...] = ()  # (job id, its usage): the window's jobs
    queue: tuple[QueueLevel, ...] = ()
    budget: BudgetUse | None = None  # None: the workspace has no budget
    generated_at: float | None = field(default=None, compare=False)

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> WorkspaceStats:
        window, usage = answer.get("window") or {}, answer.get("usage") or {}
        points = _dicts(answer.get("throughput"))
        return cls(
            minutes=_int(window.get("minutes")) or DEFAULT_MINUTES,
            since=parse_time(window.get("since")),
            bucket_s=max(_int(window.get("bucket_seconds")), 1),
            completed=tuple(_int(p.get("completed")) for p in points),
            failed=tuple(_int(p.get("failed")) for p in points),
            models=tuple(ModelHealth.from_answer(m) for m in _dicts(answer.get("models"))),
            failing=tuple(Failing.from_answer(f) for f in _dicts(answer.get("failing"))),
            total=Usage.from_answer(usage.get("total")),
            jobs=tuple((str(j.get("id")), Usage.from_answer(j))
                       for j in _dicts(usage.get("jobs"))),
            queue=tuple(QueueLevel(_int(q.get("priority")), _int(q.get("jobs")),
                                   _int(q.get("rows"))) for q in _dicts(answer.get("queue"))),
            budget=BudgetUse.from_answer(answer.get("budget")),
            generated_at=parse_time(answer.get("generated_at")))

    @property
    def quiet(self) -> bool:
        """No row finished in the window (so no upstream call is counted in it)."""
        return not self.models and not any(self.completed) and not any(self.failed)

    def lags(self, before: JobView | None, after: JobView) -> bool:
        """This answer says no row finished in the window while a job's rows just ran:
        relayd made it before they did (the watch asks every few seconds; the live feed
        is faster). The header should not contradict the table for long: ask again."""
        return self.quiet and after.ran > (before.ran if before is not None else 0)

    def usage_of(self, job_id: str) -> Usage | None:
        """A job's tokens and cost; None for a job that is not in the window."""
        return next((usage for found, usage in self.jobs if found == job_id), None)

    def per_minute(self, counts: Sequence[int]) -> list[float]:
        """Rows per bucket told as rows per minute."""
        return [n * 60 / self.bucket_s for n in counts]

    def models_in_order(self) -> list[ModelHealth]:
        """The failing models first (worst first), then the others by name."""
        failing = [f.model for f in self.failing]
        return sorted(self.models, key=lambda m: (
            failing.index(m.model) if m.model in failing else len(failing), m.model))


# -- the watch ----------------------------------------------------------------------------


class Source(Protocol):
    """What the watch needs of `RelayClient`."""

    def stats(self, *, minutes: int | None = None) -> dict[str, Any]: ...


class StatsWatch(Watch[WorkspaceStats | None]):
    """`GET /v1/stats?minutes=…` every `every` seconds; posts a `WorkspaceStats` when it
    changed, or None when relayd has no such route (an older relayd: no header)."""

    def __init__(self, client: Source, post: Callable[[WorkspaceStats | None], object], *,
                 every: float = EVERY_S, minutes: int = DEFAULT_MINUTES) -> None:
        super().__init__(self._ask, post, every=every)
        self.client, self.minutes = client, minutes

    def _ask(self) -> WorkspaceStats | None:
        try:
            return WorkspaceStats.from_answer(self.client.stats(minutes=self.minutes))
        except RelayError as exc:
            if exc.status == 404:
                return None
            raise

    def next_window(self) -> int:
        """The next window of `WINDOWS` (thread-safe: asked at once, in the watch's thread)."""
        later = [m for m in WINDOWS if m > self.minutes]
        self.minutes = later[0] if later else WINDOWS[0]
        self.ask_now()
        return self.minutes
