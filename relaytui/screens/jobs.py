"""The home screen: every job of the workspace, live. It owns the live feed, the
store-health watch and the stats watch (thread workers), folds what they report into the
board, the banners and the header, and updates the table one row at a time; the other
screens open from here for the selected job."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.notifications import SeverityLevel
from textual.widgets import Input

from relaytui.api import RelayApi
from relaytui.board import Change, JobBoard
from relaytui.client import RelayError
from relaytui.health import EVERY_S, HealthWatch, StoreHealth
from relaytui.live import Connection, JobEvent, JobsListed, LiveFeed, Workspace
from relaytui.messages import FeedUpdate, HealthUpdate, KeyRefused, StatsUpdate
from relaytui.models import STATUS_FILTERS, JobView, clock_text
from relaytui.screens.base import RelayScreen
from relaytui.screens.dead_letter import DeadLetterScreen
from relaytui.screens.results import ResultsScreen
from relaytui.screens.upload import UploadScreen
from relaytui.stats import StatsWatch, WorkspaceStats
from relaytui.stats_text import failing_changes, window_text
from relaytui.widgets.confirm import ConfirmScreen
from relaytui.widgets.footer import RelayFooter
from relaytui.widgets.header import ConnectionBar, FailingBanner, StoreBanner
from relaytui.widgets.job_detail import JobDetail
from relaytui.widgets.job_table import JobTable
from relaytui.widgets.stats_header import StatsHeader, header_mode

STALE_STATES = frozenset({"down", "refused"})  # the feed delivers nothing: numbers age
DUE_EVERY_S = 5.0  # a template past its next run is fetched again at most this often
STATS_NUDGE_S = 1.0  # stats behind the live feed are asked again at most this often
_ENDED: dict[str, SeverityLevel] = {"completed": "information", "canceled": "warning",
                                    "failed": "error", "expired": "error"}


class JobsScreen(RelayScreen):
    AUTO_FOCUS = "#jobs"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "cycle_filter", "Status", tooltip="Cycle the status filter: "
                + ", ".join(STATUS_FILTERS)),
        Binding("slash", "search", "Search", key_display="/",
                tooltip="Filter the jobs by words in their name, id or model"),
        Binding("escape", "clear_filters", "Clear filters", show=False,
                tooltip="Close the search and show every job"),
        Binding("v", "results", "Results",
                tooltip="Browse, search and save a finished job's results (also enter)"),
        Binding("d", "dead_letter", "Dead letter",
                tooltip="Inspect and re-drive the selected job's dead-lettered rows"),
        Binding("D", "dead_letter_all", "All dead letter", show=False,
                tooltip="The open dead-lettered rows of every job of the workspace"),
        Binding("c", "cancel", "Cancel job",
                tooltip="Cancel the selected job or cron template (asks first)"),
        Binding("p", "pause", "Pause/resume", show=False,
                tooltip="Pause the selected job (rows in flight finish, none starts), or "
                        "resume it if paused"),
        Binding("u", "upload", "Upload", tooltip="Submit a .csv or .jsonl file as a new job"),
        Binding("r", "refresh", "Refresh", show=False, tooltip="Fetch the job list again"),
        Binding("w", "stats_window", "Stats window", show=False,
                tooltip="The header's window: the last 15 min, 60 min, 6 h or 24 h"),
    ]

    def __init__(self, client: RelayApi, *, url: str, key: str, clock: Callable[[], float],
                 start_dir: Path,
                 health_every: float = EVERY_S, stats_every: float = EVERY_S) -> None:
        super().__init__()
        self.client, self.url, self.key = client, url, key  # the key's public prefix
        self.clock, self.start_dir = clock, start_dir
        self.board = JobBoard()
        self.feed = LiveFeed(client, lambda update: self.post_message(FeedUpdate(update)),
                             clock=clock)
        self.health = HealthWatch(client, lambda h: self.post_message(HealthUpdate(h)),
                                  every=health_every)
        self.store = StoreHealth()
        self.stats_watch = StatsWatch(client, lambda s: self.post_message(StatsUpdate(s)),
                                      every=stats_every)
        self.stats: WorkspaceStats | None = None
        self._stats_nudged = -STATS_NUDGE_S  # when the stats were last asked early
        self._due_asked: dict[str, float] = {}  # template id -> when it was last fetched
        self.listed = False
        self.status_filter = "all"
        self.stale_since: float | None = None

    def compose(self) -> ComposeResult:
        yield ConnectionBar(self.url, key=self.key, clock=self.clock,
                            read_only=self.read_only, id="connection")
        with Vertical(id="jobs-main"):
            yield StoreBanner(id="store-banner")
            yield FailingBanner(id="failing-banner")
            yield StatsHeader(id="stats")
            yield Input(placeholder="filter by name, id or model — enter keeps it, "
                        "escape clears", id="search")
            yield JobTable(self.board, clock=self.clock, id="jobs")
            yield JobDetail(self.client, self.board, clock=self.clock, id="detail")
        yield RelayFooter()

    @property
    def table(self) -> JobTable:
        return self.query_one(JobTable)

    @property
    def detail(self) -> JobDetail:
        return self.query_one(JobDetail)

    @property
    def header(self) -> StatsHeader:
        return self.query_one(StatsHeader)

    def on_mount(self) -> None:
        self._title()
        self.set_interval(1.0, self._tick)
        self.run_worker(self.feed.run, thread=True, name="live feed", group="feed",
                        exit_on_error=False)
        self.run_worker(self.health.run, thread=True, name="store health", group="health",
                        exit_on_error=False)
        self.run_worker(self.stats_watch.run, thread=True, name="workspace stats",
                        group="stats", exit_on_error=False)

    def on_unmount(self) -> None:
        self.feed.stop()
        self.health.stop()
        self.stats_watch.stop()

    def on_resize(self) -> None:
        self.header.set_mode(header_mode(self.size.width, self.size.height))

    # -- the live feed ---------------------------------------------------------------

    @on(FeedUpdate)
    def _feed(self, message: FeedUpdate) -> None:
        update = message.update
        if isinstance(update, Connection):
            refused = update.state == "refused" and \
                self.query_one(ConnectionBar).connection.state != "refused"
            self.query_one(ConnectionBar).show(update)
            self._stale(update.state in STALE_STATES)
            if refused and not self.read_only and self.app.screen is self:
                # ask for another key at once (the top line keeps saying so, and K
                # asks again, if the dialog is closed)
                self.post_message(KeyRefused(f"relayd refused this key: {update.detail}"))
        elif isinstance(update, Workspace):
            bar = self.query_one(ConnectionBar)
            bar.show_target(bar.url, update.name)
        elif isinstance(update, JobsListed):
            self._listed(update)
        elif isinstance(update, JobEvent):
            change = self.board.apply_event(update.type, update.data, at=update.at)
            if change is not None:
                self._changed(change, ended=update.type == "job.ended")
                self._stats_lag(change)
            template = update.data.get("template_id")
            if update.type == "job.created" and isinstance(template, str) \
                    and template in self.board:
                self._fetch_job(template)  # a run started: its template has a new next run

    @on(HealthUpdate)
    def _health(self, message: HealthUpdate) -> None:
        """The banner follows relayd's store; a notification (seen on any screen) says
        when it starts or stops failing."""
        before, self.store = self.store, message.health
        self.query_one(StoreBanner).show(self.store)
        if self.store.degraded and not before.degraded:
            self.notify(self.store.banner(), title="relayd is degraded", severity="error",
                        timeout=10)
        elif before.degraded and not self.store.degraded:
            self.notify("relayd's store takes writes again.", title="relayd is healthy")

    @on(StatsUpdate)
    def _stats(self, message: StatsUpdate) -> None:
        """The header, the failing banner and the selected job's usage follow relayd's
        stats; after the first answer, a notification says when a model starts or stops
        failing (the banner says which fail from the start)."""
        before, self.stats = self.stats, message.stats
        self.header.show(self.stats)
        self.query_one(FailingBanner).show(self.stats.failing if self.stats else ())
        self.detail.show_stats(self.stats)
        if before is None or self.stats is None:
            return
        started, recovered = failing_changes(before, self.stats)
        for failing in started:
            self.notify(failing.message, title="A model is failing", severity="error",
                        timeout=10)
        for model in recovered:
            self.notify(f"{model} is no longer failing.", title="A model recovered")

    def _stats_lag(self, change: Change) -> None:
        """The header says no row finished in the window while this job's rows just
        ran: its stats were made before they did; ask again now (at most every
        STATS_NUDGE_S), rather than contradict the table until the next answer."""
        now = self.clock()
        if self.stats is not None and self.stats.lags(change.before, change.view) \
                and now - self._stats_nudged >= STATS_NUDGE_S:
            self._stats_nudged = now
            self.stats_watch.ask_now()

    def _listed(self, listed: JobsListed) -> None:
        views = [JobView.from_batch(j) for j in listed.jobs]
        changes, gone = self.board.replace_all(views, at=listed.at)
        if not self.listed:
            self.listed = True
            self.table.fill()
        else:
            for job_id in gone:
                self.table.drop(job_id)
            for change in changes:
                self._changed(change)
        self._title()
        self.detail.show(self.table.selected_id)

    def _changed(self, change: Change, *, ended: bool = False) -> None:
        self.table.upsert(change.view, moved=change.moved)
        just_ended = change.ended or (ended and change.before is None)
        if just_ended:
            self._announce_end(change.view)
        if change.view.id == self.detail.job_id:
            ran = change.before is not None \
                and change.before.next_run_at != change.view.next_run_at  # a new run
            self.detail.show(change.view.id, refetch=just_ended or ran)
        if change.before is None:
            self._title()

    def _announce_end(self, view: JobView) -> None:
        dead = f", {view.dead_letter} dead-letter" if view.dead_letter else ""
        unrun = f" ({view.canceled} never ran)" if view.canceled else ""
        self.notify(f"{view.completed}/{view.total} completed, {view.failed} failed"
                    f"{unrun}{dead}", title=f"{view.name or view.id}: {view.shown_status}",
                    severity="warning" if view.with_errors
                    else _ENDED.get(view.status, "information"))

    def _stale(self, stale: bool) -> None:
        """While the feed is down the numbers on screen are the last ones relayd gave:
        dimmed and titled so. The next listing (on reconnect) refreshes them all."""
        if stale and self.stale_since is None:
            self.stale_since = self.clock()
        elif not stale:
            self.stale_since = None
        for widget in (self.table, self.detail, self.query_one(FailingBanner)):
            widget.set_class(stale, "-stale")
        self.header.set_stale(self.stale_since)
        self._title()

    def _tick(self) -> None:
        self.table.tick()
        self.detail.show(self.detail.job_id)
        self._ask_due_templates()

    def _ask_due_templates(self) -> None:
        """A template whose next run has come: relayd started the run (its event names
        the template) but tells nothing of the template's next one, so it is fetched
        again, at most every DUE_EVERY_S, until its next run is ahead."""
        if self.stale_since is not None:
            return
        now = self.clock()
        for view in self.board.views():
            due = view.is_template and view.status == "scheduled" \
                and view.next_run_at is not None and view.next_run_at <= now
            if due and now - self._due_asked.get(view.id, -DUE_EVERY_S) >= DUE_EVERY_S:
                self._due_asked[view.id] = now
                self._fetch_job(view.id)

    def _title(self) -> None:
        search = self.query_one("#search", Input).value.strip()
        parts = [f"{self.table.row_count} of {len(self.board)} jobs",
                 f"status: {self.status_filter}"]
        if search:
            parts.append(f"search: {search}")
        if self.stale_since is not None:
            parts.append(f"stale since {clock_text(self.stale_since)[11:]}")
        self.table.border_title = "Jobs — " + " · ".join(parts)

    # -- selection ---------------------------------------------------------------------

    @on(JobTable.Highlighted)
    def _highlighted(self, event: JobTable.Highlighted) -> None:
        self.detail.show(event.job_id)

    @on(JobTable.Opened)
    def _opened(self, event: JobTable.Opened) -> None:
        view = self.board.get(event.job_id)
        if view is not None and view.terminal:
            self.action_results()

    def selected(self) -> JobView | None:
        view = self.board.get(self.table.selected_id or "")
        if view is None:
            self.notify("No job is selected.", severity="warning")
        return view

    # -- filters -----------------------------------------------------------------------

    def action_cycle_filter(self) -> None:
        index = STATUS_FILTERS.index(self.status_filter)
        self.status_filter = STATUS_FILTERS[(index + 1) % len(STATUS_FILTERS)]
        self._filter()

    def action_search(self) -> None:
        search = self.query_one("#search", Input)
        search.add_class("-shown")
        search.focus()

    def action_clear_filters(self) -> None:
        search = self.query_one("#search", Input)
        search.value, self.status_filter = "", "all"
        search.remove_class("-shown")
        self.table.focus()
        self._filter()

    @on(Input.Changed, "#search")
    def _search_changed(self) -> None:
        self._filter()

    @on(Input.Submitted, "#search")
    def _search_done(self) -> None:
        if not self.query_one("#search", Input).value.strip():
            self.query_one("#search", Input).remove_class("-shown")
        self.table.focus()

    def _filter(self) -> None:
        self.table.set_filters(self.status_filter, self.query_one("#search", Input).value)
        self._title()
        self.detail.show(self.table.selected_id)

    # -- actions on the selected job ------------------------------------------------------

    def action_results(self) -> None:
        view = self.selected()
        if view is None:
            return
        if not view.terminal:
            self.notify(f"{view.name or view.id} is {view.status}: results come when it "
                        "ends.", severity="warning")
            return
        self.app.push_screen(ResultsScreen(self.client, view))

    def action_dead_letter(self) -> None:
        view = self.selected()
        if view is not None:
            self.app.push_screen(DeadLetterScreen(self.client, view))

    def action_dead_letter_all(self) -> None:
        self.app.push_screen(DeadLetterScreen(self.client))

    def action_upload(self) -> None:
        if self.refuses("Uploading a job"):
            return
        self.app.push_screen(UploadScreen(self.client, start_dir=self.start_dir),
                             self._uploaded)

    def _uploaded(self, job: Any) -> None:
        if isinstance(job, dict):
            # the upload form submits to the Relay Batches API
            change = self.board.put(JobView.from_relay(job), at=self.clock())
            if change is not None:
                self._changed(change)
            self.table.select(job["id"])

    def action_refresh(self) -> None:
        self._refetch()

    @work(thread=True, exclusive=True, group="refetch", exit_on_error=False,
          name="refresh")
    def _refetch(self) -> None:
        try:
            jobs = self.client.all_jobs()
        except RelayError as exc:
            self.app.call_from_thread(self.notify, exc.message, title="Refresh failed",
                                      severity="error")
            return
        self.post_message(FeedUpdate(JobsListed(jobs, self.clock())))

    @work(thread=True, group="job", exit_on_error=False, name="fetching a job")
    def _fetch_job(self, job_id: str) -> None:
        try:
            answer = self.client.job(job_id)
        except RelayError:  # down (the feed says so) or gone: the next listing tells
            return
        self.app.call_from_thread(self._job_fetched, answer)

    def _job_fetched(self, answer: dict[str, Any]) -> None:
        change = self.board.put(JobView.from_batch(answer), at=self.clock())
        if change is not None:
            self._changed(change)

    def action_stats_window(self) -> None:
        minutes = self.stats_watch.next_window()
        self.notify(f"The header shows the last {window_text(minutes)}.", title="Stats")

    def action_cancel(self) -> None:
        if self.refuses("Cancelling"):
            return
        view = self.selected()
        if view is None:
            return
        if view.terminal:
            self.notify(f"{view.name or view.id} has already ended ({view.status}).",
                        severity="warning")
            return
        what = "cron template (its future runs stop; runs so far stay)" \
            if view.is_template else "job"
        question = f"Cancel the {what} “{view.name or view.id}”?\n{view.id}"

        def answered(yes: bool | None) -> None:
            if yes:
                self._cancel(view.id)

        self.app.push_screen(ConfirmScreen(question, yes="Cancel it", no="Keep it"), answered)

    def action_pause(self) -> None:
        """Pause the selected job, or resume it when an operator paused it."""
        if self.refuses("Pausing"):
            return
        view = self.selected()
        if view is None:
            return
        if view.terminal:
            self.notify(f"{view.name or view.id} has already ended ({view.status}).",
                        severity="warning")
            return
        self._pause(view.id, resume=view.paused == "operator")

    @work(thread=True, group="pause", exit_on_error=False, name="pause")
    def _pause(self, job_id: str, *, resume: bool) -> None:
        try:
            answer = (self.client.resume if resume else self.client.pause)(job_id)
        except RelayError as exc:
            self.app.call_from_thread(self.notify, exc.message,
                                      title="Resume refused" if resume else "Pause refused",
                                      severity="error")
            return
        self.app.call_from_thread(self._paused, job_id, answer, resume)

    def _paused(self, job_id: str, answer: dict[str, Any], resumed: bool) -> None:
        self._job_fetched(answer)
        self.notify(f"Resumed {job_id}." if resumed else
                    f"Paused {job_id}: rows in flight finish, none starts.")

    @work(thread=True, group="cancel", exit_on_error=False, name="cancel")
    def _cancel(self, job_id: str) -> None:
        try:
            answer = self.client.cancel(job_id)
        except RelayError as exc:
            self.app.call_from_thread(self.notify, exc.message, title="Cancel refused",
                                      severity="error")
            return
        self.app.call_from_thread(self._cancelled, job_id, answer)

    def _cancelled(self, job_id: str, answer: dict[str, Any]) -> None:
        self._job_fetched(answer)
        marked = self.board.mark_cancelling(job_id)
        if marked is not None:
            self._changed(marked)
        self.notify(f"Cancel requested for {job_id}.")
