"""The canned `GET /v1/stats` answer of `relaytui.testing.FakeRelay`, in relayd's shape
(`daemon/domain/stats.py: render`), at the same fixed `NOW` as its jobs: the two running
jobs' rows over the last half hour, gpt-4o-mini failing now (its rows fall back to
`backup`), the jobs' tokens and cost, and the queued job. No Textual, no network."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

BUCKETS = 60  # points of the window, as relayd gives them
# Rows (completed, failed) finished in each of the last minutes before NOW, latest first:
# "Review sentiment" from 12 minutes ago, "Ticket summaries" from 25 minutes ago, with a
# dip while gpt-4o-mini began to fail (5 minutes ago).
_RECENT = [(46, 0), (44, 1), (41, 0), (38, 0), (31, 1), (26, 0), (43, 0), (47, 0), (45, 0),
           (49, 0), (42, 0), (40, 0), (22, 0), (24, 0), (21, 0), (25, 0), (23, 0), (20, 0),
           (22, 0), (26, 0), (24, 0), (21, 0), (19, 0), (23, 0), (17, 0), (6, 0)]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rows_between(start: float, end: float, now: float) -> tuple[int, int]:
    """The canned rows finished in [start, end), spread evenly over each minute."""
    done = failed = 0.0
    for ago, (completed, lost) in enumerate(_RECENT):
        m_end = now - ago * 60
        overlap = max(0.0, min(end, m_end) - max(start, m_end - 60)) / 60
        done, failed = done + completed * overlap, failed + lost * overlap
    return round(done), round(failed)


def _model(model: str, errors: dict[str, int], ok: int, p50: int, p95: int, *,
           concurrency: tuple[int, int], paused: bool = False) -> dict[str, Any]:
    every = {c: errors.get(c, 0) for c in ("429", "5xx", "timeout", "connection", "other")}
    total = ok + sum(every.values())
    now, most = concurrency
    return {"model": model, "attempts": total, "errors": every,
            "error_rates": {c: round(n / total, 4) for c, n in every.items()},
            "latency_ms": {"p50": p50, "p95": p95, "samples": ok},
            "dispatch": {"max_concurrency": most, "concurrency": now, "in_flight": now,
                         "adaptive": True, "paused": paused, "paused_until": None,
                         "rpm": None, "tpm": None, "upstream_rpm": None,
                         "upstream_tpm": None, "concurrency_good": None,
                         "concurrency_failed": None,
                         "rate_limited": errors.get("429", 0)}}


def _usage(input_tokens: int, output_tokens: int, nano_usd: int) -> dict[str, Any]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens,
            "cost_nano_usd": nano_usd, "cost_usd": nano_usd / 1e9}


def canned_stats(now: float, *, minutes: int = 60, jobs: dict[int, str],
                 workspace: str = "support-team") -> dict[str, Any]:
    """The answer of `GET /v1/stats?minutes=…` at `now`; `jobs` gives the ids of the
    canned jobs 1 (Review sentiment), 2 (Ticket summaries) and 9 (Translate FAQ)."""
    since, bucket_s = now - minutes * 60, max(1, minutes * 60 // BUCKETS)
    points = []
    for i in range(BUCKETS):
        done, failed = _rows_between(since + i * bucket_s, since + (i + 1) * bucket_s, now)
        points.append({"at": _iso(since + i * bucket_s), "completed": done, "failed": failed})
    return {
        "object": "stats", "workspace": workspace, "generated_at": _iso(now),
        "window": {"since": _iso(since), "minutes": minutes, "bucket_seconds": bucket_s},
        "throughput": points,
        "models": [_model("backup", {"5xx": 4}, 832, 410, 1120, concurrency=(32, 32)),
                   _model("gpt-4o-mini", {"429": 9, "5xx": 3, "timeout": 2,
                                          "connection": 38}, 360, 640, 1830,
                          concurrency=(8, 32), paused=True)],
        "failing": [{"model": "gpt-4o-mini", "error": "connection", "share": 1.0,
                     "attempts": 12, "message": "gpt-4o-mini: 100% connection errors"}],
        "usage": {"total": _usage(18_402_113, 2_118_950, 41_270_000_000),
                  "jobs": [{"id": jobs[9], "name": "Translate FAQ (fr)",
                            "model": "gpt-4o-mini", **_usage(0, 0, 0)},
                           {"id": jobs[1], "name": "Review sentiment — October",
                            "model": "gpt-4o-mini", **_usage(75_640, 9_760, 17_202_000)},
                           {"id": jobs[2], "name": "Ticket summaries — week 40",
                            "model": "backup", **_usage(1_056_400, 166_800, 4_309_000_000)}]},
        "queue": [{"priority": 1, "jobs": 1, "rows": 80}],
        "budget": None,
    }
