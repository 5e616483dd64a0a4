"""The workflow callback, simulated: what `POST /_sim/workflow` answers to the events of
OpenRelay's workflow records. Pure: no I/O (the memory of each record lives here, the
route, sleeps and HTTP faults in app.py).

A deterministic **map-reduce summariser**, one record at a time:

1. `workflow.started`: the text is the last user message of `input` with its `[sim:...]`
   tokens removed. It is cut into chunks (see `split_chunks`) and the answer is
   `continue` with one chat request per chunk, in order:
   `{"url": "/v1/chat/completions", "body": {"model": <input.model>, "messages":
   [{"role": "user", "content": "Summarise: <chunk>"}]}}`.
2. The `workflow.results` of that map step: `continue` with ONE reduce request whose
   user content is `"Reduce: "` + the results' assistant contents joined with `" | "`,
   in `index` order (an error result reads `[error: CODE]`).
3. The `workflow.results` of the reduce step: `completed` with
   `{"summary": <the reduce result's assistant content>, "chunks": K}` (`failed` with
   code `sim_reduce_failed` if the reduce request failed).

**Chunking.** The text is split into sentences: after `.`, `!` or `?` followed by
whitespace, and at blank lines; whitespace inside a sentence is collapsed to single
spaces, empty pieces are dropped (no sentence at all: one empty sentence). Without
`wf_fanout`, K = min(4, sentences); with `[sim:wf_fanout=K]`, exactly K. With at least
K sentences, chunk i is sentences[i*n//K : (i+1)*n//K] joined with a space (consecutive,
sizes differing by at most one); with fewer, chunk i is sentence i mod n (repeated).

**Directives**, in the input's last user message (a token with any `wf_` word is the
callback's; every other `[sim:...]` token rides along verbatim at the end of each map
request's prompt, so `[sim:fail=503 times=1]` there exercises Relay's retries and
`[sim:fail=400]` error results):

- `[sim:wf_fanout=K]` (1–256): exactly K map requests.
- `[sim:wf_wait=MS]`: the first answer is `{"action": "wait", "delay_ms": MS}`; the map
  step answers the `workflow.tick` that follows.
- `[sim:wf_steps=N]` (0–10000): N steps of `continue` with one small request
  ("Step i of N: warm up.") before the map step, to overrun `max_steps`.
- `[sim:wf_fail]`: the first answer is `{"action": "failed", "error": {"code":
  "sim_failed", "message": "SIMULATED workflow failure"}}`.
- `[sim:wf_garbage]`: the first answer is a 200 that is no valid answer,
  `{"action": "dance"}` (wf_fail wins if both are given).
- `[sim:wf_http=CODE]` / `[sim:wf_http=CODE times=K]` (400–599): HTTP CODE (OpenAI's
  error envelope; a 429 carries `Retry-After: 0`) to every delivery, or to the first K
  deliveries of each Relay-Event-Id, of every event of the record.
- `[sim:wf_sleep=MS]`: sleep before every answer (faults included).
- `[sim:wf_stall=K]` (0–256): the first K map requests end with `[sim:sleep=3000]`, so
  a test can catch them in flight.
- `[sim:wf_pad=KB]` (0–1024): each map request's prompt ends with that many KB of dots
  (after the other tokens), so a record's state grows by that much a request.

**Memory and idempotency.** Records are remembered by (batch_id, custom_id). A
`workflow.started` with a new event id starts its record over; any other event moves
the record one stage on (wait, warm-up steps, map, reduce, completed; past the end, the
last answer again) the first time its (type, step) pair is seen. A repeated event, by
Relay-Event-Id or by (type, step), gets the answer it got the first time, verbatim
(without a `step`, only the event id marks a repeat). Whatever `step` counts, the
(type, step) pairs of one record's events are distinct, so only repeats share one. An
event of a record the simulator does not know (no `workflow.started`, or after
`/_sim/reset`) is answered `failed` with code `sim_unknown_record`; a bad directive or
an input without a model, `failed` with `sim_bad_directive` / `sim_bad_input`.
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

from daemon.simulator.content import content_text
from daemon.simulator.faults import DIRECTIVE_PATTERN, Directive, parse_directive

EVENT_TYPES = ("workflow.started", "workflow.results", "workflow.tick")
DEFAULT_FANOUT = 4
STALL_TOKEN = "[sim:sleep=3000]"
CHAT_URL = "/v1/chat/completions"
GARBAGE_ANSWER: dict[str, Any] = {"action": "dance"}
FAILED_ANSWER: dict[str, Any] = {
    "action": "failed", "error": {"code": "sim_failed", "message": "SIMULATED workflow failure"}}
RECORD_LIMIT = 200_000  # records remembered; the oldest are forgotten first

_SENTENCE_BREAK = re.compile(r"\n\s*\n|(?<=[.!?])\s+")

Answer = dict[str, Any]


@dataclass(frozen=True)
class Event:
    """One event Relay posted, as far as the callback reads it."""

    type: str
    event_id: str
    batch_id: str
    custom_id: str
    step: int | None
    input: dict[str, Any] | None  # workflow.started only
    results: tuple[dict[str, Any], ...]  # workflow.results only, in index order

    @property
    def record_key(self) -> tuple[str, str]:
        return self.batch_id, self.custom_id


def read_event(body: Any, event_id: str | None = None) -> Event:
    """The event in a callback request body; `event_id` (the Relay-Event-Id header) wins
    over the body's. ValueError if it breaks the contract."""
    if not isinstance(body, dict):
        raise ValueError("The request body must be a JSON object.")
    kind = body.get("type")
    if kind not in EVENT_TYPES:
        raise ValueError(f"'type' must be one of {', '.join(EVENT_TYPES)}, got {kind!r}.")
    event_id = event_id or body.get("event_id")
    if not isinstance(event_id, str) or not event_id:
        raise ValueError("The event needs a Relay-Event-Id header or a string 'event_id'.")
    for name in ("batch_id", "custom_id"):
        if not isinstance(body.get(name), str):
            raise ValueError(f"'{name}' must be a string.")
    step = body.get("step")
    if step is not None and (not isinstance(step, int) or isinstance(step, bool) or step < 0):
        raise ValueError("'step' must be a non-negative integer.")
    input_ = body.get("input")
    if kind == "workflow.started" and not isinstance(input_, dict):
        raise ValueError("workflow.started needs 'input', the record body, as an object.")
    results = body.get("results") or []
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise ValueError("'results' must be an array of objects.")
    ordered = sorted(enumerate(results), key=lambda pair: (_index(pair[1], pair[0]), pair[0]))
    return Event(kind, event_id, body["batch_id"], body["custom_id"], step,
                 input_ if isinstance(input_, dict) else None,
                 tuple(result for _, result in ordered))


def _index(result: dict[str, Any], position: int) -> int:
    index = result.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else position


# --- what workflow.started says --------------------------------------------------------


def sentences(text: str) -> list[str]:
    """The text's sentences: see the module docstring."""
    pieces = (" ".join(piece.split()) for piece in _SENTENCE_BREAK.split(text))
    return [piece for piece in pieces if piece]


def split_chunks(text: str, fanout: int | None = None) -> list[str]:
    """The map step's chunks: min(4, sentences) of them, or exactly `fanout`."""
    units = sentences(text) or [""]
    n = len(units)
    k = min(DEFAULT_FANOUT, n) if fanout is None else fanout
    if n < k:
        return [units[i % n] for i in range(k)]
    return [" ".join(units[i * n // k:(i + 1) * n // k]) for i in range(k)]


@dataclass(frozen=True)
class Plan:
    """Everything workflow.started decides for a record."""

    model: str
    chunks: tuple[str, ...]
    directive: Directive | None
    forwarded: str = ""  # the non-wf `[sim:...]` tokens, for the map requests
    problem: Answer | None = None  # a `failed` answer: the input cannot be planned

    @property
    def stages(self) -> tuple[str, ...]:
        """The answers' kinds, in order: "wait", "step", "map", "reduce", "done"; or one
        of "problem", "fail", "garbage"."""
        d = self.directive
        if self.problem is not None:
            return ("problem",)
        if d is not None and (d.wf_fail or d.wf_garbage):
            return ("fail",) if d.wf_fail else ("garbage",)
        wait = ("wait",) if d is not None and d.wf_wait_ms is not None else ()
        steps = ("step",) * (d.wf_steps if d is not None else 0)
        return (*wait, *steps, "map", "reduce", "done")


def plan_for(input_: dict[str, Any]) -> Plan:
    """Read the record body: the last user message's text and directives, the model."""
    messages = input_.get("messages")
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"
             ] if isinstance(messages, list) else []
    prompt = content_text(users[-1].get("content")) if users else ""
    model = input_.get("model")
    try:
        directive = parse_directive(prompt)
    except ValueError as exc:
        return Plan("", (), None, problem=failed("sim_bad_directive", str(exc)))
    if not isinstance(model, str) or not model:
        return Plan("", (), directive, problem=failed(
            "sim_bad_input", "SIMULATED callback: the input has no 'model' to summarise with."))
    text = DIRECTIVE_PATTERN.sub(" ", prompt)
    chunks = split_chunks(text, directive.wf_fanout if directive else None)
    return Plan(model, tuple(chunks), directive, forwarded_tokens(prompt))


def forwarded_tokens(prompt: str) -> str:
    """The prompt's `[sim:...]` tokens with no `wf_` word, verbatim, space-separated."""
    tokens = [match.group(0) for match in DIRECTIVE_PATTERN.finditer(prompt)
              if not any(w.startswith("wf_") for w in re.split(r"[\s,]+", match.group(1)))]
    return " ".join(tokens)


# --- the answers -------------------------------------------------------------------------


def failed(code: str, message: str) -> Answer:
    return {"action": "failed", "error": {"code": code, "message": message}}


def chat_request(model: str, content: str) -> dict[str, Any]:
    return {"url": CHAT_URL,
            "body": {"model": model, "messages": [{"role": "user", "content": content}]}}


def map_requests(plan: Plan) -> list[dict[str, Any]]:
    """One "Summarise: <chunk>" request per chunk; the forwarded tokens, then (for the
    first `wf_stall` requests) STALL_TOKEN, then `wf_pad` KB of dots, at the end of each
    prompt."""
    stall = plan.directive.wf_stall if plan.directive else 0
    pad = "." * (1024 * plan.directive.wf_pad_kb if plan.directive else 0)
    requests = []
    for i, chunk in enumerate(plan.chunks):
        tail = [t for t in (plan.forwarded, STALL_TOKEN if i < stall else "", pad) if t]
        requests.append(chat_request(plan.model, " ".join([f"Summarise: {chunk}", *tail])))
    return requests


def result_text(result: dict[str, Any]) -> str | None:
    """A result's assistant content; None if it is an error or carries none."""
    if result.get("error") is not None:
        return None
    body = result.get("body")
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    return content_text(content) if content is not None else None


def error_code(result: dict[str, Any]) -> str:
    """What `[error: CODE]` shows: the error's code, else `http_<status>`."""
    error = result.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    if code:
        return str(code)
    status = result.get("status_code")
    return f"http_{status}" if status is not None else "no_content"


def reduce_prompt(results: tuple[dict[str, Any], ...]) -> str:
    """"Reduce: " + each result's content (or `[error: CODE]`), joined with " | "."""
    parts = [text if (text := result_text(r)) is not None else f"[error: {error_code(r)}]"
             for r in results]
    return "Reduce: " + " | ".join(parts)


def stage_answer(plan: Plan, stage: int, event: Event) -> Answer:
    """The answer of stage `stage` (0 answers workflow.started) to `event`."""
    stages = plan.stages
    kind = stages[min(stage, len(stages) - 1)]
    d = plan.directive
    if kind == "problem":
        assert plan.problem is not None
        return plan.problem
    if kind == "fail":
        return FAILED_ANSWER
    if kind == "garbage":
        return GARBAGE_ANSWER
    if kind == "wait":
        assert d is not None and d.wf_wait_ms is not None
        return {"action": "wait", "delay_ms": d.wf_wait_ms}
    if kind == "step":
        first_step = stages.index("step")
        total = stages.count("step")
        content = f"Step {stage - first_step + 1} of {total}: warm up."
        return {"action": "continue", "requests": [chat_request(plan.model, content)]}
    if kind == "map":
        return {"action": "continue", "requests": map_requests(plan)}
    if kind == "reduce":
        return {"action": "continue",
                "requests": [chat_request(plan.model, reduce_prompt(event.results))]}
    summary = result_text(event.results[0]) if event.results else None
    if summary is None:
        code = error_code(event.results[0]) if event.results else "no_results"
        return failed("sim_reduce_failed", f"SIMULATED reduce request failed ([error: {code}])")
    return {"action": "completed", "output": {"summary": summary, "chunks": len(plan.chunks)}}


# --- the memory ----------------------------------------------------------------------------


@dataclass
class WorkflowRecord:
    """One record's plan and the answers it was given."""

    plan: Plan
    started_event_id: str
    stage: int = 0  # the next new event's stage
    by_event: dict[str, Answer] = field(default_factory=dict)
    by_step: dict[tuple[str, int | None], Answer] = field(default_factory=dict)
    last: Answer | None = None

    def answer(self, event: Event) -> Answer:
        """The stored answer to a repeated event, else the next stage's (stored)."""
        key = (event.type, event.step)  # without a step, only the event id tells repeats
        answer = self.by_event.get(event.event_id) or (
            self.by_step.get(key) if event.step is not None else None)
        if answer is None:
            if self.stage >= len(self.plan.stages) and self.last is not None:
                answer = self.last  # past the end: the last answer again
            else:
                answer = stage_answer(self.plan, self.stage, event)
            self.stage += 1
            self.last = answer
        self.by_event[event.event_id] = answer
        if event.step is not None:
            self.by_step.setdefault(key, answer)
        return answer


class WorkflowMemory:
    """Every record's WorkflowRecord, and how often each event id was delivered."""

    def __init__(self) -> None:
        self.records: OrderedDict[tuple[str, str], WorkflowRecord] = OrderedDict()
        self.deliveries: Counter[str] = Counter()

    def record_for(self, event: Event) -> WorkflowRecord | None:
        """The event's record; a workflow.started with a new event id starts it over."""
        record = self.records.get(event.record_key)
        if event.type == "workflow.started" and event.input is not None and (
                record is None or record.started_event_id != event.event_id):
            record = WorkflowRecord(plan_for(event.input), event.event_id)
            self.records[event.record_key] = record
            self.records.move_to_end(event.record_key)
            while len(self.records) > RECORD_LIMIT:
                self.records.popitem(last=False)
        return record

    def delivered(self, event_id: str) -> int:
        """How many times this event id was delivered before (and count this one)."""
        seen = self.deliveries[event_id]
        self.deliveries[event_id] += 1
        return seen

    def answer(self, event: Event, record: WorkflowRecord | None) -> Answer:
        if record is None:
            return failed("sim_unknown_record", "SIMULATED callback: no workflow.started "
                          f"was seen for {event.batch_id}/{event.custom_id}.")
        return record.answer(event)
