"""An in-memory stand-in for `RelayClient` with canned jobs at fixed times, and the clock
that goes with it: the TUI's snapshot tests and README screenshots run on it, so what
they show never changes. Its event stream replays progress over the 30 s before `NOW`
(moving the clock as it goes), then waits until closed. No Textual, no network."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from relaytui.client import Event, RelayError

NOW = datetime(2026, 10, 4, 9, 30, tzinfo=UTC).timestamp()
REPLAY_S = 30
_TAIL = "5e0c4d2a9b7f41e3a8c6d1f2b3e4a5"  # ids are two digits and this: 32 hex


def job_id(n: int, *, dialect: str = "relay") -> str:
    return ("batch_" if dialect == "openai" else "") + f"{n:02d}{_TAIL}"


class FakeClock:
    """A clock that only moves when told."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def _job(n: int, name: str, status: str, *, model: str = "gpt-4o-mini", total: int = 300,
         completed: int = 0, failed: int = 0, dead_letter: int = 0, age: float,
         ran: float | None = None, took: float | None = None, **more: Any) -> dict[str, Any]:
    created = NOW - age
    started = None if ran is None else created + ran
    finished = None if took is None or started is None else started + took
    return {"id": job_id(n, dialect=more.get("dialect", "relay")), "name": name,
            "status": status, "model": model, "priority": more.pop("priority", 0),
            "total": total, "completed": completed, "failed": failed,
            "dead_letter": dead_letter, "created_at": created, "started_at": started,
            "finished_at": finished, "cron": None, "next_run_at": None, "template_id": None,
            "error": None, "webhook": None, "dialect": "relay", "tier": "standard", **more}


def canned_jobs() -> list[dict[str, Any]]:
    """Jobs in the events' neutral shape (epoch times), newest first. Ages keep clear of
    unit boundaries over the replay, so "12m" stays "12m" whenever it is drawn."""
    template = _job(3, "Nightly digest", "scheduled", total=120, age=3 * 86400 + 5 * 3600,
                    cron="0 2 * * *", next_run_at=NOW + 16.5 * 3600, last_run_id=job_id(4))
    return [
        _job(9, "Translate FAQ (fr)", "queued", total=80, age=100, priority=1),
        _job(1, "Review sentiment — October", "running", completed=150, failed=2,
             dead_letter=1, age=760, ran=40, priority=5),
        _job(2, "Ticket summaries — week 40", "running", model="backup", total=1200,
             completed=310, age=1500, ran=30),
        _job(5, "Reviews (CSV import)", "completed", completed=297, failed=3, dead_letter=3,
             age=7800, ran=5, took=94,
             webhook={"url": "https://hooks.example.com/relay", "attempted_at":
                      _iso(NOW - 7800 + 99), "status_code": 200, "error": None},
             webhookUrl="https://hooks.example.com/relay"),
        _job(4, "Nightly digest", "completed", total=120, completed=120, age=27000, ran=2,
             took=41, template_id=template["id"]),
        _job(8, "Classify support mail", "canceled", total=450, completed=120, failed=330,
             age=30000, ran=3, took=60),
        _job(7, "Product Q&A", "failed", model="gpt-4o", total=40, age=40000,
             error="model 'gpt-4o' is no longer configured", took=0, ran=1),
        _job(6, "Embeddings backfill", "completed", model="embed", total=2000,
             completed=2000, age=90000, ran=10, took=400, dialect="openai", tier="expedited"),
        template,
    ]


MODELS = ("gpt-4o-mini", "backup", "embed")
_STEPS = [3, 5, 6, 4, 7, 8, 6, 5, 9, 7, 6, 8, 7, 5, 6]


def _results(job_id: str) -> list[dict[str, Any]]:
    moods = ["positive", "negative", "neutral", "positive", "positive", "negative"]
    items: list[dict[str, Any]] = [{"custom_id": f"review-{i:04d}", "content": moods[i % 6]}
                                   for i in range(1, 19)]
    items[9] = {"custom_id": "review-0010", "error": "upstream_error: 503 from gpt-4o-mini "
                "after 3 attempts; fallback backup: 503 after 3 attempts"}
    items[13] = {"custom_id": "review-0014", "content": "mixed: \"great taste\", slow [delivery]"}
    return items


def _dead_letter() -> list[dict[str, Any]]:
    def entry(n: int, code: int, prompt: str) -> dict[str, Any]:
        log = [{"model": model, "status_code": code, "error": f"{code} from upstream",
                "duration_ms": 100 + 7 * i + n, "started_at": NOW - 7700 + i}
               for i, model in enumerate(["gpt-4o-mini"] * 3 + ["backup"] * 3)]
        return {"custom_id": f"review-{n:04d}", "attempts": 6,
                "models": ["gpt-4o-mini", "backup"], "status_code": code,
                "last_error": f"upstream_error: {code} from gpt-4o-mini after 3 attempts; "
                              f"fallback backup: {code} after 3 attempts",
                "messages": [{"role": "system", "content": "Answer positive, negative or "
                              "neutral."}, {"role": "user", "content": prompt}],
                "attempt_log": log}
    return [entry(10, 503, "Classify: arrived broken [sim:fail=503]"),
            entry(42, 502, "Classify: never again [sim:fail=502]"),
            entry(77, 429, "Classify: fine I guess [sim:fail=429]")]


class FakeStream:
    def __init__(self, relay: FakeRelay) -> None:
        self.relay = relay
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[Event]:
        yield from self.relay.replay()
        self.relay.replayed.set()
        self._closed.wait()

    def close(self) -> None:
        self._closed.set()


class FakeRelay:
    """`RelayClient`'s methods over canned data; records what was asked of it."""

    def __init__(self, *, url: str = "http://127.0.0.1:8080", replay: bool = True) -> None:
        self.url = url
        self.clock = FakeClock(NOW - REPLAY_S if replay else NOW)
        self.replay_progress = replay
        self.replayed = threading.Event()
        self.jobs_by_id = {j["id"]: j for j in canned_jobs()}
        self.submitted: list[dict[str, Any]] = []
        self.cancelled: list[str] = []
        self.retried: list[tuple[str, list[str] | None]] = []

    # -- reads ---------------------------------------------------------------------

    def healthy(self) -> bool:
        return True

    def close(self) -> None:
        pass

    def all_jobs(self, **filters: Any) -> list[dict[str, Any]]:
        return self.jobs(limit=1000, **filters)["data"]

    def jobs(self, *, limit: int = 100, after: str | None = None, status: str | None = None,
             template_id: str | None = None) -> dict[str, Any]:
        data = [self._render(j) for j in sorted(self.jobs_by_id.values(),
                                                key=lambda j: -j["created_at"])
                if template_id is None or j["template_id"] == template_id]
        return {"object": "list", "data": data[:limit], "has_more": False,
                "first_id": None, "last_id": None}

    def job(self, job_id: str) -> dict[str, Any]:
        if job_id not in self.jobs_by_id:
            raise RelayError(404, f"No batch {job_id}.")
        return self._render(self.jobs_by_id[job_id])

    def results(self, job_id: str) -> dict[str, Any]:
        return {"id": job_id, "object": "list", "data": _results(job_id)}

    def dead_letter(self, job_id: str) -> dict[str, Any]:
        dead = _dead_letter() if self.jobs_by_id.get(job_id, {}).get("dead_letter") else []
        return {"id": job_id, "object": "list", "data": dead}

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": m, "object": "model"} for m in MODELS]}

    # -- writes --------------------------------------------------------------------

    def submit(self, *, model: str, requests: list[dict[str, Any]], name: str | None = None,
               priority: int = 0, cron: str | None = None,
               webhook_url: str | None = None) -> dict[str, Any]:
        if model not in MODELS:
            raise RelayError(400, f"Unknown model {model!r}.", "model")
        if cron is not None and len(cron.split()) != 5:
            raise RelayError(400, "'cron' must have exactly 5 fields.", "cron")
        self.submitted.append({"model": model, "requests": requests, "name": name,
                               "priority": priority, "cron": cron, "webhook_url": webhook_url})
        n = 10 + len(self.submitted)
        job = _job(n, name or "upload", "scheduled" if cron else "queued", model=model,
                   total=len(requests), age=0, priority=priority, cron=cron)
        self.jobs_by_id[job["id"]] = job
        return self._render(job)

    def cancel(self, job_id: str) -> dict[str, Any]:
        self.cancelled.append(job_id)
        return self._render(self.jobs_by_id[job_id])

    def retry_dead_letter(self, job_id: str,
                          custom_ids: list[str] | None = None) -> dict[str, Any]:
        self.retried.append((job_id, custom_ids))
        total = len(custom_ids) if custom_ids else len(_dead_letter())
        job = _job(20 + len(self.retried), "Retry of dead letter", "queued", total=total,
                   age=0)
        self.jobs_by_id[job["id"]] = job
        return self._render(job)

    # -- live events ---------------------------------------------------------------

    def open_events(self) -> FakeStream:
        return FakeStream(self)

    def replay(self) -> Iterator[Event]:
        """Snapshots of the jobs that have not ended, then progress up to `NOW`."""
        for job in self.jobs_by_id.values():
            if job["status"] in ("queued", "running", "scheduled"):
                yield Event("job.snapshot", self._event(job))
        if not self.replay_progress:
            return
        for step in _STEPS:
            self.clock.now += REPLAY_S / len(_STEPS)
            for n, rows in ((1, step), (2, step * 3 - 2)):
                job = self.jobs_by_id[job_id(n)]
                job["completed"] += rows
                yield Event("job.progress", self._event(job))
        self.clock.now = NOW

    @staticmethod
    def _event(job: dict[str, Any]) -> dict[str, Any]:
        return {**{k: v for k, v in job.items() if k not in ("webhook", "webhookUrl")},
                "relay_status": job["status"]}

    @staticmethod
    def _render(job: dict[str, Any]) -> dict[str, Any]:
        """`GET /v1/batches/{id}`: Relay's shape, or OpenAI's for an OpenAI batch."""
        if job["dialect"] == "openai":
            return {"id": job["id"], "object": "batch", "status": job["status"],
                    "endpoint": "/v1/embeddings", "input_file_id": "file-" + job["id"][6:],
                    "created_at": int(job["created_at"]),
                    "in_progress_at": int(job["started_at"]),
                    "completed_at": int(job["finished_at"]), "model": job["model"],
                    "metadata": {"name": job["name"]}, "priority": job["tier"],
                    "request_counts": {"total": job["total"], "completed": job["completed"],
                                       "failed": job["failed"]}, "errors": None}
        view = {k: v for k, v in job.items() if k not in ("dialect", "tier", "finished_at")}
        view.update(object="batch", created_at=_iso(job["created_at"]),
                    started_at=_iso(job["started_at"]), completed_at=_iso(job["finished_at"]),
                    next_run_at=_iso(job["next_run_at"]))
        return view
