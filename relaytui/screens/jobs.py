"""The home screen: every job of the workspace, live. It owns the live feed and the
store-health watch (thread workers), folds what they report into the board and the
banner, and updates the table one row at a time; the other screens open from here for
the selected job."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.notifications import SeverityLevel
from textual.widgets import Footer, Input

from relaytui.board import Change, JobBoard
from relaytui.client import RelayError
from relaytui.health import EVERY_S, HealthWatch, StoreHealth
from relaytui.live import Connection, JobEvent, JobsListed, LiveFeed, Workspace
from relaytui.messages import FeedUpdate, HealthUpdate
from relaytui.models import STATUS_FILTERS, JobView, clock_text
from relaytui.screens.base import RelayScreen
from relaytui.screens.dead_letter import DeadLetterScreen
from relaytui.screens.results import ResultsScreen
from relaytui.screens.upload import UploadScreen
from relaytui.widgets.confirm import ConfirmScreen
from relaytui.widgets.header import ConnectionBar, StoreBanner
from relaytui.widgets.job_detail import JobDetail
from relaytui.widgets.job_table import JobTable

STALE_STATES = frozenset({"down", "refused"})  # the feed delivers nothing: numbers age
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
        Binding("u", "upload", "Upload", tooltip="Submit a .csv or .jsonl file as a new job"),
        Binding("r", "refresh", "Refresh", show=False, tooltip="Fetch the job list again"),
    ]

    def __init__(self, client: Any, *, url: str, workspace: str,
                 clock: Callable[[], float], start_dir: Path,
                 health_every: float = EVERY_S) -> None:
        super().__init__()
        self.client, self.url, self.workspace = client, url, workspace
        self.clock, self.start_dir = clock, start_dir
        self.board = JobBoard()
        self.feed = LiveFeed(client, lambda update: self.post_message(FeedUpdate(update)),
                             clock=clock)
        self.health = HealthWatch(client, lambda h: self.post_message(HealthUpdate(h)),
                                  every=health_every)
        self.store = StoreHealth()
        self.listed = False
        self.status_filter = "all"
        self.stale_since: float | None = None

    def compose(self) -> ComposeResult:
        yield ConnectionBar(self.url, self.workspace, clock=self.clock,
                            read_only=self.read_only, id="connection")
        with Vertical(id="jobs-main"):
            yield StoreBanner(id="store-banner")
            yield Input(placeholder="filter by name, id or model — enter keeps it, "
                        "escape clears", id="search")
            yield JobTable(self.board, clock=self.clock, id="jobs")
            yield JobDetail(self.client, self.board, clock=self.clock, id="detail")
        yield Footer()

    @property
    def table(self) -> JobTable:
        return self.query_one(JobTable)

    @property
    def detail(self) -> JobDetail:
        return self.query_one(JobDetail)

    def on_mount(self) -> None:
        self._title()
        self.set_interval(1.0, self._tick)
        self.run_worker(self.feed.run, thread=True, name="live feed", group="feed",
                        exit_on_error=False)
        self.run_worker(self.health.run, thread=True, name="store health", group="health",
                        exit_on_error=False)

    def on_unmount(self) -> None:
        self.feed.stop()
        self.health.stop()

    # -- the live feed ---------------------------------------------------------------

    @on(FeedUpdate)
    def _feed(self, message: FeedUpdate) -> None:
        update = message.update
        if isinstance(update, Connection):
            self.query_one(ConnectionBar).show(update)
            self._stale(update.state in STALE_STATES)
        elif isinstance(update, Workspace):
            bar = self.query_one(ConnectionBar)
            bar.show_target(bar.url, update.name)
        elif isinstance(update, JobsListed):
            self._listed(update)
        elif isinstance(update, JobEvent):
            change = self.board.apply_event(update.type, update.data, at=update.at)
            if change is not None:
                self._changed(change, ended=update.type == "job.ended")

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

    def _listed(self, listed: JobsListed) -> None:
        views = [JobView.from_api(j) for j in listed.jobs]
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
            self.detail.show(change.view.id, refetch=just_ended)
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
        for widget in (self.table, self.detail):
            widget.set_class(stale, "-stale")
        self._title()

    def _tick(self) -> None:
        self.table.tick()
        self.detail.show(self.detail.job_id)

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
            change = self.board.put(JobView.from_api(job), at=self.clock())
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
        change = self.board.put(JobView.from_api(answer), at=self.clock())
        if change is not None:
            self._changed(change)
        marked = self.board.mark_cancelling(job_id)
        if marked is not None:
            self._changed(marked)
        self.notify(f"Cancel requested for {job_id}.")
