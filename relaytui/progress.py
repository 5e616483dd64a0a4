"""Jobs as the CLI and the demo show them: one summary for both dialects (`summarize`),
a one-line progress bar, and `watch`, which polls a job until it ends, redrawing the
bar in place on a terminal or logging a line every few seconds when the output is a
file or a pipe. No HTTP here: the caller passes a `fetch` function."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from relaytui.models import WITH_ERRORS, JobView

# Relay's final statuses plus the OpenAI dialect's (`cancelled`, `expired`).
ENDED = frozenset({"completed", "failed", "canceled", "cancelled", "expired"})
SUCCEEDED = "completed"


@dataclass(frozen=True)
class JobSummary:
    id: str
    status: str
    name: str
    model: str
    priority: str
    total: int
    completed: int
    failed: int
    dead_letter: int | None  # the OpenAI batch object has no dead-letter count
    created_at: str
    canceled: int = 0  # of the failed rows, those that never ran

    @property
    def done(self) -> int:
        return self.completed + self.failed

    @property
    def ran(self) -> int:
        return self.done - self.canceled

    @property
    def with_errors(self) -> bool:
        return self.status == SUCCEEDED and self.failed > 0

    @property
    def shown_status(self) -> str:
        """relayd's status word, except that a completed job with failed rows reads
        "completed with errors"."""
        return WITH_ERRORS if self.with_errors else self.status

    @property
    def ended(self) -> bool:
        return self.status in ENDED


def summarize(job: dict[str, Any]) -> JobSummary:
    """A Relay job or an OpenAI batch object as one shape. The two dialects are read by
    the TUI's `JobView.from_api`; the CLI keeps relayd's own status word and shows an
    OpenAI batch's endpoint when it has no model yet."""
    view = JobView.from_api(job)
    openai = view.dialect == "openai"
    return JobSummary(
        id=view.id, status=str(job["status"]),
        name=(job.get("metadata") or {}).get("name", "") if openai else view.name,
        model=view.model or job.get("endpoint") or "",
        priority=(view.tier or "") if openai else str(view.priority),
        total=view.total, completed=view.completed, failed=view.failed,
        dead_letter=view.dead_letter, created_at=iso(view.created_at),
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


def line(job: JobSummary, *, count_width: int = 0) -> str:
    """`running    [#####...............]  75/300  failed 2  dead-letter 1`; lines of
    several jobs align when they share a `count_width`."""
    dead = "" if job.dead_letter is None else f"  dead-letter {job.dead_letter}"
    count = f"{job.done:>{len(str(job.total))}}/{job.total}"
    return (f"{job.shown_status:<10} {bar(job)} {count:>{count_width}}  "
            f"failed {job.failed}{never_ran(job)}{dead}")


def outcome(job: JobSummary) -> str:
    """The closing line once a job has ended."""
    dead = "" if job.dead_letter is None else f", {job.dead_letter} dead-lettered"
    return (f"{job.id}: {job.shown_status} ({job.completed} completed, {job.failed} failed"
            f"{never_ran(job)}{dead})")


def never_ran(job: JobSummary) -> str:
    return f" ({job.canceled} never ran)" if job.canceled else ""


def watch(fetch: Callable[[], dict[str, Any]], *, stream: TextIO, every: float = 0.5,
          log_every: float = 5.0, sleep: Callable[[float], None] = time.sleep,
          clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """Poll `fetch` every `every` seconds until the job ends and return its last view.
    A terminal gets a bar redrawn in place; anything else a line every `log_every` s
    (and the final one), so CI logs stay short."""
    live = stream.isatty()
    logged_at: float | None = None
    while True:
        job = fetch()
        view = summarize(job)
        if live:
            stream.write("\r" + line(view) + "\x1b[K" + ("\n" if view.ended else ""))
        elif view.ended or logged_at is None or clock() - logged_at >= log_every:
            stream.write(line(view) + "\n")
            logged_at = clock()
        stream.flush()
        if view.ended:
            return job
        sleep(every)
