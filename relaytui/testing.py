"""A relayd in memory, with canned jobs at fixed times, and the clock that goes with it:
the TUI's snapshot tests and README screenshots run on it, so what they show never
changes. `FakeRelay.client()` is a real `RelayClient` over `httpx.MockTransport`
(`relaytui.testing_http` routes each request), so the client's own code runs and every
answer is in relayd's wire shape: tests/tui checks each one against relayd's OpenAPI
document. Its event stream replays progress over the 30 s before `NOW` (moving the clock
as it goes), then waits until closed. The nightly digest's rows are tool-calling
records: their results carry tool-round summaries and `row()` gives each one's
transcript. `FakeRelay(workflows=True)` adds a running OpenAI batch of workflow records
(one completed, one waiting, one failed at its step limit): `row()` gives where each
stands and `workflows()` the job's counters. `stats()` answers `GET /v1/stats` with
`relaytui.testing_stats`' canned numbers (or `stats_answer`). No Textual, no network."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx

from relaytui.client import Event, RelayClient, RelayError
from relaytui.progress import ENDED
from relaytui.testing_http import serve
from relaytui.testing_stats import canned_stats

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


def _iso_ms(ts: float) -> str:
    """An attempt's instant as relayd writes it: ISO 8601 to the millisecond."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


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
            "dead_letter": dead_letter,
            "dead_letter_open": more.pop("dead_letter_open", dead_letter),
            "canceled": more.pop("canceled", 0), "created_at": created, "started_at": started,
            "finished_at": finished, "cron": None, "next_run_at": None, "template_id": None,
            "error": None, "webhook": None, "webhookUrl": None, "retry_of": None,
            "dialect": "relay", "tier": "standard", "input_tokens": 0, "output_tokens": 0,
            "cost_nano_usd": 0, **more}


def _tokens(tokens_in: int, tokens_out: int, nano_usd: int) -> dict[str, Any]:
    """A job's usage so far (the running ones' as `relaytui.testing_stats` has them)."""
    return {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost_nano_usd": nano_usd}


def canned_jobs() -> list[dict[str, Any]]:
    """Jobs in the events' neutral shape (epoch times), newest first. Ages keep clear of
    unit boundaries over the replay, so "12m" stays "12m" whenever it is drawn."""
    template = _job(3, "Nightly digest", "scheduled", total=120, age=3 * 86400 + 5 * 3600,
                    cron="0 2 * * *", next_run_at=NOW + 16.5 * 3600, last_run_id=job_id(4))
    return [
        _job(9, "Translate FAQ (fr)", "queued", total=80, age=100, priority=1),
        _job(1, "Review sentiment — October", "running", completed=150, failed=2,
             dead_letter=1, age=760, ran=40, priority=5, **_tokens(75_640, 9_760, 17_202_000)),
        _job(2, "Ticket summaries — week 40", "running", model="backup", total=1200,
             completed=310, age=1500, ran=30, **_tokens(1_056_400, 166_800, 4_309_000_000)),
        _job(5, "Reviews (CSV import)", "completed", completed=297, failed=3, dead_letter=3,
             age=7800, ran=5, took=94,
             webhook={"url": "https://hooks.example.com/relay", "attempted_at":
                      _iso(NOW - 7800 + 99), "status_code": 200, "error": None},
             webhookUrl="https://hooks.example.com/relay", **_tokens(89_100, 8_910, 20_049_000)),
        _job(4, "Nightly digest", "completed", total=120, completed=120, age=27000, ran=2,
             took=41, template_id=template["id"], **_tokens(190_440, 14_880, 37_500_000)),
        _job(8, "Classify support mail", "canceled", total=450, completed=120, failed=330,
             canceled=328, age=30000, ran=3, took=60, **_tokens(36_000, 3_600, 8_100_000)),
        _job(7, "Product Q&A", "failed", model="gpt-4o", total=40, age=40000,
             error="model 'gpt-4o' is no longer configured", took=0, ran=1),
        _job(6, "Embeddings backfill", "completed", model="embed", total=2000,
             completed=2000, age=90000, ran=10, took=400, dialect="openai", tier="expedited",
             **_tokens(412_000, 0, 8_240_000)),
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
                "duration_ms": 100 + 7 * i + n, "started_at": _iso_ms(NOW - 7700 + i)}
               for i, model in enumerate(["gpt-4o-mini"] * 3 + ["backup"] * 3)]
        messages = [{"role": "system", "content": "Answer positive, negative or neutral."},
                    {"role": "user", "content": prompt}]
        return {"custom_id": f"review-{n:04d}", "attempts": 6,
                "models": ["gpt-4o-mini", "backup"], "status_code": code,
                "last_error": f"upstream_error: {code} from gpt-4o-mini after 3 attempts; "
                              f"fallback backup: {code} after 3 attempts",
                "messages": messages,
                "body": {"model": "gpt-4o-mini", "messages": messages},
                "attempt_log": log, "executor_calls": [], "redriven_to": None, "state": "open",
                "discarded_at": None}
    return [entry(10, 503, "Classify: arrived broken [sim:fail=503]"),
            entry(42, 502, "Classify: never again [sim:fail=502]"),
            entry(77, 429, "Classify: fine I guess [sim:fail=429]")]


_DIGEST = job_id(4)  # the nightly digest's rows are tool-calling records
_TEAMS = ("billing", "delivery", "accounts", "returns", "mobile", "web", "partners",
          "payments", "catalogue", "support-fr", "support-de", "vip")
# Each digest row's summary: (tool rounds, exhausted, tool errors); None: the row failed.
_DIGEST_ROUNDS: tuple[tuple[int, bool, int] | None, ...] = (
    (2, False, 0), (1, False, 0), (0, False, 0), (2, False, 0), (3, False, 0),
    (1, False, 0), None, (4, True, 0), (2, False, 1), (1, False, 0), (2, False, 0),
    (1, False, 0))
_DIGEST_TOOLS = (
    ("search_tickets", "Tickets of a team since a date, with their top tags"),
    ("get_metric", "One metric over a window: refunds, csat, first_reply_minutes"),
    ("lookup_order", "An order's status"))
_DIGEST_CONFIG = {"url": "https://tools.example.com/relay/run", "type": "http",
                  "authorization": "***", "max_rounds": 4}
_EXECUTOR_FAILED = ("tool_executor_unreachable: round 2: connection: could not connect to "
                    "tools.example.com:443 (after 3 attempts)")


def _digest_answer(team: str) -> str:
    return (f"{team}: 14 new tickets (3 about late delivery); refunds +4% on the day; "
            "order A-1043 still held at the depot.")


def _digest_results() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n, (team, rounds) in enumerate(zip(_TEAMS, _DIGEST_ROUNDS, strict=True), start=1):
        custom_id = f"digest-{n:02d}"
        if rounds is None:
            items.append({"custom_id": custom_id, "error": _EXECUTOR_FAILED})
            continue
        content = None if rounds[1] else _digest_answer(team)
        items.append({"custom_id": custom_id, "content": content,
                      "openrelay": _summary(*rounds)})
    return items


def _summary(rounds: int, exhausted: bool, errors: int) -> dict[str, Any]:
    summary: dict[str, Any] = {"tool_rounds": rounds, "model_calls": rounds + 1}
    if exhausted:
        summary["tool_rounds_exhausted"] = True
    if errors:
        summary["tool_errors"] = [_call_id(1, "b")]
    return summary


def _call_id(round_: int, which: str) -> str:
    return f"call_r{round_}{which}"


def _tool_round(round_: int, team: str) -> list[tuple[str, str, dict[str, Any], str]]:
    """(call id, tool, arguments, tool result) of each call of one digest round."""
    rounds = [
        [(_call_id(1, "a"), "search_tickets", {"team": team, "since": "2026-10-03"},
          '{"count": 14, "top_tags": ["delivery", "refund", "login"]}'),
         (_call_id(1, "b"), "get_metric", {"name": "refunds", "window": "1d"},
          '{"value": 0.041, "change": "+4%"}')],
        [(_call_id(2, "a"), "lookup_order", {"order_id": "A-1043"},
          '{"status": "held at depot", "since": "2026-10-01"}')],
        [(_call_id(3, "a"), "search_tickets", {"team": team, "tag": "login"},
          '{"count": 2, "top_tags": ["login"]}')],
        [(_call_id(4, "a"), "get_metric", {"name": "csat", "window": "7d"},
          '{"value": 4.6, "change": "-0.1"}')],
        [(_call_id(5, "a"), "get_metric", {"name": "first_reply_minutes", "window": "1d"},
          '{"value": 38}')],
    ]
    return rounds[round_ - 1]


def _assistant(calls: list[tuple[str, str, dict[str, Any], str]]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": name, "arguments": json.dumps(arguments)}}
        for call_id, name, arguments, _ in calls]}


def _transcript(team: str, rounds: int, *, errors: int = 0,
                cut_at: int | None = None) -> list[dict[str, Any]]:
    """Every stored round; the one at `cut_at` has the model's turn but no results."""
    transcript = []
    for number in range(1, rounds + 1):
        calls = _tool_round(number, team)
        messages = [_assistant(calls)]
        if number != cut_at:
            messages += [{"role": "tool", "tool_call_id": call_id,
                          "content": ("tool error: metrics backend timed out"
                                      if errors and call_id == _call_id(1, "b") else result)}
                         for call_id, _, _, result in calls]
        transcript.append({"round": number, "model": "gpt-4o-mini",
                           "usage": _usage(number),
                           "messages": messages})
    return transcript


def _usage(*calls: int) -> dict[str, int]:
    """The tokens of these model calls (1-based) of a digest row, summed."""
    return {"prompt_tokens": sum(180 + 120 * n for n in calls),
            "completion_tokens": sum(20 + 4 * n for n in calls)}


def _attempts(count: int, started: float, *, code: int = 200,
              model: str = "gpt-4o-mini") -> list[dict[str, Any]]:
    return [{"model": model, "status_code": code,
             "error": None if code == 200 else f"{code} from upstream",
             "duration_ms": 410 + 37 * i, "started_at": _iso_ms(started + i)}
            for i in range(count)]


def _executor_calls(started: float) -> list[dict[str, Any]]:
    """A digest row's executor calls: round 1 answered; round 2 found the executor down
    three times (the first try and two retries)."""
    down = "connection: could not connect to tools.example.com:443"
    return [{"round": number, "executor": "http", "status_code": None, "error": error,
             "duration_ms": ms, "started_at": _iso_ms(started + at)}
            for number, error, ms, at in ((1, None, 212, 0.5), (2, down, 3, 1.5),
                                          (2, down, 2, 1.8), (2, down, 3, 2.4))]


def _completion(message: dict[str, Any], *, finish: str = "stop", calls: int = 1,
                summary: dict[str, Any] | None = None) -> dict[str, Any]:
    usage = _usage(*range(1, calls + 1))
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    body: dict[str, Any] = {"id": "chatcmpl-sim", "object": "chat.completion",
                            "model": "gpt-4o-mini",
                            "choices": [{"index": 0, "message": message,
                                         "finish_reason": finish}], "usage": usage}
    return body | ({"openrelay": summary} if summary is not None else {})


def _row_detail(job: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """`GET /v1/batches/{id}/rows/{custom_id}` of one canned result."""
    custom_id = item["custom_id"]
    started = (job.get("started_at") or NOW) + 1
    detail: dict[str, Any] = {"object": "batch.row", "batch_id": job["id"],
                              "custom_id": custom_id, "status": "completed",
                              "model": "gpt-4o-mini", "attempts": 1, "error": None,
                              "error_code": None, "dead_letter": False,
                              "transcript": [], "attempt_log": _attempts(1, started),
                              "executor_calls": []}
    if job["id"] == _DIGEST:
        n = int(custom_id.split("-")[1])
        team, rounds = _TEAMS[n - 1], _DIGEST_ROUNDS[n - 1]
        detail["body"] = {
            "model": "gpt-4o-mini",
            "messages": [{"role": "system", "content": "You write the morning digest of a "
                          "support team. Use the tools for facts; never guess numbers."},
                         {"role": "user", "content": f"Digest for team {team}, 2026-10-03."}],
            "tools": [{"type": "function", "function": {"name": name, "description": about,
                                                        "parameters": {"type": "object"}}}
                      for name, about in _DIGEST_TOOLS],
            "openrelay": {"tool_config": dict(_DIGEST_CONFIG)}}
        if rounds is None:  # the executor went down in round 2: dead-lettered
            detail.update(status="failed", error=_EXECUTOR_FAILED,
                          error_code="tool_executor_unreachable", response=None,
                          dead_letter=True, transcript=_transcript(team, 2, cut_at=2),
                          attempt_log=_attempts(2, started), attempts=2,
                          executor_calls=_executor_calls(started))
        else:
            count, exhausted, errors = rounds
            if exhausted:
                final = _completion(_assistant(_tool_round(count + 1, team)),
                                    finish="tool_calls", calls=count + 1,
                                    summary=_summary(*rounds))
            else:
                final = _completion({"role": "assistant", "content": _digest_answer(team)},
                                    calls=count + 1, summary=_summary(*rounds))
            detail.update(response=final, transcript=_transcript(team, count, errors=errors),
                          attempt_log=_attempts(count + 1, started), attempts=count + 1)
        detail["tool_rounds"] = len(detail["transcript"])
        return detail
    prompt = f"Classify: {custom_id.replace('-', ' ')}"
    detail["body"] = {"model": job["model"], "messages": [
        {"role": "system", "content": "Answer positive, negative or neutral."},
        {"role": "user", "content": prompt}]}
    detail["model"] = job["model"]
    if "error" in item:
        detail.update(status="failed", error=item["error"], error_code="upstream_error",
                      dead_letter=True, attempts=6,
                      response={"error": {"message": "Service unavailable", "code": 503}},
                      attempt_log=_attempts(3, started, code=503)
                      + _attempts(3, started + 3, code=503, model="backup"))
    else:
        detail["response"] = _completion({"role": "assistant", "content": item["content"]})
    detail["tool_rounds"] = 0
    return detail


# -- workflow records -----------------------------------------------------------------

WORKFLOW_JOB = job_id(10, dialect="openai")  # only with `FakeRelay(workflows=True)`
_FLOW_URL = "https://flows.example.com/relay/summarise"
_FLOW_OUTPUT = {"summary": "Relay 2.4 adds workflow records, a token budget per record "
                "and faster retries.", "chunks": 4, "sources": ["notes-2.4.md"]}


def workflow_job() -> dict[str, Any]:
    """The batch of workflow records: running (one record still waits)."""
    return _job(10, "Release-note summaries", "running", total=3, completed=1, failed=1,
                age=400, ran=2, dialect="openai", endpoint="/v1/chat/completions",
                **_tokens(2_360, 550, 1_020_000))


def _flow(custom_id: str, status: str, *, text: str, max_steps: int,
          state: dict[str, Any], **more: Any) -> dict[str, Any]:
    """One workflow record's detail; `state` as the daemon stores it."""
    steps = state["step"]
    detail: dict[str, Any] = {
        "object": "batch.row", "batch_id": WORKFLOW_JOB, "custom_id": custom_id,
        "status": status, "model": "gpt-4o-mini", "attempts": 0, "error": None,
        "error_code": None, "dead_letter": False, "response": None, "tool_rounds": 0,
        "transcript": [], "attempt_log": [], "executor_calls": [],
        "body": {"model": "gpt-4o-mini", "messages": [
            {"role": "system", "content": "Summarise release notes for the changelog."},
            {"role": "user", "content": text}],
            "openrelay": {"workflow": {"url": _FLOW_URL, "authorization": "***",
                                       "context": {"team": "docs"},
                                       "max_steps": max_steps}}},
        "workflow": {"phase": state["phase"], "step": steps,
                     "totals": {"steps": steps, "requests": state["requests_total"],
                                "input_tokens": state["input_tokens"],
                                "output_tokens": state["output_tokens"]},
                     "history": state["history"], "event": state["event"],
                     "requests": state.get("requests", 0),
                     "finished": state.get("finished", 0),
                     "wake_at": state.get("wake_at")}}
    return detail | more


def _continue(step: int, requests: int) -> dict[str, Any]:
    return {"step": step, "action": "continue", "requests": requests}


def _workflow_rows() -> dict[str, dict[str, Any]]:
    """`GET /v1/batches/{id}/rows/{custom_id}` of each workflow record."""
    done = {"phase": "deliver", "step": 2, "requests_total": 5, "input_tokens": 1260,
            "output_tokens": 310, "event": "workflow.results",
            "history": [_continue(1, 4), _continue(2, 1)], "requests": 0, "finished": 0}
    waiting = {"phase": "waiting", "step": 2, "requests_total": 3, "input_tokens": 840,
               "output_tokens": 150, "event": "workflow.results", "wake_at": NOW + 45,
               "history": [_continue(1, 3),
                           {"step": 2, "action": "wait", "delay_ms": 60_000}]}
    limited = {"phase": "deliver", "step": 3, "requests_total": 5, "input_tokens": 1100,
               "output_tokens": 240, "event": "workflow.results",
               "history": [_continue(1, 2), _continue(2, 2), _continue(3, 1)]}
    totals = {"steps": 2, "requests": 5, "input_tokens": 1260, "output_tokens": 310}
    rows = [
        _flow("notes-2.4", "completed", text="Summarise the release notes of 2.4.",
              max_steps=8, state=done,
              response={"output": _FLOW_OUTPUT, "openrelay": totals}),
        _flow("notes-2.5", "pending", text="Summarise the release notes of 2.5.",
              max_steps=8, state=waiting),
        _flow("notes-3.0", "failed", text="Summarise the release notes of 3.0.",
              max_steps=3, state=limited, error_code="workflow_step_limit",
              error="workflow_step_limit: the callback asked for step 4; max_steps is 3"),
    ]
    return {row["custom_id"]: row for row in rows}


def _workflow_results() -> list[dict[str, Any]]:
    """The finished workflow records as `GET /v1/batches/{id}/results` gives them."""
    items = []
    for row in _workflow_rows().values():
        if row["status"] == "completed":
            items.append({"custom_id": row["custom_id"], "content": None,
                          "openrelay": row["response"]["openrelay"]})
        elif row["status"] == "failed":
            items.append({"custom_id": row["custom_id"], "error": row["error"]})
    return items


def workflow_counters(job_id: str) -> dict[str, Any]:
    """`GET /v1/batches/{id}/workflows`, summed over the job's workflow records."""
    states = [row["workflow"] | {"status": row["status"]}
              for row in _workflow_rows().values()] if job_id == WORKFLOW_JOB else []
    live = [s for s in states if s["status"] == "pending"]
    counters: dict[str, Any] = {
        "object": "batch.workflows", "batch_id": job_id, "started": len(states),
        "ended": len(states) - len(live),
        "running": sum(1 for s in live if s["phase"] == "running"),
        "waiting": sum(1 for s in live if s["phase"] == "waiting"),
        "calling_back": sum(1 for s in live if s["phase"] == "deliver")}
    for key in ("steps", "requests", "input_tokens", "output_tokens"):
        counters[key] = sum(s["totals"][key] for s in states)
    return counters


# -- the wire shapes -------------------------------------------------------------------

# A canned job's status (the Relay Batches API's word) as relayd names it inside (the
# events' `status`) and in the OpenRelay batch API.
_INTERNAL = {"canceled": "cancelled"}
_OPENAI = {"queued": "in_progress", "running": "in_progress", "canceled": "cancelled"}


def _whole(ts: float | None) -> int | None:
    return None if ts is None else int(ts)


def _batch_usage(job: dict[str, Any]) -> dict[str, Any]:
    """relayd's `BatchUsage` of a canned job."""
    tokens_in, tokens_out = job["input_tokens"], job["output_tokens"]
    return {"input_tokens": tokens_in, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": tokens_out, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens_in + tokens_out, "cost_nano_usd": job["cost_nano_usd"]}


def relay_job(job: dict[str, Any]) -> dict[str, Any]:
    """A canned job as the Relay Batches API shows it (relayd's `render.relay_job`)."""
    view = {key: job[key] for key in (
        "id", "name", "status", "model", "priority", "total", "completed", "failed",
        "dead_letter", "dead_letter_open", "canceled", "error", "webhookUrl", "webhook",
        "cron", "template_id", "retry_of")}
    view.update(object="batch", created_at=_iso(job["created_at"]),
                started_at=_iso(job["started_at"]), completed_at=_iso(job["finished_at"]),
                next_run_at=_iso(job["next_run_at"]), usage=_batch_usage(job),
                paused=job.get("paused"))
    if job["cron"] and job["template_id"] is None:
        view["last_run_id"] = job.get("last_run_id")
    return view


def openai_batch(job: dict[str, Any]) -> dict[str, Any]:
    """A canned job as the OpenRelay batch API shows it (relayd's `render_openai.batch`)."""
    status = job["status"]
    ended = _whole(job["finished_at"])
    return {
        "id": job["id"], "object": "batch", "endpoint": job.get("endpoint", "/v1/embeddings"),
        "errors": None, "input_file_id": "file-" + job["id"][6:], "completion_window": "24h",
        "status": _OPENAI.get(status, status),
        "output_file_id": ("file-out" + job["id"][8:]) if status == "completed" else None,
        "error_file_id": None, "created_at": int(job["created_at"]),
        "in_progress_at": _whole(job["started_at"]),
        "expires_at": int(job["created_at"]) + 86400,
        "finalizing_at": ended if status == "completed" else None,
        "completed_at": ended if status == "completed" else None,
        "failed_at": ended if status == "failed" else None, "expired_at": None,
        "cancelling_at": ended if status == "canceled" else None,
        "cancelled_at": ended if status == "canceled" else None,
        "request_counts": {"total": job["total"], "completed": job["completed"],
                           "failed": job["failed"]},
        "metadata": {"name": job["name"]}, "model": job["model"], "priority": job["tier"],
        "usage": _batch_usage(job) if job["completed"] + job["failed"] else None,
    } | ({"retry_of": job["retry_of"]} if job["retry_of"] else {})


def batch(job: dict[str, Any]) -> dict[str, Any]:
    """`GET /v1/batches/{id}`: the job in the dialect it was submitted in."""
    return openai_batch(job) if job["dialect"] == "openai" else relay_job(job)


def job_event(job: dict[str, Any]) -> dict[str, Any]:
    """A canned job's `/v1/events` summary (relayd's `render.event_fields`)."""
    view = {key: job[key] for key in (
        "id", "dialect", "name", "model", "priority", "tier", "total", "completed",
        "failed", "dead_letter", "dead_letter_open", "canceled", "created_at",
        "started_at", "finished_at", "cron", "next_run_at", "template_id", "error",
        "input_tokens", "output_tokens", "cost_nano_usd")}
    return view | {"status": _INTERNAL.get(job["status"], job["status"]),
                   "relay_status": job["status"], "paused": job.get("paused"),
                   "deadline_at": job.get("deadline_at"),
                   "deadline_at_risk": bool(job.get("deadline_at_risk"))}


# -- the canned relayd -----------------------------------------------------------------


def _no_batch(job_id: str) -> RelayError:
    return RelayError(404, f"No batch found with id '{job_id}'.", code="not_found")


def _no_row(custom_id: str) -> RelayError:
    return RelayError(404, f"No row found with id '{custom_id}'.", code="not_found")


class FakeRelay:
    """A relayd in memory: canned jobs, results, rows and dead letters, served over
    `httpx.MockTransport` to a real `RelayClient` (`client()`), in relayd's wire shapes.
    Each route is one method below (tests override one to change an answer; a
    `RelayError` raised is served as relayd's error envelope). It records what was
    asked of it, and offers every answer to `observe`."""

    def __init__(self, *, url: str = "http://127.0.0.1:8080", replay: bool = True,
                 workflows: bool = False) -> None:
        self.url = url
        self.clock = FakeClock(NOW - REPLAY_S if replay else NOW)
        self.replay_progress = replay
        self.replayed = threading.Event()
        self.jobs_by_id = {j["id"]: j for j in canned_jobs()}
        if workflows:
            self.jobs_by_id[WORKFLOW_JOB] = workflow_job()
        self.submitted: list[dict[str, Any]] = []
        self.estimated: list[dict[str, Any]] = []  # the bodies of `?dry_run=true` submits
        self.uploaded: dict[str, tuple[str, bytes]] = {}  # file id: (filename, content)
        self.created: list[dict[str, Any]] = []  # OpenAI batches: input_file_id, …
        self.cancelled: list[str] = []
        self.paused: list[tuple[str, str | None]] = []  # (job, its pause after each call)
        self.retried: list[tuple[str, list[str] | None]] = []
        self.forced: list[bool] = []  # `force` of each retry
        self.discarded: list[tuple[str, list[str] | None]] = []
        self.dead_letters = {j["id"]: _dead_letter() for j in self.jobs_by_id.values()
                             if j.get("dead_letter")}
        self.rows_read: list[tuple[str, str]] = []
        self.workflows_read: list[str] = []
        self.result_pages_read: list[tuple[str, str | None]] = []  # (job, after)
        self.listed_dialects: list[str] = []
        self.health_answer: dict[str, Any] = {"status": "ok"}  # what `/healthz` says
        # what `/v1/stats` says: None for the canned numbers; a RelayError is raised
        self.stats_answer: dict[str, Any] | RelayError | None = None
        self.stats_asked: list[int | None] = []  # `minutes` of each call

    def client(self, key: str = "rk_test") -> RelayClient:
        """A real `RelayClient` whose requests this relayd answers."""
        return RelayClient(self.url, key, transport=httpx.MockTransport(self.handle))

    def handle(self, request: httpx.Request) -> httpx.Response:
        return serve(self, request)

    def observe(self, method: str, path: str, status: int, body: Any,
                event: str | None) -> None:
        """One answer served: a JSON body, or one event's data (`event` its name). Does
        nothing here; tests/tui checks each against relayd's OpenAPI document."""

    def _known(self, job_id: str) -> dict[str, Any]:
        if job_id not in self.jobs_by_id:
            raise _no_batch(job_id)
        return self.jobs_by_id[job_id]

    # -- reads ---------------------------------------------------------------------

    def jobs(self, *, limit: int = 20, after: str | None = None, status: str | None = None,
             template_id: str | None = None, dialect: str = "openai") -> dict[str, Any]:
        self.listed_dialects.append(dialect)
        listed = [j for j in sorted(self.jobs_by_id.values(), key=lambda j: -j["created_at"])
                  if (template_id is None or j["template_id"] == template_id)
                  and dialect in ("all", j["dialect"])]
        ids = [j["id"] for j in listed]
        start = ids.index(after) + 1 if after in ids else 0
        page = [batch(j) for j in listed[start:start + limit]]
        return {"object": "list", "data": page,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
                "has_more": start + len(page) < len(listed)}

    def job(self, job_id: str) -> dict[str, Any]:
        job = self._known(job_id)
        while job["cron"] and job["next_run_at"] and job["next_run_at"] <= self.clock():
            job["next_run_at"] += 86400  # relayd ran it: the canned cron is daily
        return batch(job)

    def results(self, job_id: str, *, limit: int | None = None,
                after: str | None = None) -> dict[str, Any]:
        job = self._known(job_id)
        if job_id == WORKFLOW_JOB:  # the finished records (relayd waits for the end)
            data = _workflow_results()
        else:
            data = _digest_results() if job_id == _DIGEST else _results(job_id)
        head = {"id": job_id, "object": "list", "status": batch(job)["status"]}
        if limit is None and after is None:
            return head | {"data": data}
        ids = [item["custom_id"] for item in data]
        if after is not None and after not in ids:
            raise RelayError(400, f"No row has custom_id {after!r}.", "after")
        start = 0 if after is None else ids.index(after) + 1
        page = data[start:start + (limit or len(data))]
        self.result_pages_read.append((job_id, after))
        return head | {"data": page, "has_more": start + len(page) < len(data),
                       "last_id": page[-1]["custom_id"] if page else None}

    def results_so_far(self, job_id: str, *, cursor: str = "",
                       limit: int = 1000) -> dict[str, Any]:
        """The rows finished so far, in finish order (its first `completed + failed`
        results), after `cursor` (an index here; opaque to the client)."""
        job = self._known(job_id)
        data = self.results(job_id)["data"]
        ended = job["status"] in ENDED
        done = len(data) if ended else min(len(data), job["completed"] + job["failed"])
        start = int(cursor or 0)
        page = data[start:min(done, start + limit)]
        return {"id": job_id, "object": "list", "status": batch(job)["status"], "data": page,
                "has_more": start + len(page) < done, "next_cursor": str(start + len(page))}

    def row(self, job_id: str, custom_id: str) -> dict[str, Any]:
        self.rows_read.append((job_id, custom_id))
        if job_id == WORKFLOW_JOB and job_id in self.jobs_by_id:
            flows = _workflow_rows()
            if custom_id not in flows:
                raise _no_row(custom_id)
            return flows[custom_id]
        job = self._known(job_id)
        item = next((i for i in self.results(job_id)["data"]
                     if i["custom_id"] == custom_id), None)
        if item is None:
            raise _no_row(custom_id)
        return _row_detail(job, item)

    def workflows(self, job_id: str) -> dict[str, Any]:
        self.workflows_read.append(job_id)
        self._known(job_id)
        return workflow_counters(job_id)

    def dead_letter(self, job_id: str) -> dict[str, Any]:
        self._known(job_id)
        dead = [dict(e) for e in self.dead_letters.get(job_id, [])]
        return {"id": job_id, "object": "list", "data": dead}

    def all_dead_letter(self, *, state: str = "open", limit: int = 100) -> dict[str, Any]:
        data = [{"batch_id": job, "batch_name": self.jobs_by_id[job]["name"], **e}
                for job in sorted(self.dead_letters, key=lambda j: -self.jobs_by_id[j][
                    "created_at"])
                for e in self.dead_letters[job] if state in ("all", e["state"])]
        return {"object": "list", "data": data[:limit], "has_more": len(data) > limit}

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [canned_model(m) for m in MODELS]}

    def stats(self, *, minutes: int | None = None) -> dict[str, Any]:
        self.stats_asked.append(minutes)
        if isinstance(self.stats_answer, RelayError):
            raise self.stats_answer
        if self.stats_answer is not None:
            return self.stats_answer
        return canned_stats(NOW, minutes=minutes or 60,
                            jobs={n: job_id(n) for n in (1, 2, 9)})

    def nodes(self) -> dict[str, Any]:
        """One relayd on SQLite, running the jobs that have not ended."""
        started = _iso(NOW - 86400)
        running = [{"id": j["id"], "name": j["name"], "dialect": j["dialect"],
                    "status": _INTERNAL.get(j["status"], j["status"])}
                   for j in self.jobs_by_id.values() if j["status"] == "running"]
        return {"object": "list", "data": [{
            "object": "node", "id": "relay-1-5e0c4d2a", "address": self.url,
            "version": "0.23.0", "started_at": started, "heartbeat_at": _iso(NOW - 2),
            "seconds_since_heartbeat": 2.0, "health": "healthy", "self": True,
            "jobs": running}]}

    # -- writes --------------------------------------------------------------------

    def submit(self, *, model: str, requests: list[dict[str, Any]], name: str | None = None,
               priority: int = 0, cron: str | None = None,
               webhook_url: str | None = None, idempotency_key: str | None = None,
               **extra: Any) -> dict[str, Any]:
        if model not in MODELS:
            raise RelayError(400, f"Unknown model {model!r}.", "model",
                             code="model_not_found")
        if cron is not None and len(cron.split()) != 5:
            raise RelayError(400, "'cron' must have exactly 5 fields.", "cron",
                             code="invalid_cron")
        self.submitted.append({"model": model, "requests": requests, "name": name,
                               "priority": priority, "cron": cron, "webhook_url": webhook_url})
        n = 10 + len(self.submitted)
        job = _job(n, name or "upload", "scheduled" if cron else "queued", model=model,
                   total=len(requests), age=0, priority=priority, cron=cron,
                   webhookUrl=webhook_url)
        self.jobs_by_id[job["id"]] = job
        return relay_job(job)

    def estimate(self, body: dict[str, Any], *,
                 path: str = "/v1/batches") -> dict[str, Any]:
        """relayd's dry run, roughly: each request's JSON ÷ 4 input tokens, 256 output
        tokens (no history), gpt-4o-mini's prices, 8 at once of 2 s; half price for an
        OpenAI batch; an unknown model a problem."""
        self.estimated.append(body)
        openai = "endpoint" in body
        requests = body.get("requests") or []
        models = [(r.get("body") or {}).get("model", "") if openai else body.get("model", "")
                  for r in requests]
        tokens_in = sum(len(json.dumps(r)) // 4 for r in requests)
        tokens_out = 256 * len(requests)
        discount = Decimal("0.5") if openai else Decimal(0)
        nano = int((tokens_in * 150 + tokens_out * 600) * (1 - discount))
        drain = round(len(requests) / 8 * 2.0, 3)
        problems = [{"error": {"message": f"model: {m!r} is not configured here.",
                               "type": "invalid_request_error", "param": "model",
                               "code": "model_not_found"}}
                    for m in sorted(set(models)) if m not in MODELS]
        cost = str((Decimal(nano) / Decimal(10**9)).quantize(Decimal("0.000001")))
        return {"object": "batch.estimate", "dry_run": True, "rows": len(requests),
                "input_tokens": tokens_in, "output_tokens": tokens_out,
                "cost_nano_usd": nano, "cost_usd": cost, "discount": str(discount),
                "drain_s": drain, "by_model": [
                    {"model": m, "rows": models.count(m),
                     "input_tokens": {"estimate": tokens_in, "source": "rate_limiter"},
                     "output_tokens": {"estimate": tokens_out,
                                       "sources": {"default": models.count(m)}},
                     "cost_nano_usd": nano, "cost_usd": cost, "drain_s": drain,
                     "drain_limit": "concurrency", "latency_source": "default"}
                    for m in dict.fromkeys(models)],
                "budget": None, "problems": problems}

    def upload(self, filename: str, data: bytes, *,
               idempotency_key: str | None = None) -> dict[str, Any]:
        file_id = f"file-{len(self.uploaded) + 1:032x}"
        self.uploaded[file_id] = (filename, data)
        return {"id": file_id, "object": "file", "bytes": len(data),
                "created_at": int(self.clock()), "filename": filename, "purpose": "batch",
                "status": "processed", "status_details": None, "expires_at": None}

    def create_batch(self, input_file_id: str, *, endpoint: str = "/v1/chat/completions",
                     metadata: dict[str, str] | None = None,
                     idempotency_key: str | None = None) -> dict[str, Any]:
        if input_file_id not in self.uploaded:
            raise RelayError(400, f"No such File object: {input_file_id}.", "input_file_id",
                             code="invalid_request_error")
        lines = self.uploaded[input_file_id][1].decode().splitlines()
        self.created.append({"input_file_id": input_file_id, "endpoint": endpoint,
                             "metadata": metadata, "records": [json.loads(x) for x in lines]})
        n = 40 + len(self.created)
        name = (metadata or {}).get("name", "upload")
        job = _job(n, name, "queued", total=len(lines), age=0, dialect="openai",
                   endpoint=endpoint)
        self.jobs_by_id[job["id"]] = job
        return {**openai_batch(job), "input_file_id": input_file_id,
                "metadata": metadata or {"name": name}}

    def cancel(self, job_id: str) -> dict[str, Any]:
        self.cancelled.append(job_id)
        return batch(self._known(job_id))

    def pause(self, job_id: str) -> dict[str, Any]:
        return self._pause(job_id, "operator")

    def resume(self, job_id: str) -> dict[str, Any]:
        return self._pause(job_id, None)

    def _pause(self, job_id: str, paused: str | None) -> dict[str, Any]:
        job = self._known(job_id)
        if job["status"] in ("completed", "failed", "canceled", "expired"):
            raise RelayError(409, f"Batch {job_id} has already ended ({job['status']}); it "
                             f"cannot be {'paused' if paused else 'resumed'}.",
                             code="batch_already_ended")
        self.paused.append((job_id, paused))
        job["paused"] = paused
        return batch(job)

    def retry_dead_letter(self, job_id: str, custom_ids: list[str] | None = None, *,
                          force: bool = False) -> dict[str, Any]:
        self.retried.append((job_id, custom_ids))
        self.forced.append(force)
        source = self._known(job_id)
        taken = [e for e in self.dead_letters.get(job_id, [])
                 if (custom_ids is None or e["custom_id"] in custom_ids)
                 and (force or e["state"] == "open")]
        if not taken:
            raise RelayError(400, "This batch has no dead-lettered rows to retry.")
        job = _job(20 + len(self.retried), f"{source['name']} (dead-letter retry)", "queued",
                   total=len(taken), age=0, retry_of=job_id)
        self.jobs_by_id[job["id"]] = job
        for entry in taken:
            entry.update(state="redriven", redriven_to=job["id"])
        self._reopen(job_id)
        return batch(job)

    def discard_dead_letter(self, job_id: str,
                            custom_ids: list[str] | None = None) -> dict[str, Any]:
        self.discarded.append((job_id, custom_ids))
        self._known(job_id)
        taken = [e for e in self.dead_letters.get(job_id, []) if e["state"] == "open"
                 and (custom_ids is None or e["custom_id"] in custom_ids)]
        if not taken:
            raise RelayError(400, "This batch has no open dead-lettered rows to discard.")
        for entry in taken:
            entry.update(state="discarded", discarded_at=_iso(NOW))
        return {"id": job_id, "object": "batch.dead_letter.discard", "discarded": len(taken),
                "dead_letter_open": self._reopen(job_id)}

    def _reopen(self, job_id: str) -> int:
        still = sum(1 for e in self.dead_letters[job_id] if e["state"] == "open")
        self.jobs_by_id[job_id]["dead_letter_open"] = still
        return still

    # -- live events ---------------------------------------------------------------

    def replay(self) -> Iterator[Event]:
        """Snapshots of the jobs that have not ended, then progress up to `NOW`."""
        for job in self.jobs_by_id.values():
            if job["status"] in ("queued", "running", "scheduled"):
                yield Event("job.snapshot", job_event(job))
        if not self.replay_progress:
            return
        for step in _STEPS:
            self.clock.now += REPLAY_S / len(_STEPS)
            for n, rows in ((1, step), (2, step * 3 - 2)):
                job = self.jobs_by_id[job_id(n)]
                job["completed"] += rows
                yield Event("job.progress", job_event(job))
        self.clock.now = NOW


def canned_model(alias: str) -> dict[str, Any]:
    """One configured model of `GET /v1/models`, with no live state yet."""
    return {"id": alias, "object": "model", "created": int(NOW - 86400), "owned_by": "relay",
            "api": "openai",
            "endpoints": ["/v1/chat/completions", "/v1/completions", "/v1/embeddings"],
            "fallbacks": ["backup"] if alias == "gpt-4o-mini" else [],
            "max_concurrency": 8, "adaptive": False, "rpm": None, "tpm": None,
            "state": None}
