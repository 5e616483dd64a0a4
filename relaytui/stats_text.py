"""The workspace stats told as the header shows them: the failing banner's words, short
numbers (percentages, latency, tokens, cost), the queue, the narrow header's two lines,
and the plot's rate scale and time ticks. Pure: no Textual."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from relaytui.models import clock_text
from relaytui.stats import BudgetUse, Failing, QueueLevel, Usage, WorkspaceStats

ERROR_HEADINGS = ("429", "5xx", "t/o", "conn", "other")  # the header's column names


def banner(failing: Iterable[Failing], *, attempts: bool = True) -> str:
    """`✗ gpt-4o-mini: 100% connection errors (6 recent attempts) · …` ("" if none);
    without `attempts`, the shorter `✗ gpt-4o-mini: 100% connection errors · …`."""
    return " · ".join(f"✗ {f.message}"
                      + (f" ({_plural(f.attempts, 'recent attempt')})" if attempts else "")
                      for f in failing)


def failing_changes(before: WorkspaceStats | None,
                    after: WorkspaceStats | None) -> tuple[list[Failing], list[str]]:
    """The models that started failing, and those that stopped, between two answers."""
    was = {f.model for f in before.failing} if before else set()
    now = {f.model: f for f in after.failing} if after else {}
    return ([f for model, f in now.items() if model not in was],
            sorted(was - now.keys()))


def percent(share: float) -> str:
    """`0%`, `<1%`, `12%`, `100%`."""
    if share <= 0:
        return "0%"
    return "<1%" if share < 0.005 else f"{round(share * 100)}%"


def latency_text(ms: int | None) -> str:
    """`410ms`, `1.2s`, `12s`; `—` without a sample."""
    if ms is None:
        return "—"
    if ms < 1000:
        return f"{ms}ms"
    return f"{ms / 1000:.1f}s" if ms < 10_000 else f"{round(ms / 1000)}s"


def count_text(n: float) -> str:
    """`950`, `1.2k`, `12k`, `1.2M`, `34M`: short numbers for tokens and rates."""
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 10 else f"{round(value)}{unit}"
    return f"{n:.0f}" if n >= 10 or n == int(n) else f"{n:.1f}"


def cost_text(usd: float) -> str:
    """`$1,234`, `$12.34`, `$0.42`, `$0.017`, `$0.0021`: cents from a dollar up, two
    significant digits below."""
    if usd >= 1000:
        return f"${usd:,.0f}"
    if usd >= 1 or usd <= 0:
        return f"${max(usd, 0):.2f}"
    digits = max(2, 1 - math.floor(math.log10(usd)))
    return f"${usd:.{digits}f}"


def budget_text(budget: BudgetUse) -> str:
    """`$3.20 of $500 this month`, `… · spent: paused` once it is spent."""
    per = {"month": " this month", "day": " today"}.get(budget.period, "")
    text = f"{cost_text(budget.spent_usd)} of {cost_text(budget.usd)}{per}"
    return text + " · spent: paused" if budget.spent else text


def tokens_text(usage: Usage) -> str:
    """`1.2M in · 340k out tokens`."""
    return f"{count_text(usage.input_tokens)} in · {count_text(usage.output_tokens)} out tokens"


def queue_text(queue: Sequence[QueueLevel]) -> list[str]:
    """One line per priority, highest first: `p5  2 jobs · 3 rows`; `empty` for none."""
    if not queue:
        return ["empty"]
    return [f"p{q.priority}  {_plural(q.jobs, 'job')} · {_plural(q.rows, 'row')}"
            for q in sorted(queue, key=lambda q: -q.priority)]


def window_text(minutes: int) -> str:
    """`15 min`, `60 min`, `6 h`, `24 h`."""
    return f"{minutes} min" if minutes <= 60 or minutes % 60 else f"{minutes // 60} h"


def summary_line(stats: WorkspaceStats) -> str:
    """The narrow header's first line: rows done and failed in the window, rows per
    minute now, cost so far, jobs queued, tokens so far (what 80 columns cut first)."""
    now = stats.per_minute(stats.completed[-1:])
    queued = sum(q.jobs for q in stats.queue)
    total = stats.total
    return " · ".join([
        f"{window_text(stats.minutes)}: {sum(stats.completed):,} done, "
        f"{sum(stats.failed):,} failed", f"{count_text(now[0] if now else 0)}/min now",
        cost_text(total.cost_usd)
        + (f" (budget {budget_text(stats.budget)})" if stats.budget else ""),
        f"{queued:,} queued" if queued else "queue empty",
        f"{count_text(total.input_tokens + total.output_tokens)} tokens"])


def models_line(stats: WorkspaceStats) -> str:
    """The narrow header's second line: each model's errors and p95, failing first."""
    if not stats.models:
        return empty_models_text(stats)
    return " · ".join(f"{m.model} {percent(m.error_share)} err p95 {latency_text(m.p95_ms)}"
                      + (" paused" if m.paused else "")
                      for m in stats.models_in_order())


def empty_models_text(stats: WorkspaceStats) -> str:
    """The models part with no model in it, saying when relayd counted: the header is
    asked every few seconds, the jobs table moves with every event."""
    when = f" as of {clock_text(stats.generated_at)[11:]}" if stats.generated_at else ""
    if stats.quiet:
        return f"no row finished in the window{when}"
    return f"no upstream calls in the window{when}"


def nonzero_runs(values: Sequence[float]) -> list[list[int]]:
    """The indices of each run of non-zero values: the plot draws only these, so a quiet
    minute is blank rather than a line along the axis."""
    runs: list[list[int]] = []
    for i, value in enumerate(values):
        if not value:
            continue
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


_TICK_MINUTES = (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720)


def clock_ticks(stats: WorkspaceStats, most: int) -> tuple[list[float], list[str]]:
    """Ticks for the plot's time axis, at most `most`: round UTC times (every 15 min in an
    hour, every 3 h in a day) as `HH:MM`, placed in buckets from the window's start."""
    buckets = len(stats.completed)
    if buckets == 0 or stats.since is None or most < 1:
        return [], []
    since, span = stats.since, buckets * stats.bucket_s
    every = next((m * 60 for m in _TICK_MINUTES if span / (m * 60) <= most), span)
    first = math.ceil(since / every) * every
    at = [first + k * every for k in range(int((since + span - first) // every) + 1)
          if first + k * every < since + span]
    return ([(t - since) / stats.bucket_s for t in at],
            [datetime.fromtimestamp(t, UTC).strftime("%H:%M") for t in at])


def scale(top: float, *, steps: int = 4) -> tuple[float, list[float]]:
    """A y axis from 0 past `top` in at most `steps` round steps (1, 2 or 5 × 10ⁿ):
    its end and its ticks. An empty window still gets an axis (0 to 1)."""
    if top <= 0:
        return 1.0, [0.0, 1.0]
    rough = top / steps
    power = 10 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= rough)
    count = math.ceil(round(top / step, 9))
    return round(step * count, 9), [round(step * i, 9) for i in range(count + 1)]


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"
