"""Workflow records (`body.openrelay.workflow`: a multi-step job that the user's
callback drives), told as text: where one stands (the `workflow` of a row's detail,
`GET /v1/batches/{id}/rows/{custom_id}`), the callback's answers step by step, the
totals a finished one's result carries (`openrelay: {steps, requests, input_tokens,
output_tokens}`), and a job's counters (`GET /v1/batches/{id}/workflows`).

Pure: no Textual, no HTTP."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from relaytui.rows import EXTENSIONS, clipped

WORKFLOW = "workflow"  # the request's `openrelay` key, and the row detail's


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def workflow_config(body: Any) -> dict[str, Any] | None:
    """The request's `openrelay.workflow` (as the daemon shows it: redacted)."""
    extensions = body.get(EXTENSIONS) if isinstance(body, dict) else None
    config = extensions.get(WORKFLOW) if isinstance(extensions, dict) else None
    return config if isinstance(config, dict) else None


def workflow_state(detail: dict[str, Any]) -> dict[str, Any] | None:
    """Where a workflow record stands (the detail's `workflow`); None before it started."""
    state = detail.get(WORKFLOW)
    return state if isinstance(state, dict) else None


def is_workflow(detail: dict[str, Any]) -> bool:
    """A workflow record: it has a state, or its request asks for a workflow (one that
    has not started yet, or that failed before its first step)."""
    return workflow_state(detail) is not None or workflow_config(detail.get("body")) is not None


def workflow_summary(item: dict[str, Any]) -> dict[str, Any] | None:
    """The totals of a finished workflow record's result: beside the content in a Relay
    results row, in `response.body` of an OpenAI output line (or a row's `response`).
    None for any other row (a tool-calling record's summary has `tool_rounds`)."""
    found = item.get(EXTENSIONS)
    if not isinstance(found, dict):
        response = item.get("response")
        body = response.get("body") if isinstance(response, dict) else None
        found = body.get(EXTENSIONS) if isinstance(body, dict) else None
    if not isinstance(found, dict) or "tool_rounds" in found or "steps" not in found:
        return None
    return found


def steps_cell(summary: dict[str, Any] | None) -> str:
    """The results table's Rounds cell of a workflow record: `▸2 steps`."""
    return "" if summary is None else f"▸{_plural(_int(summary.get('steps')), 'step')}"


def tokens_text(totals: dict[str, Any]) -> str:
    return (f"{_int(totals.get('input_tokens'))} input + "
            f"{_int(totals.get('output_tokens'))} output tokens")


def totals_text(totals: Any) -> str:
    """`2 steps · 5 requests · 120 input + 80 output tokens`."""
    if not isinstance(totals, dict):
        totals = {}
    return " · ".join([_plural(_int(totals.get("steps")), "step"),
                       _plural(_int(totals.get("requests")), "request"), tokens_text(totals)])


def time_text(ts: Any) -> str:
    """An instant as UTC `09:31:05Z` (a wait is an hour at most)."""
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%H:%M:%SZ")
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"


def _steps_done(state: dict[str, Any] | None) -> int:
    if state is None:
        return 0
    totals = state.get("totals")
    return _int(totals.get("steps") if isinstance(totals, dict) else state.get("step"))


def phase_text(detail: dict[str, Any]) -> str:
    """Where the record stands, in words: `waiting for its callback (workflow.results of
    step 2)`, `running step 3 (2 of 4 requests done)`, `waiting until 09:31:05Z`;
    `completed after 2 steps`, `failed after 3 steps` once the row has ended."""
    status = str(detail.get("status") or "")
    state = workflow_state(detail)
    steps = _steps_done(state)
    if status == "completed":
        return f"completed after {_plural(steps, 'step')}"
    if status == "failed":
        if state is None:
            return "failed before its first step"
        return f"failed after {_plural(steps, 'step')}"
    if state is None:
        return "not started yet"
    phase = str(state.get("phase") or "")
    step = _int(state.get("step"))
    if phase == "running":
        return (f"running step {step} ({_int(state.get('finished'))} of "
                f"{_plural(_int(state.get('requests')), 'request')} done)")
    if phase == "waiting":
        wake_at = state.get("wake_at")
        return f"waiting until {time_text(wake_at)}" if wake_at is not None else "waiting"
    if phase == "deliver":
        event = str(state.get("event") or "its next event")
        of = f" of step {step}" if step and event == "workflow.results" else ""
        return f"waiting for its callback ({event}{of})"
    return phase or "?"


def answer_text(entry: dict[str, Any]) -> str:
    """One answer of the callback: `continue → 4 requests`, `wait 5s`."""
    action = str(entry.get("action") or "?")
    if action == "continue":
        return f"continue → {_plural(_int(entry.get('requests')), 'request')}"
    if action == "wait":
        return f"wait {_delay_text(_int(entry.get('delay_ms')))}"
    return action


def _delay_text(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:g}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s" if rest else f"{minutes}m"


def history(detail: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The callback's answers step by step, as (step, answer, note): the note marks the
    step a pending record stands in; a last line tells how an ended record ended."""
    status = str(detail.get("status") or "")
    state = workflow_state(detail) or {}
    entries = [e for e in state.get("history") or [] if isinstance(e, dict)]
    phase = state.get("phase")
    lines = []
    for n, entry in enumerate(entries):
        note = ""
        if status == "pending" and n == len(entries) - 1:
            if phase == "running":
                note = (f"◂ now: {_int(state.get('finished'))} of "
                        f"{_int(state.get('requests'))} done")
            elif phase == "waiting":
                note = f"◂ now: until {time_text(state.get('wake_at'))}"
        lines.append((f"step {_int(entry.get('step'))}", answer_text(entry), note))
    if status == "completed":
        lines.append(("end", "completed", "the output below"))
    elif status == "failed":
        code = str(detail.get("error_code") or "failed")
        lines.append(("end", "failed" if code == "workflow_failed" else code,
                      "the callback answered failed" if code == "workflow_failed" else ""))
    return lines


def output_text(output: Any) -> str:
    """A completed record's output: a string as is, anything else as indented JSON."""
    if isinstance(output, str):
        return clipped(output)
    return clipped(json.dumps(output, ensure_ascii=False, indent=2))


def callback_text(config: dict[str, Any]) -> str:
    """`https://flows.example.com/run (authorization ***, at most 8 steps)`."""
    notes = []
    if config.get("authorization") is not None:
        notes.append(f"authorization {config['authorization']}")
    for key, word in (("max_steps", "step"), ("max_requests", "request"),
                      ("max_tokens", "token")):
        if config.get(key):
            notes.append(f"at most {_plural(_int(config[key]), word)}")
    tail = f" ({', '.join(notes)})" if notes else ""
    return f"{config.get('url', '?')}{tail}"


def facts_part(detail: dict[str, Any]) -> str:
    """The row's facts line part: `workflow: 2 steps · 5 requests`."""
    state = workflow_state(detail)
    totals = state.get("totals") if state is not None else None
    if not isinstance(totals, dict):
        return "workflow"
    return (f"workflow: {_plural(_int(totals.get('steps')), 'step')} · "
            f"{_plural(_int(totals.get('requests')), 'request')}")


def counters_text(counters: Any) -> str | None:
    """A job's workflow counters: `1 running · 1 waiting · 1 ended · 7 steps · 21
    requests · 900 input + 400 output tokens`; None when no workflow record started."""
    if not isinstance(counters, dict) or _int(counters.get("started")) <= 0:
        return None
    parts = [f"{_int(counters.get(key))} {word}"
             for key, word in (("calling_back", "calling back"), ("running", "running"),
                               ("waiting", "waiting")) if _int(counters.get(key))]
    parts += [f"{_int(counters.get('ended'))} ended",
              _plural(_int(counters.get("steps")), "step"),
              _plural(_int(counters.get("requests")), "request"), tokens_text(counters)]
    return " · ".join(parts)
