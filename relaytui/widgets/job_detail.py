"""The detail pane of the selected job: counters, timestamps, error, a throughput
sparkline; and, fetched in the background, the webhook outcome, for a cron template
its expression, next run and recent runs, and for a job with workflow records their
counters (fetched again every few seconds while the job runs)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.markup import escape
from textual.timer import Timer
from textual.widgets import Sparkline, Static
from textual.worker import Worker

from relaytui.api import RelayApi
from relaytui.board import JobBoard
from relaytui.client import RelayError
from relaytui.models import (
    RUNNING,
    JobView,
    age_text,
    clock_text,
    duration_text,
    eta_seconds,
    next_run_text,
    rate_text,
)
from relaytui.repairs import outputs_line
from relaytui.stats import Usage, WorkspaceStats
from relaytui.stats_text import cost_text, tokens_text
from relaytui.widgets.failures import report_failure
from relaytui.widgets.job_table import LABELS
from relaytui.workflows import counters_text

RECENT_RUNS = 4  # as many as the pane has lines for
WORKFLOWS_EVERY = 5.0  # seconds between fetches of a running job's workflow counters
NARROW = 100  # below this many columns inside the pane: one column, no sparkline
GAP, DOT = "   ", " · "  # between facts on a line; between the parts of one fact

# A line of the pane: its facts (markup, each kept whole) and what goes between them.
Line = tuple[list[str], str]


def flow(lines: list[Line], width: int) -> str:
    """The pane's lines, each wrapped to `width` between its facts, never inside one
    (`webhook none set`, `priority std` stay whole); a wrapped line goes on indented.
    A fact wider than the line is left for the widget to fold."""
    out: list[str] = []
    for facts, sep in lines:
        line, used = "", 0
        for fact in facts:
            size = Content.from_markup(fact).cell_length
            if line and used + len(sep) + size > width:
                out.append(line)
                line, used = "  " + fact, 2 + size
            elif line:
                line, used = line + sep + fact, used + len(sep) + size
            else:
                line, used = fact, size
        out.append(line)
    return "\n".join(out)


class JobDetail(Vertical):
    def __init__(self, client: RelayApi, board: JobBoard, *, clock: Callable[[], float],
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.client, self.board, self.clock = client, board, clock
        self.job_id: str | None = None
        self.loaded_id: str | None = None
        self._fetched: JobView | None = None
        self._runs: list[JobView] = []
        self._problem: str | None = None
        self._timer: Timer | None = None
        # (job id, its workflow counters) once fetched; None hides the line
        self._workflows: tuple[str, dict[str, Any]] | None = None
        self._workflows_asked = 0.0  # time.monotonic() of the last fetch asked for
        self.workflows_every = WORKFLOWS_EVERY
        self.stats: WorkspaceStats | None = None  # the workspace's, for a job's usage

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Static(id="facts")
            with Vertical(id="live"):
                yield Static(id="rate-label")
                yield Sparkline([], id="rate")
                yield Static(id="extra")

    def on_mount(self) -> None:
        self.border_title = "Job"
        self._draw()

    def on_resize(self) -> None:
        self.set_class(self.narrow, "-narrow")
        self.call_after_refresh(self._draw)

    @property
    def narrow(self) -> bool:
        """Too narrow for two columns: the facts take the pane, the rate and the
        webhook go among them, and the sparkline leaves."""
        return 0 < self.content_region.width < NARROW

    def _width(self, part: str) -> int:
        width = self.query_one(part).content_region.width
        return width if width > 0 else 10_000  # before the first layout: drawn again

    def show(self, job_id: str | None, *, refetch: bool = False) -> None:
        """Draw `job_id` from the board; fetch its webhook and runs when it is new."""
        if job_id != self.job_id or refetch:
            if job_id != self.job_id:
                self._fetched, self._runs, self._problem = None, [], None
                self._workflows = None
            self.job_id = job_id
            self._schedule_fetch()
        else:
            self._refresh_workflows()
        self._draw()

    def show_stats(self, stats: WorkspaceStats | None) -> None:
        """New workspace stats: the selected job's tokens and cost may have moved."""
        self.stats = stats
        self._draw()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        report_failure(self, event)

    def _schedule_fetch(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        if self.job_id is not None:  # a short wait: scrolling through rows fetches once
            self._workflows_asked = time.monotonic()
            self._timer = self.set_timer(0.2, self._fetch_all)

    def _fetch_all(self) -> None:
        self._fetch(self.job_id)
        self._fetch_workflows(self.job_id)

    def _refresh_workflows(self) -> None:
        """The same job drawn again (a tick, a progress event): its workflow counters
        are fetched again while it runs, at most every `workflows_every` seconds."""
        view = self.board.get(self.job_id) if self.job_id else None
        if view is None or view.status not in RUNNING:
            return
        if time.monotonic() - self._workflows_asked >= self.workflows_every:
            self._workflows_asked = time.monotonic()
            self._fetch_workflows(self.job_id)

    @work(thread=True, exclusive=True, group="workflows", exit_on_error=False,
          name="fetching the workflow counters")
    def _fetch_workflows(self, job_id: str | None) -> None:
        if job_id is None:
            return
        try:
            counters: dict[str, Any] | None = self.client.workflows(job_id)
        except RelayError:  # an older relayd (404) or a hiccup: the line just hides
            counters = None
        self.app.call_from_thread(self._workflows_loaded, job_id, counters)

    def _workflows_loaded(self, job_id: str, counters: dict[str, Any] | None) -> None:
        if job_id != self.job_id:
            return
        self._workflows = None if counters is None else (job_id, counters)
        self._draw()

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def _fetch(self, job_id: str | None) -> None:
        if job_id is None:
            return
        try:
            view = JobView.from_batch(self.client.job(job_id))
            runs = []
            if view.is_template:
                listing = self.client.jobs(template_id=job_id, limit=RECENT_RUNS)
                runs = [JobView.from_relay(j) for j in listing["data"]]  # cron: Relay's
            self.app.call_from_thread(self._loaded, job_id, view, runs, None)
        except RelayError as exc:
            self.app.call_from_thread(self._loaded, job_id, None, [], exc.message)

    def _loaded(self, job_id: str, view: JobView | None, runs: list[JobView],
                problem: str | None) -> None:
        if job_id != self.job_id:
            return
        self._fetched, self._runs, self._problem = view, runs, problem
        self.loaded_id = job_id
        self._draw()

    def _draw(self) -> None:
        view = self.board.get(self.job_id) if self.job_id else None
        facts, label, extra = self.query_one("#facts", Static), \
            self.query_one("#rate-label", Static), self.query_one("#extra", Static)
        if view is None:
            facts.update("[dim]No job selected.[/dim]")
            label.update("")
            extra.update("")
            self.query_one(Sparkline).display = False
            return
        narrow = self.narrow
        lines = self._facts(view, narrow=narrow)
        if narrow:  # one column: the rate by the name, the extra lines at the end
            lines[0][0].append(self._rate_line(view))
            lines += self._extra(view)
        facts.update(flow(lines, self._width("#facts")))
        label.update(self._rate_line(view))
        samples = self.board.samples(view.id)[-60:]
        sparkline = self.query_one(Sparkline)
        sparkline.display = len(samples) > 1
        sparkline.data = samples
        extra.update("" if narrow else flow(self._extra(view), self._width("#extra")))

    def _facts(self, v: JobView, *, narrow: bool = False) -> list[Line]:
        now = self.clock()
        ended = clock_text(v.finished_at)
        if v.finished_at and v.started_at:
            ended += f"  (ran {duration_text(v.finished_at - v.started_at)})"
        dead = "—" if v.dead_letter is None else v.dead_letter
        lines: list[Line] = [
            ([f"[b]{escape(v.name or v.id)}[/b]", escape(_status_text(v))], GAP),
            ([f"[dim]id[/dim] {v.id}", f"[dim]dialect[/dim] {v.dialect}",
              f"[dim]model[/dim] {escape(v.model)}",
              f"[dim]priority[/dim] {v.priority_text}"], GAP),
            ([f"[dim]rows[/dim] {v.total} total", f"{v.completed} completed",
              f"{v.failed} failed{_never_ran(v)}", f"{dead} dead-letter{_open(v)}"], DOT),
            *self._usage_line(v),
            *self._outputs_line(v),
            *self._workflows_line(v),
        ]
        times = [f"[dim]created[/dim] {clock_text(v.created_at)}  "
                 f"({age_text(now - v.created_at) if v.created_at else '—'} ago)",
                 f"[dim]started[/dim] {clock_text(v.started_at)}",
                 f"[dim]ended{'' if narrow else '  '}[/dim] {ended}"]
        # one line where the pane is narrow (wrapped between them); else one each
        lines += [(times, GAP)] if narrow else [([t], GAP) for t in times]
        lines += _deadline_line(v, now)
        error = v.error or (self._fetched.error if self._fetched else None)
        if error:
            lines.append(([f"[$text-error]error: {escape(error)}[/]"], GAP))
        return lines

    def _usage_line(self, v: JobView) -> list[Line]:
        """`usage 12k in · 3.4k out tokens · $0.042`: the job's own (its batch object and
        events carry them), else what the workspace stats say of it."""
        usage = Usage.of_job(v)
        if usage is None and self.stats is not None:
            usage = self.stats.usage_of(v.id)
        if usage is None:
            return []
        tokens = tokens_text(usage).split(DOT)
        return [([f"[dim]usage[/dim] {tokens[0]}", *tokens[1:], cost_text(usage.cost_usd)],
                 DOT)]

    def _workflows_line(self, v: JobView) -> list[Line]:
        """`workflows 1 running · 1 waiting · 1 ended · 7 steps · …`, or nothing for a
        job without workflow records (or whose counters could not be fetched)."""
        if self._workflows is None or self._workflows[0] != v.id:
            return []
        text = counters_text(self._workflows[1])
        if not text:
            return []
        first, *rest = text.split(DOT)
        return [([f"[dim]workflows[/dim] {escape(first)}", *map(escape, rest)], DOT)]

    def _rate_line(self, v: JobView) -> str:
        if v.status in ("queued", "scheduled"):
            return f"[dim]throughput[/dim] — not started ({v.status})"
        rate = self.board.rate(v.id, now=self.clock()) if v.started_at else None
        eta = eta_seconds(v, rate)
        tail = f" · ETA {duration_text(eta)}" if eta is not None else ""
        return f"[dim]throughput[/dim] {rate_text(rate)} rows/s{tail}"

    def _extra(self, v: JobView) -> list[Line]:
        """The webhook outcome; a template's cron, next run and recent runs; the
        template a run came from: each a line of facts."""
        if self._problem:
            return [([f"[$text-error]details unavailable: {escape(self._problem)}[/]"], GAP)]
        if self.loaded_id != v.id or self._fetched is None:
            return [(["[dim]loading details…[/dim]"], GAP)]
        hook = self._webhook_line(self._fetched)
        lines: list[Line] = [(hook, " ")] if hook else []
        if v.is_template:
            lines += self._template_lines(v)
        elif v.template_id:
            lines.append((["[dim]run of template[/dim]", v.template_id], " "))
        return lines

    def _outputs_line(self, v: JobView) -> list[Line]:
        """Checked answers (valid, repaired, invalid), from the job as last fetched: one
        fact each, so the line wraps between them."""
        fetched = self._fetched if self._fetched is not None and self._fetched.id == v.id \
            else v
        line = outputs_line(v.outputs or fetched.outputs)
        return [(line.split(DOT), DOT)] if line else []

    @staticmethod
    def _webhook_line(fetched: JobView) -> list[str]:
        hook = fetched.webhook
        if not hook:
            if fetched.webhook_url:
                return [f"[dim]webhook[/dim] {escape(fetched.webhook_url)}", "— not sent yet"]
            return ["[dim]webhook[/dim] none set"] if fetched.dialect == "relay" else []
        url = f"[dim]webhook[/dim] {escape(str(hook.get('url') or ''))}"
        if hook.get("state") == "sending":
            return [url, "sending…"]
        status = hook.get("status_code")
        at = escape(str(hook.get("attempted_at") or ""))
        if hook.get("error"):
            outcome = f"[$text-error]{escape(str(hook['error']))}[/]"
        else:
            outcome = f"[$text-success]{status}[/]"
        return [url, f"→ {outcome}", f"at {at}"]

    def _template_lines(self, v: JobView) -> list[Line]:
        when, _, ahead = next_run_text(v.next_run_at, self.clock()).partition(" (")
        lines: list[Line] = [
            ([f"[dim]cron[/dim] {escape(v.cron or '')} (UTC)"], GAP),
            ([f"[dim]next run[/dim] {when}", *([f"({ahead}"] if ahead else [])], " ")]
        runs = [f"{escape(LABELS.get(run.status, run.status))}  {run.done}/{run.total}  "
                f"{clock_text(run.created_at)}  [dim]{run.id[:8]}…[/dim]" for run in self._runs]
        if not runs:
            return [*lines, (["[dim]recent runs[/dim] none yet"], GAP)]
        if self.narrow:  # as many as the pane's last lines hold, after the heading
            return [*lines, (["[dim]recent runs[/dim]", *runs], GAP)]
        return [*lines, (["[dim]recent runs[/dim]"], GAP), *(([f"  {r}"], GAP) for r in runs)]


def _status_text(v: JobView) -> str:
    shown = "⚠ completed with errors" if v.with_errors else LABELS.get(v.status, v.status)
    return f"{shown} · paused: {v.paused}" if v.paused else shown


def _deadline_line(v: JobView, now: float) -> list[Line]:
    """`deadline 18:00:00Z (in 2h10m) · at risk`: a Relay job's deadline, if it has one."""
    if v.deadline_at is None:
        return []
    left = v.deadline_at - now
    if v.finished_at is not None and v.finished_at < v.deadline_at:
        when = "met" if v.status == "completed" else "the job ended before it"
    else:
        when = f"in {duration_text(left)}" if left > 0 else "passed"
    facts = [f"[dim]deadline[/dim] {clock_text(v.deadline_at)}  ({when})"]
    if v.deadline_at_risk and not v.finished_at:
        facts.append("[$text-warning]at risk: the estimate at submit runs past it[/]")
    return [(facts, DOT)]


def _never_ran(v: JobView) -> str:
    return f" ({v.canceled} never ran)" if v.canceled else ""


def _open(v: JobView) -> str:
    if v.dead_letter and v.dead_letter_open is not None:
        return f" ({v.dead_letter_open} open)"
    return ""
