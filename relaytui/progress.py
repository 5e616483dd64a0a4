"""Jobs as the CLI and the demo show them: one summary for both dialects (`summarize`),
a one-line progress bar, and `watch`, which polls a job until it ends: on a terminal a
live rich progress bar with the rate and the ETA; when the output is a file or a pipe,
a line (with the rate and ETA too) every few seconds. No HTTP here: the caller passes a
`fetch` function."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn

from relaytui.models import WITH_ERRORS, JobView, Throughput, shown_status

# Relay's final statuses plus the OpenAI dialect's (`cancelled`, `expired`).
ENDED = frozenset({"completed", "failed", "canceled", "cancelled", "expired",
                   "ended"})  # each dialect's words (`ended`: a Message Batch's)
SUCCEEDED = "completed"
# The widest status word a progress line shows, so the columns after it line up.
STATUS_WIDTH = max(len(word) for word in (WITH_ERRORS, "in_progress", "validating",
                                          "finalizing", "cancelling", "scheduled"))


@dataclass(frozen=True)
class JobSummary:
    id: str
    status: str
    name: str  # a Relay job's name, an OpenAI batch's `metadata.name`; "" for none
    model: str  # the model (an OpenAI batch's once validation settles it); "" unknown
    priority: str  # a Relay job's priority; "" where the dialect has none
    total: int
    completed: int
    failed: int
    dead_letter: int | None  # the OpenAI batch object has no dead-letter count
    created_at: str
    canceled: int = 0  # of the failed rows, those that never ran
    tier: str = ""  # an OpenAI batch's tier (`standard`, `expedited`); "" where none

    @property
    def done(self) -> int:
        return self.completed + self.failed

    @property
    def ran(self) -> int:
        return self.done - self.canceled

    @property
    def with_errors(self) -> bool:
        return self.shown_status == WITH_ERRORS

    @property
    def shown_status(self) -> str:
        """relayd's status word, except that a completed job with failed rows reads
        "completed with errors" (`models.shown_status`, the TUI's wording too)."""
        return shown_status(self.status, self.failed)

    @property
    def ended(self) -> bool:
        return self.status in ENDED


def summarize(job: dict[str, Any]) -> JobSummary:
    """A job of any dialect as one shape. The dialects are read by the TUI's
    `JobView.from_batch`; the CLI keeps relayd's own status word (a Message Batch's
    `processing_status`), and only what the job's own object says: an OpenAI batch's
    name is its `metadata.name`, its model the one validation settled (none before),
    its tier is not a priority; a Message Batch names neither a model nor a name."""
    view = JobView.from_batch(job)
    relay = view.dialect == "relay"
    return JobSummary(
        id=view.id, status=str(job.get("status") or job.get("processing_status")),
        name=view.name if relay else str((job.get("metadata") or {}).get("name") or ""),
        model=view.model, priority=str(view.priority) if relay else "",
        tier=view.tier or "", total=view.total, completed=view.completed,
        failed=view.failed, dead_letter=view.dead_letter, created_at=iso(view.created_at),
        canceled=view.canceled or 0)


def iso(stamp: str | float | None) -> str:
    """ISO 8601 UTC, whether relayd sent it as text (Relay) or Unix seconds (OpenAI)."""
    if stamp is None:
        return ""
    if isinstance(stamp, int | float):
        return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(stamp)


def bar(job: JobSummary, width: int = 20) -> str:
    filled = width * job.ran // job.total if job.total else 0  # full only when done
    return "[" + "#" * filled + "." * (width - filled) + "]"


def line(job: JobSummary, *, count_width: int = 0, failed_width: int | None = None) -> str:
    """`running               [#####...............]  75/300  failed 2    dead-letter 1`:
    the status padded to the widest word (`STATUS_WIDTH`), the failed count to as many
    digits as the total has (`failed_width`), so a job's lines keep their columns as it
    goes; lines of several jobs align when they share `count_width` and `failed_width`."""
    dead = "" if job.dead_letter is None else f"  dead-letter {job.dead_letter}"
    count = f"{job.done:>{len(str(job.total))}}/{job.total}"
    failed = f"{job.failed}{never_ran(job)}"
    width = len(str(job.total)) if failed_width is None else failed_width
    return (f"{job.shown_status:<{STATUS_WIDTH}} {bar(job)} {count:>{count_width}}  "
            f"failed {failed:<{width}}{dead}")


def outcome(job: JobSummary) -> str:
    """The closing line once a job has ended."""
    dead = "" if job.dead_letter is None else f", {job.dead_letter} dead-lettered"
    return (f"{job.id}: {job.shown_status} ({job.completed} completed, {job.failed} failed"
            f"{never_ran(job)}{dead})")


def never_ran(job: JobSummary) -> str:
    return f" ({job.canceled} never ran)" if job.canceled else ""


def eta(job: JobSummary, rate: float | None) -> float | None:
    """Seconds until the job's rows are all done at `rate` rows/s; None once it ended or
    before a rate is known."""
    if job.ended or not rate or rate <= 0:
        return None
    return max(job.total - job.done, 0) / rate


def pace(job: JobSummary, rate: float | None) -> str:
    """`12.5 rows/s  ETA 0:00:42`; a dash for what is not known yet."""
    per_s = "- rows/s" if rate is None else f"{rate:.1f} rows/s"
    left = eta(job, rate)
    return f"{per_s}  ETA {'-' if left is None else hms(left)}"


def hms(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02}:{whole % 60:02}"


def watch(fetch: Callable[[], dict[str, Any]], *, stream: TextIO, every: float = 0.5,
          log_every: float = 5.0, sleep: Callable[[float], None] = time.sleep,
          clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """Poll `fetch` every `every` seconds until the job ends and return its last view.
    A terminal gets a live bar; anything else a line every `log_every` s (and the final
    one), so CI logs stay short. The rate is over the last 10 s of polls."""
    meter = Throughput()
    shown = LiveBar(stream) if stream.isatty() else LogLines(stream, log_every, clock)
    with shown:
        while True:
            job = fetch()
            view = summarize(job)
            meter.add(clock(), view.ran)
            shown.show(view, meter.rate())
            if view.ended:
                return job
            sleep(every)


class LogLines:
    """`watch` into a file or a pipe: `line` and `pace`, now and then."""

    def __init__(self, stream: TextIO, every: float, clock: Callable[[], float]) -> None:
        self.stream, self.every, self.clock = stream, every, clock
        self.logged_at: float | None = None

    def __enter__(self) -> LogLines:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def show(self, job: JobSummary, rate: float | None) -> None:
        now = self.clock()
        if job.ended or self.logged_at is None or now - self.logged_at >= self.every:
            self.stream.write(f"{line(job)}  {pace(job, rate)}\n")
            self.stream.flush()
            self.logged_at = now


class LiveBar:
    """`watch` on a terminal: one rich progress bar redrawn in place (on each poll, not
    on a timer of its own), left on screen when the job ends or the wait is stopped."""

    def __init__(self, stream: TextIO) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(),
            TextColumn("{task.fields[counts]}"), TextColumn(" {task.fields[pace]}"),
            console=Console(file=stream, force_terminal=True), auto_refresh=False)
        self.task: TaskID | None = None

    def __enter__(self) -> LiveBar:
        return self  # the bar starts with the first view: no empty frame before it

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def show(self, job: JobSummary, rate: float | None) -> None:
        dead = "" if job.dead_letter is None else f"  dead-letter {job.dead_letter}"
        counts = f"{job.done}/{job.total}  failed {job.failed}{never_ran(job)}{dead}"
        if self.task is None:
            self.task = self.progress.add_task("", counts="", pace="")
            self.progress.start()
        self.progress.update(self.task, description=f"{job.shown_status:<10}",
                             total=job.total or None, completed=job.ran, counts=counts,
                             pace=pace(job, rate))
        self.progress.refresh()
