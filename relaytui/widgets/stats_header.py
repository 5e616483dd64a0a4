"""The jobs screen's header: the workspace at a glance from `GET /v1/stats`. Wide, a
plot of rows finished per minute (plotext, with its axes), each model's error rates and
latency, and tokens, cost and the queue; narrower, the last three go to the border's
foot; in a small terminal, two lines of text and no plot."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.color import Color
from textual.containers import Horizontal, Vertical
from textual.markup import escape
from textual.widgets import Static
from textual_plotext import PlotextPlot

from relaytui.models import clock_text
from relaytui.stats import BudgetUse, ModelHealth, WorkspaceStats
from relaytui.stats_text import (
    ERROR_HEADINGS,
    budget_text,
    clock_ticks,
    cost_text,
    count_text,
    empty_models_text,
    latency_text,
    models_line,
    nonzero_runs,
    percent,
    queue_text,
    scale,
    summary_line,
    tokens_text,
    window_text,
)

WIDE_FROM, MEDIUM_FROM, TALL_FROM = 140, 110, 34  # columns, columns, lines
MODEL_WIDTH = 14  # the model column; longer names are cut with an ellipsis
QUEUE_LINES = 3  # priorities listed before `…`


def header_mode(width: int, height: int) -> str:
    """wide: plot, models, usage; medium: plot and models, usage in the border's foot;
    narrow (or short): two lines of text."""
    if height < TALL_FROM or width < MEDIUM_FROM:
        return "narrow"
    return "wide" if width >= WIDE_FROM else "medium"


class ThroughputPlot(PlotextPlot):
    """Rows completed (and failed, when any did) per minute over the window."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.stats: WorkspaceStats | None = None

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.replot())

    def show(self, stats: WorkspaceStats | None) -> None:
        self.stats = stats
        self.replot()

    def on_resize(self) -> None:
        self.replot()  # the ticks depend on the room

    def replot(self) -> None:
        plt, stats = self.plt, self.stats
        self.theme = "clear" if self._ansi() else "auto"  # "auto" reads RGB themes only
        plt.clear_figure()
        if stats is not None and stats.completed and self.size.width:
            xs = list(range(len(stats.completed)))
            done, failed = stats.per_minute(stats.completed), stats.per_minute(stats.failed)
            top, ticks = scale(max(done + failed), steps=max(1, min(4, self.size.height - 3)))
            for run in nonzero_runs(done):  # an area for each stretch of work
                plt.plot(run, [done[i] for i in run], marker="hd", fillx=True,
                         color=self._colour("success"))
            lost = [(x, n) for x, n in zip(xs, failed, strict=True) if n]
            if lost:  # a dot at each minute with failures, over the area of completions
                plt.scatter(*zip(*lost, strict=True), marker="•", color=self._colour("error"))
            plt.ylim(0, top)
            plt.yticks(ticks, [count_text(t) for t in ticks])
            plt.xlim(0, max(len(xs) - 1, 1))
            plt.xticks(*clock_ticks(stats, max(2, self.size.width // 10)))
            plt.xaxes(True, False)
            plt.yaxes(True, False)
        self.refresh()

    def _ansi(self) -> bool:
        """An ANSI theme: the terminal's own colours (plotext's "clear" theme uses them)."""
        try:
            return Color.parse(self.app.theme_variables["foreground"]).ansi is not None
        except Exception:
            return False

    def _colour(self, variable: str) -> Any:
        """The theme's colour as plotext takes it: the terminal's own colour number in
        an ANSI theme, else RGB."""
        try:
            colour = Color.parse(self.app.theme_variables[variable])
        except Exception:  # "auto 60%" and the like
            return "green" if variable == "success" else "red"
        return colour.ansi if colour.ansi is not None else colour.rgb


class StatsHeader(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.stats: WorkspaceStats | None = None
        self.mode = "wide"
        self.stale_since: float | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="stats-wide"):
            with Vertical(id="stats-plot"):
                yield Static(id="stats-legend")
                yield ThroughputPlot(id="throughput")
            yield Static(id="stats-models")
            yield Static(id="stats-usage")
        yield Static(id="stats-lines")

    def on_mount(self) -> None:
        self.set_class(True, f"-{self.mode}")
        self.display = False  # until the first answer
        self._draw()

    def show(self, stats: WorkspaceStats | None) -> None:
        """A new answer; None: relayd has no stats (the header leaves)."""
        self.stats = stats
        self.display = stats is not None
        self.query_one(ThroughputPlot).show(stats)
        self._draw()

    def set_mode(self, mode: str) -> None:
        if mode != self.mode:
            self.remove_class(f"-{self.mode}")
            self.mode = mode
            self.add_class(f"-{mode}")
            self._draw()

    def set_stale(self, since: float | None) -> None:
        """relayd cannot be reached: the numbers are the last it gave, dimmed and titled."""
        self.stale_since = since
        self.set_class(since is not None, "-stale")
        self._draw()

    def _draw(self) -> None:
        stats = self.stats
        if stats is None:
            return
        stale = f" · stale since {clock_text(self.stale_since)[11:]}" \
            if self.stale_since is not None else ""
        self.border_title = (f"Workspace · last {window_text(stats.minutes)} · as of "
                             f"{clock_text(stats.generated_at)[11:]}{stale}")
        self.border_subtitle = escape(self._usage_line(stats)) if self.mode == "medium" else ""
        self.query_one("#stats-legend", Static).update(_legend(stats))
        self.query_one("#stats-models", Static).update(_models(stats))
        self.query_one("#stats-usage", Static).update(_usage(stats))
        lines = summary_line(stats) + "\n" + models_line(stats)
        if self.stale_since is not None:
            lines = f"[$text-error]stale[/] {escape(lines)}"
        else:
            lines = escape(lines)
        self.query_one("#stats-lines", Static).update(lines)

    @staticmethod
    def _usage_line(stats: WorkspaceStats) -> str:
        total = stats.total
        queue = " · ".join(queue_text(stats.queue))
        budget = f" · budget {budget_text(stats.budget)}" if stats.budget else ""
        return (f"{cost_text(total.cost_usd)} so far{budget} · {tokens_text(total)} · "
                f"queue {queue}")


def _legend(stats: WorkspaceStats) -> str:
    done, failed = sum(stats.completed), sum(stats.failed)
    now = stats.per_minute(stats.completed[-1:])
    return (f"[b]rows/min[/b] [dim]now[/dim] {count_text(now[0] if now else 0)}   "
            f"[$success]█[/] completed {done:,}   [$error]•[/] failed {failed:,}")


def _models(stats: WorkspaceStats) -> str:
    heading = (f"{'model':<{MODEL_WIDTH}} {'calls':>6}"
               + "".join(f"{h:>6}" for h in ERROR_HEADINGS) + f"{'p50':>7}{'p95':>7}"
               + f"{'conc':>7}")
    lines = [f"[b]{heading}[/b]"]
    failing = {f.model for f in stats.failing}
    for model in stats.models_in_order():
        lines.append(_model_row(model, model.model in failing))
    if not stats.models:
        lines.append(f"[dim]{escape(empty_models_text(stats))}[/dim]")
    return "\n".join(lines)


def _model_row(model: ModelHealth, failing: bool) -> str:
    name = model.model if len(model.model) <= MODEL_WIDTH \
        else model.model[:MODEL_WIDTH - 1] + "…"
    name = escape(f"{name:<{MODEL_WIDTH}}")
    if failing:
        name = f"[b $text-error]{name}[/]"
    rates = "".join(_rate(share) for share in model.rates)
    conc = f"{model.concurrency_text:>7}"
    if model.paused:  # the upstream said wait: the model's dispatch is paused
        conc = f"[b $text-warning]{'‖ ' + model.concurrency_text:>7}[/]"
    return (f"{name} {model.attempts:>6,}{rates}"
            f"{latency_text(model.p50_ms):>7}{latency_text(model.p95_ms):>7}{conc}")


def _rate(share: float) -> str:
    text = f"{percent(share):>6}"
    if share <= 0:
        return f"[dim]{text}[/dim]"
    return f"[$text-error]{text}[/]" if share >= 0.25 else f"[$text-warning]{text}[/]"


def _budget(budget: BudgetUse) -> str:
    text = escape(budget_text(budget))
    return f"[dim]budget[/dim] [b $text-warning]{text}[/]" if budget.spent \
        else f"[dim]budget[/dim] {text}"


def _usage(stats: WorkspaceStats) -> str:
    total = stats.total
    queue = queue_text(stats.queue)
    if len(queue) > QUEUE_LINES:
        queue = [*queue[:QUEUE_LINES - 1], "…"]
    lines = [f"[dim]cost  [/dim] [b]{cost_text(total.cost_usd)}[/b] so far",
             *([_budget(stats.budget)] if stats.budget else []),
             f"[dim]tokens[/dim] {count_text(total.input_tokens)} in · "
             f"{count_text(total.output_tokens)} out",
             f"[dim]queue [/dim] {escape(queue[0])}",
             *(f"       {escape(line)}" for line in queue[1:])]
    return "\n".join(lines)

