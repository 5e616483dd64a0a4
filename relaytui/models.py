"""What the TUI knows about a job, in one shape for both dialects, and how it is told to
an operator: status names, age, rows per second, ETA, a text progress bar.

Pure: no Textual, no HTTP. Time is always passed in (`now`, `at`), in epoch seconds.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any

TERMINAL = frozenset({"completed", "failed", "canceled", "expired"})
RUNNING = frozenset({"running", "cancelling"})
WITH_ERRORS = "completed with errors"  # shown for a completed job with failed rows
# The jobs screen's `f` filter, in the order it cycles. "failed" is a job's own status
# (it failed as a whole); "failed rows" is any job with a row that ran and failed, however
# the job stands ("completed with errors", running, canceled, failed): rows a cancel
# ended before they ran do not count.
FAILED_ROWS = "failed rows"
STATUS_FILTERS = ("all", "running", "queued", "completed", "failed", FAILED_ROWS, "canceled",
                  "scheduled")

# Internal status names (events' `status`) and OpenAI's names, told the Relay way; the
# one exception is `cancelling`, which the Relay view hides behind `running`.
_INTERNAL = {"validating": "queued", "finalizing": "running", "cancelled": "canceled"}
_OPENAI = {"validating": "queued", "in_progress": "running", "finalizing": "running",
           "cancelled": "canceled"}


_INSTANTS = ("created_at", "started_at", "finished_at", "next_run_at")


def shown_status(status: str, failed: int) -> str:
    """The one wording of a job's status for people (the TUI, `relay ls`, `relay
    status`, `--wait`): relayd's word, except that a completed job with failed rows is
    "completed with errors", never a plain success."""
    return WITH_ERRORS if status == "completed" and failed > 0 else status


def parse_time(value: Any) -> float | None:
    """Epoch seconds from an event's float, OpenAI's integer or Relay's ISO string."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _maybe_int(value: Any) -> int | None:
    return None if value is None else _int(value)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


@dataclass(frozen=True)
class JobView:
    """One job (or cron template) as the TUI shows it; `None` means "not known yet"."""

    id: str
    name: str = ""
    model: str = ""
    status: str = "queued"
    dialect: str = "relay"
    priority: int = 0
    tier: str | None = None
    total: int = 0
    completed: int = 0
    failed: int = 0
    dead_letter: int | None = 0
    dead_letter_open: int | None = None  # still to re-drive or discard (Relay, events)
    canceled: int | None = 0  # of the failed rows, those that never ran
    created_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    cron: str | None = None
    next_run_at: float | None = None
    template_id: str | None = None
    last_run_id: str | None = None
    error: str | None = None
    webhook_url: str | None = None
    webhook: dict[str, Any] | None = None
    input_tokens: int | None = None  # tokens and cost so far (None: not told)
    output_tokens: int | None = None
    cost_nano_usd: int | None = None
    # Why it is held back: "operator" or "budget"; "" not paused; None not told (an
    # OpenAI or Anthropic shape: their events tell)
    paused: str | None = None
    outputs: dict[str, Any] | None = None  # checked answers: valid, repaired, invalid (Relay)
    deadline_at: float | None = None  # a Relay job's deadline
    deadline_at_risk: bool = False  # the estimate at submit said it would be missed

    @classmethod
    def from_event(cls, data: dict[str, Any]) -> JobView:
        """The summary carried by `/v1/events`: one shape for both dialects, which names
        its job's `dialect` (relayd's `render.event_fields`)."""
        internal = data.get("status") or ""
        shown = "cancelling" if internal == "cancelling" else (
            data.get("relay_status") or _INTERNAL.get(internal, internal))
        return cls(
            id=str(data["id"]), name=data.get("name") or "", model=data.get("model") or "",
            status=shown, dialect=data.get("dialect") or "relay",
            priority=_int(data.get("priority")), tier=data.get("tier"),
            total=_int(data.get("total")), completed=_int(data.get("completed")),
            failed=_int(data.get("failed")), dead_letter=_int(data.get("dead_letter")),
            dead_letter_open=_maybe_int(data.get("dead_letter_open")),
            canceled=_int(data.get("canceled")),
            created_at=parse_time(data.get("created_at")),
            started_at=parse_time(data.get("started_at")),
            finished_at=parse_time(data.get("finished_at")), cron=data.get("cron"),
            next_run_at=parse_time(data.get("next_run_at")),
            template_id=data.get("template_id"), error=data.get("error"),
            input_tokens=_maybe_int(data.get("input_tokens")),
            output_tokens=_maybe_int(data.get("output_tokens")),
            cost_nano_usd=_maybe_int(data.get("cost_nano_usd")), paused=data.get("paused") or "",
            deadline_at=parse_time(data.get("deadline_at")),
            deadline_at_risk=data.get("deadline_at_risk") is True)

    @classmethod
    def from_batch(cls, obj: dict[str, Any]) -> JobView:
        """`GET /v1/batches[/{id}]`, whose answers are each in their own dialect's shape:
        read by that dialect's parser, chosen by the job's id (`dialect_of`)."""
        return BATCH_PARSERS[dialect_of(str(obj["id"]))](obj)

    @classmethod
    def from_relay(cls, obj: dict[str, Any]) -> JobView:
        """A job of the Relay Batches API (relayd's `render.relay_job`)."""
        return cls(
            id=str(obj["id"]), name=obj.get("name") or "", model=obj.get("model") or "",
            status=obj.get("status") or "queued", priority=_int(obj.get("priority")),
            total=_int(obj.get("total")), completed=_int(obj.get("completed")),
            failed=_int(obj.get("failed")), dead_letter=_int(obj.get("dead_letter")),
            dead_letter_open=_maybe_int(obj.get("dead_letter_open")),
            canceled=_int(obj.get("canceled")),
            created_at=parse_time(obj.get("created_at")),
            started_at=parse_time(obj.get("started_at")),
            finished_at=parse_time(obj.get("completed_at")), cron=obj.get("cron"),
            next_run_at=parse_time(obj.get("next_run_at")),
            template_id=obj.get("template_id"), last_run_id=obj.get("last_run_id"),
            outputs=obj.get("outputs") if isinstance(obj.get("outputs"), dict) else None,
            error=obj.get("error"), webhook_url=obj.get("webhookUrl"),
            webhook=obj.get("webhook"), input_tokens=_used(obj, "input_tokens"),
            output_tokens=_used(obj, "output_tokens"),
            cost_nano_usd=_used(obj, "cost_nano_usd"), paused=obj.get("paused") or "",
            deadline_at=parse_time(obj.get("deadline")),
            deadline_at_risk=obj.get("deadline_at_risk") is True)

    @classmethod
    def from_openai(cls, obj: dict[str, Any]) -> JobView:
        """A batch of the OpenRelay batch API (OpenAI's batch object, relayd's
        `render_openai.batch`)."""
        counts = obj.get("request_counts") or {}
        errors = (obj.get("errors") or {}).get("data") or []
        ended = next((obj.get(k) for k in ("completed_at", "failed_at", "cancelled_at",
                                            "expired_at") if obj.get(k)), None)
        name = (obj.get("metadata") or {}).get("name") or f"batch {obj.get('input_file_id')}"
        return cls(
            id=str(obj["id"]), name=name, model=obj.get("model") or "",
            status=_OPENAI.get(obj.get("status") or "", obj.get("status") or "queued"),
            dialect="openai", tier=obj.get("priority"), total=_int(counts.get("total")),
            completed=_int(counts.get("completed")), failed=_int(counts.get("failed")),
            dead_letter=None, canceled=None, created_at=parse_time(obj.get("created_at")),
            started_at=parse_time(obj.get("in_progress_at")), finished_at=parse_time(ended),
            error="; ".join(str(e.get("message")) for e in errors) or None,
            input_tokens=_used(obj, "input_tokens"), output_tokens=_used(obj, "output_tokens"),
            cost_nano_usd=_used(obj, "cost_nano_usd"))

    @classmethod
    def from_anthropic(cls, obj: dict[str, Any]) -> JobView:
        """A Message Batch of Anthropic's API (relayd's `anthropic.render.message_batch`):
        no name or model (the event stream brings them), counts by outcome."""
        counts = obj.get("request_counts") or {}
        succeeded, errored = _int(counts.get("succeeded")), _int(counts.get("errored"))
        unrun = _int(counts.get("canceled")) + _int(counts.get("expired"))
        total = _int(counts.get("processing")) + succeeded + errored + unrun
        return cls(
            id=str(obj["id"]), name=f"message batch of {total:,} requests",
            status=_anthropic_status(obj, started=succeeded + errored + unrun > 0),
            dialect="anthropic", total=total, completed=succeeded,
            failed=errored + unrun, dead_letter=None, canceled=unrun,
            created_at=parse_time(obj.get("created_at")),
            finished_at=parse_time(obj.get("ended_at")))

    def merge(self, newer: JobView) -> JobView:
        """`newer`, keeping what this view knew where `newer` does not say (an OpenAI
        batch object has no dead-letter count, a summary event no webhook), and the
        finer instants of events over the API's whole seconds (so order stays put)."""
        kept = {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(newer, f.name) is None and getattr(self, f.name) is not None}
        for name in _INSTANTS:
            mine, theirs = getattr(self, name), getattr(newer, name)
            if mine is not None and theirs is not None and int(mine) == int(theirs):
                kept[name] = mine
        return replace(newer, **kept) if kept else newer

    @property
    def done(self) -> int:
        return self.completed + self.failed

    @property
    def ran(self) -> int:
        """Rows that ran to an outcome: the done ones less those that never ran."""
        return self.done - (self.canceled or 0)

    @property
    def failed_rows(self) -> int:
        """Rows that ran and failed (not those a cancel ended before they ran)."""
        return self.failed - (self.canceled or 0)

    @property
    def with_errors(self) -> bool:
        return self.shown_status == WITH_ERRORS

    @property
    def shown_status(self) -> str:
        """The status as the operator reads it (`shown_status`)."""
        return shown_status(self.status, self.failed)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def is_template(self) -> bool:
        return bool(self.cron) and self.template_id is None

    @property
    def priority_text(self) -> str:
        if self.dialect == "openai":
            return "exp" if self.tier == "expedited" else "std"
        return str(self.priority)

    def matches(self, status: str, text: str) -> bool:
        """The jobs screen's filters: a status name ("all", or "failed rows": any job with
        a row that ran and failed) and words in name/id/model."""
        if status == FAILED_ROWS:
            if self.failed_rows <= 0:
                return False
        elif status != "all" and not _status_matches(self.status, status):
            return False
        needle = text.strip().lower()
        return not needle or any(needle in s.lower() for s in (self.name, self.id, self.model))


def _anthropic_status(obj: dict[str, Any], *, started: bool) -> str:
    """A Message Batch's status in the TUI's words: ended reads as how it ended."""
    status = obj.get("processing_status")
    if status == "canceling":
        return "cancelling"
    if status != "ended":
        return "running" if started else "queued"
    if obj.get("cancel_initiated_at"):
        return "canceled"
    return "failed" if _int((obj.get("request_counts") or {}).get("expired")) else "completed"


def dialect_of(job_id: str) -> str:
    """The dialect a job was submitted in, from its id: each dialect has its own id
    format (the OpenRelay batch API's `batch_` and 32 hex, Anthropic's `msgbatch_`, the
    Relay Batches API's 32 hex), which is how the TUI reads a list of all of them
    (`GET /v1/batches?dialect=all`)."""
    for prefix, dialect in ID_PREFIXES.items():
        if job_id.startswith(prefix):
            return dialect
    return "relay"


ID_PREFIXES = {"batch_": "openai", "msgbatch_": "anthropic"}
BATCH_PARSERS = {"relay": JobView.from_relay, "openai": JobView.from_openai,
                 "anthropic": JobView.from_anthropic}


def _status_matches(shown: str, wanted: str) -> bool:
    if wanted == "running":
        return shown in RUNNING
    if wanted == "failed":
        return shown in ("failed", "expired")
    return shown == wanted


def order_key(view: JobView) -> tuple[int, float, str]:
    """Running jobs on top, then newest first."""
    return (0 if view.status in RUNNING else 1, -(view.created_at or 0.0), view.id)


class Throughput:
    """Rows per second of one job, from the (time, rows done) of its progress events."""

    def __init__(self, *, window: float = 10.0, keep: int = 60) -> None:
        self.window = window
        self._points: deque[tuple[float, int]] = deque()
        self.samples: deque[float] = deque(maxlen=keep)

    def add(self, at: float, done: int) -> None:
        if self._points:
            last_at, last_done = self._points[-1]
            if at <= last_at:
                return
            if done < last_done:  # counters went back (a re-run): start over
                self._points.clear()
                self._points.append((at, done))
                return
            self.samples.append((done - last_done) / (at - last_at))
        self._points.append((at, done))
        while len(self._points) > 2 and at - self._points[0][0] > self.window:
            self._points.popleft()

    def rate(self) -> float | None:
        if len(self._points) < 2:
            return None
        (t0, d0), (t1, d1) = self._points[0], self._points[-1]
        return (d1 - d0) / (t1 - t0)


def average_rate(view: JobView, now: float) -> float | None:
    """Rows per second over the job's run so far (or its whole run once it ended)."""
    # Rows a cancel ended never ran: they count as failed but not as throughput.
    done = view.ran
    if view.started_at is None or done == 0:
        return None
    elapsed = (view.finished_at or now) - view.started_at
    return done / elapsed if elapsed > 0 else None


def eta_seconds(view: JobView, rate: float | None) -> float | None:
    if view.terminal or view.status not in RUNNING or not rate or rate <= 0:
        return None
    return max(view.total - view.done, 0) / rate


def progress_bar(done: int, total: int, width: int = 10, *, never_ran: int = 0) -> str:
    """`██████░░░░  60%`: full blocks for the rows that ran, dots for rows that never ran
    (a cancel ended them: `████······  40%`), shaded blocks for the rest. The percentage
    counts only rows that ran, so a cancelled job never reads 100%."""
    fraction = min(done / total, 1.0) if total > 0 else 0.0
    filled = int(fraction * width)
    waiting = max(total - done - never_ran, 0)
    room = width - filled
    unrun = room - min(round(waiting / total * width) if total > 0 else room, room)
    unrun = max(unrun, 1 if room else 0) if never_ran else 0  # a few still show
    return ("█" * filled + NEVER_RAN_MARK * unrun + "░" * (width - filled - unrun)
            + f" {int(fraction * 100):>3}%")


NEVER_RAN_MARK = "·"


def age_text(seconds: float | None) -> str:
    """45s, 12m, 3h, 5d: one unit, rounded down."""
    if seconds is None:
        return "—"
    s = max(int(seconds), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def duration_text(seconds: float | None) -> str:
    """45s, 12m30s, 2h05m: two units, for ETAs and run times."""
    if seconds is None:
        return "—"
    s = max(round(seconds), 0)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def rate_text(rate: float | None) -> str:
    if rate is None:
        return "—"
    return f"{rate:.1f}" if rate < 100 else f"{rate:.0f}"


def clock_text(ts: float | None) -> str:
    """An instant as UTC `2026-10-04 09:12:44Z`."""
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def next_run_text(next_run_at: float | None, now: float) -> str:
    """A cron template's next run: `2026-10-05 02:00:00Z (in 16h30m)`; once that time
    has passed, `due since 02:00:00Z` until relayd says when the one after is."""
    if next_run_at is None:
        return "—"
    if next_run_at <= now:
        return f"due since {clock_text(next_run_at)[11:]}"
    return f"{clock_text(next_run_at)} (in {duration_text(next_run_at - now)})"


def key_hint(key: str | None) -> str:
    """A key's public prefix (what `relayd keys list` shows), never the secret part."""
    if not key:
        return "no key"
    return key[:10] + "…"


def _used(obj: dict[str, Any], key: str) -> int | None:
    """One count of a batch object's `usage` (BatchUsage with `cost_nano_usd`)."""
    usage = obj.get("usage")
    return _maybe_int(usage.get(key)) if isinstance(usage, dict) else None
