"""The simulator's aiohttp application: the OpenAI routes (chat, completions,
embeddings, responses, moderations) and Anthropic's `/v1/messages` (one pipeline of
faults and limits; each API's envelopes from apis.py),
the HTTP tool executor (`POST /_sim/tools`), the workflow callback
(`POST /_sim/workflow`), the `/_sim/*` introspection routes, and the logs they share."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import random
import socket
import struct
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from daemon.domain.ratelimit import max_tokens_of
from daemon.simulator.apis import ANTHROPIC, OPENAI, RESPONSES, Api
from daemon.simulator.content import (
    BadRequest,
    Call,
    chat_body,
    completion_body,
    count_tokens,
    embedding_body,
    json_body,
    parse_chat,
    parse_completion,
    parse_embedding,
)
from daemon.simulator.faults import (
    Directive,
    Draw,
    Outcome,
    SimOptions,
    parse_directive,
    plan,
)
from daemon.simulator.limits import Admission, SimLimits
from daemon.simulator.messages import message_body, parse_messages
from daemon.simulator.moderations import moderation_body, parse_moderation
from daemon.simulator.responses import parse_responses, response_body
from daemon.simulator.tools import (
    ExecutorCall,
    executor_directive,
    executor_results,
    read_executor_request,
)
from daemon.simulator.workflow import WorkflowMemory, read_event

MODELS = ("sim-small", "sim-large", "sim-embed", "sim-moderation")
LOG_LIMIT = 200_000  # requests remembered by /_sim/requests (and tool calls by theirs)
# The executor request headers /_sim/tool_calls records (any other Relay-* header too).
TOOL_HEADERS = ("Authorization", "Relay-Batch-Id", "Relay-Round", "Relay-Call-Id")
# The callback request headers /_sim/workflow_events records (any other Relay-* header too).
WORKFLOW_HEADERS = ("Authorization", "Content-Type", "Relay-Event-Id", "Relay-Signature")
_MODELS_CREATED = 1_700_000_000
_MAX_BODY = 64 * 1024 * 1024
MB = 1024 * 1024
_PADDING = b"x" * MB  # what a huge answer is padded with, written a megabyte at a time
_GARBAGE = "<html>SIMULATED garbage: this body is deliberately not JSON {"


class SimState:
    """The random source, the per-prompt directive counters, the request log, what
    the tool executors (HTTP and MCP) were called with, and the workflow callback's
    memory and events."""

    def __init__(self, options: SimOptions) -> None:
        self.options = options
        self.ids = itertools.count(1)  # never reset, so ids stay unique per process
        self.reset()

    def reset(self) -> None:
        """Back to the starting state: log, counters and the seeded random source."""
        self.rng = random.Random(self.options.seed)
        self.total = 0
        self.by_model: Counter[str] = Counter()
        self.by_status: Counter[str] = Counter()
        self.log: deque[dict[str, Any]] = deque(maxlen=LOG_LIMIT)
        self.seen: Counter[str] = Counter()
        self.tool_calls: deque[dict[str, Any]] = deque(maxlen=LOG_LIMIT)  # POST /_sim/tools
        self.tool_seen: Counter[str] = Counter()  # tool_fail directives, per Relay-Call-Id
        self.mcp_calls: deque[dict[str, Any]] = deque(maxlen=LOG_LIMIT)  # MCP tools/call
        self.mcp_seen: Counter[str] = Counter()  # tool_fail directives, per tool and arguments
        self.mcp_in_flight = 0  # MCP tools/call being answered now
        self.mcp_peak_in_flight = 0  # the most at once
        self.workflows = WorkflowMemory()  # POST /_sim/workflow: records and deliveries
        self.workflow_events: deque[dict[str, Any]] = deque(maxlen=LOG_LIMIT)
        self.in_flight = 0  # chat/embedding calls being answered now (their latency)
        self.peak_in_flight = 0  # the most at once (POST /_sim/reset starts again)
        options = self.options
        self.limits = SimLimits(rpm=options.rpm, tpm=options.tpm, capacity=options.capacity,
                                capacity_retry_s=options.retry_after_s)

    def draw(self) -> Draw:
        return Draw(jitter=self.rng.random(), fault=self.rng.random())

    def decide(self, call: Call, directive: Directive | None, draw: Draw) -> Outcome:
        seen = 0
        if directive is not None and directive.applies_to(call.model):
            seen = self.seen[call.prompt]
            self.seen[call.prompt] += 1
        return plan(directive, model=call.model, seen=seen, draw=draw, options=self.options)

    def record(self, model: str | None, prompt: str, status: int, *, path: str,
               size: int | None = None) -> None:
        """Count a request to `path`; `size` is its body's bytes (what a client sent)."""
        self.total += 1
        if model is not None:
            self.by_model[model] += 1
        self.by_status[str(status)] += 1
        self.log.append({"model": model, "prompt": prompt, "status": status, "bytes": size,
                         "path": path, "at": time.time()})

    def stats(self) -> dict[str, Any]:
        return {"requests": self.total, "by_model": dict(self.by_model),
                "by_status": dict(self.by_status), "in_flight": self.in_flight,
                "peak_in_flight": self.peak_in_flight, "mcp_in_flight": self.mcp_in_flight,
                "mcp_peak_in_flight": self.mcp_peak_in_flight}


STATE = web.AppKey("sim_state", SimState)


@dataclass(frozen=True)
class Endpoint:
    """One generation route: how its body is read and answered, in which API."""

    parse: Callable[[dict[str, Any]], Call]
    answer: Callable[[Call, int, int], dict[str, Any]]  # (call, serial, unix time) -> body
    api: Api
    prompt_param: str | None = None  # what a bad directive in the prompt is refused naming


ENDPOINTS = {
    "chat": Endpoint(parse_chat, chat_body, OPENAI, "messages"),
    "completions": Endpoint(parse_completion, completion_body, OPENAI),
    "embeddings": Endpoint(parse_embedding, embedding_body, OPENAI),
    "messages": Endpoint(parse_messages, message_body, ANTHROPIC, "messages"),
    "responses": Endpoint(parse_responses, response_body, RESPONSES, "input"),
    "moderations": Endpoint(parse_moderation, moderation_body, OPENAI, "input"),
}


def error_response(status: int, message: str, *, param: str | None = None,
                   code: str | None = None, retry_after_s: float | None = None,
                   api: Api = OPENAI) -> web.Response:
    """`api`'s error envelope (OpenAI's unless told); 429s carry Retry-After."""
    headers = {} if retry_after_s is None else {"Retry-After": _seconds(retry_after_s)}
    return web.json_response(api.error_body(status, message, param, code), status=status,
                             headers=headers)


def _seconds(value: float) -> str:
    """'1' for 1.0, '0.05' for 0.05: Retry-After may be fractional here."""
    return f"{value:.3f}".rstrip("0").rstrip(".") or "0"


def _fault_response(status: int, options: SimOptions, api: Api) -> web.Response:
    message = f"SIMULATED upstream failure (HTTP {status}) from the Relay simulator."
    if status == 429:
        return error_response(429, message, code="rate_limit_exceeded",
                              retry_after_s=options.retry_after_s, api=api)
    return error_response(status, message, code="timeout" if status == 504 else None,
                          api=api)


def _reset_connection(request: web.Request) -> web.Response:
    """Drop the connection with a TCP RST, answering nothing."""
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:  # linger 0: close() sends RST instead of FIN
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    # aiohttp fails to write this to the closed transport and drops it quietly.
    return web.Response(status=500)


def _limited_response(admission: Admission, headers: dict[str, str],
                      api: Api) -> web.Response:
    """The 429 for a rate limit (or, past --capacity, an overloaded server's)."""
    if admission.reason == "capacity":
        message = "SIMULATED overload: the server is at capacity; try again later."
    else:
        message = f"SIMULATED rate limit reached for {admission.reason} per minute."
    response = error_response(429, message, code="rate_limit_exceeded",
                              retry_after_s=admission.retry_after_s, api=api)
    response.headers.update(headers)
    response.headers["retry-after-ms"] = str(math.ceil(admission.retry_after_s * 1000))
    return response


async def _generate(request: web.Request, endpoint: str) -> web.StreamResponse:
    state, route = request.app[STATE], ENDPOINTS[endpoint]
    draw = state.draw()  # before anything can fail: every request consumes its draws
    try:
        _required_headers(request, route.api)
        body = await json_body(request)
        call = route.parse(body)
    except BadRequest as exc:
        return _refuse(request, exc, None, route.api)
    try:
        directive = _directive_of(call)
    except BadRequest as exc:
        return _refuse(request, exc, call, route.api)
    if not state.limits.active:
        return await _serve(request, state, call, directive, draw)
    charged = count_tokens(call.inputs) + (call.max_tokens or max_tokens_of(body) or 0)
    return await _serve_limited(request, state, call, directive, draw, charged=charged)


def _required_headers(request: web.Request, api: Api) -> None:
    for name in api.required_headers:
        if not request.headers.get(name):
            raise BadRequest(f"{name}: header is required")


def _rate_headers(state: SimState, call: Call) -> dict[str, str]:
    quotas = state.limits.quotas(call.model, time.monotonic())
    return ENDPOINTS[call.endpoint].api.rate_headers(quotas, time.time())


async def _serve_limited(request: web.Request, state: SimState, call: Call,
                         directive: Directive | None, draw: Draw, *,
                         charged: int) -> web.StreamResponse:
    """Serve within --rpm/--tpm/--capacity, or answer 429 at once."""
    limits = state.limits
    admission = limits.admit(call.model, charged, time.monotonic())
    if not admission.ok:
        state.record(call.model, call.prompt, 429, path=request.path)
        return _limited_response(admission, _rate_headers(state, call),
                                 ENDPOINTS[call.endpoint].api)
    limits.in_flight += 1
    try:
        response = await _serve(request, state, call, directive, draw, charged=charged)
    finally:
        limits.in_flight -= 1
    if not response.prepared:  # a streamed (huge) answer has sent its headers
        response.headers.update(_rate_headers(state, call))
    return response


async def _serve(request: web.Request, state: SimState, call: Call,
                 directive: Directive | None, draw: Draw, *,
                 charged: int | None = None) -> web.StreamResponse:
    outcome = state.decide(call, directive, draw)
    state.record(call.model, call.prompt, outcome.status, path=request.path,
                 size=request.content_length)
    if outcome.delay_s:  # the calls waiting here at once: what clients hold open
        state.in_flight += 1
        state.peak_in_flight = max(state.peak_in_flight, state.in_flight)
        try:
            await asyncio.sleep(outcome.delay_s)
        finally:
            state.in_flight -= 1
    if call.json is not None and call.json.delay_s:
        await asyncio.sleep(call.json.delay_s)  # [sim:json_sleep=MS]: a slow repair
    if outcome.kind == "huge":
        body = ENDPOINTS[call.endpoint].answer(call, next(state.ids), int(time.time()))
        return await _padded_response(request, body, outcome.huge_mb * MB)
    return _respond(request, state, call, outcome, directive, charged=charged)


async def _padded_response(request: web.Request, body: dict[str, Any],
                          size: int) -> web.StreamResponse:
    """A 200 of `size` bytes of valid JSON: `body` with a `"padding"` string added,
    streamed chunked (no Content-Length, so a client cannot refuse it up front and
    must count) without ever holding it whole. A client that hangs up early ends it."""
    text = json.dumps(body).encode()
    head, tail = text[:-1] + b', "padding": "', b'"}'
    left = max(0, size - len(head) - len(tail))
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    try:
        await response.write(head)
        while left > 0:
            await response.write(_PADDING[:min(left, MB)])
            left -= MB
        await response.write(tail)
        await response.write_eof()
    except ConnectionError:  # the client stopped reading: what it was meant to do
        pass
    return response


def _refuse(request: web.Request, exc: BadRequest, call: Call | None,
            api: Api) -> web.Response:
    request.app[STATE].record(call.model if call else None, call.prompt if call else "",
                              400, path=request.path)
    return error_response(400, exc.message, param=exc.param, api=api)


def _directive_of(call: Call) -> Directive | None:
    try:
        return parse_directive(call.prompt)
    except ValueError as exc:
        raise BadRequest(str(exc), param=ENDPOINTS[call.endpoint].prompt_param) from None


def _respond(request: web.Request, state: SimState, call: Call, outcome: Outcome,
             directive: Directive | None, *, charged: int | None = None) -> web.Response:
    route = ENDPOINTS[call.endpoint]
    if outcome.kind == "reset":
        return _reset_connection(request)
    if outcome.kind == "garbage":
        return web.Response(text=_GARBAGE, content_type="application/json")
    if outcome.status != 200:
        return _fault_response(outcome.status, state.options, route.api)
    body = route.answer(call, next(state.ids), int(time.time()))
    usage = body.get("usage")  # moderations report none: their charge is what they used
    if charged is not None and usage is not None:
        state.limits.settle(call.model, charged, route.api.used(usage), time.monotonic())
    reported = directive.usage_for(call.model) if directive else None
    if reported is not None and usage is not None:  # [sim:prompt_tokens=N]: untrusted usage
        body["usage"] = route.api.with_usage(usage, reported)
    return web.json_response(body)


async def chat_completions(request: web.Request) -> web.StreamResponse:
    return await _generate(request, "chat")


async def completions(request: web.Request) -> web.StreamResponse:
    return await _generate(request, "completions")


async def embeddings(request: web.Request) -> web.StreamResponse:
    return await _generate(request, "embeddings")


async def messages(request: web.Request) -> web.StreamResponse:
    return await _generate(request, "messages")


async def responses(request: web.Request) -> web.StreamResponse:
    return await _generate(request, "responses")


async def moderations(request: web.Request) -> web.StreamResponse:
    return await _generate(request, "moderations")


def _not_found(api: Api) -> Callable[[web.Request], Awaitable[web.Response]]:
    """Anything else under a route (Anthropic's batches and count_tokens, a stored
    Response, which the simulator never keeps): `api`'s 404."""
    async def not_found(request: web.Request) -> web.Response:
        return error_response(404, f"Not found: {request.method} {request.path} is not "
                              "served by the Relay simulator.", api=api)
    return not_found


async def list_models(request: web.Request) -> web.Response:
    data = [{"id": m, "object": "model", "created": _MODELS_CREATED,
             "owned_by": "relay-simulator"} for m in MODELS]
    return web.json_response({"object": "list", "data": data})


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok", "simulated": True})


async def sim_stats(request: web.Request) -> web.Response:
    return web.json_response(request.app[STATE].stats())


async def sim_requests(request: web.Request) -> web.Response:
    return web.json_response({"data": list(request.app[STATE].log)})


async def sim_tool_calls(request: web.Request) -> web.Response:
    return web.json_response({"data": list(request.app[STATE].tool_calls)})


async def sim_mcp_calls(request: web.Request) -> web.Response:
    return web.json_response({"data": list(request.app[STATE].mcp_calls)})


async def sim_workflow_events(request: web.Request) -> web.Response:
    return web.json_response({"data": list(request.app[STATE].workflow_events)})


async def sim_reset(request: web.Request) -> web.Response:
    request.app[STATE].reset()
    return web.json_response({"reset": True})


# --- the HTTP tool executor ---------------------------------------------------------


async def sim_tools(request: web.Request) -> web.StreamResponse:
    """`POST /_sim/tools`: run the calls; `[sim:tool_*]` in their arguments pin faults.

    Every request is recorded on arrival (`status` is filled in when it is answered,
    0 if the client left first)."""
    state = request.app[STATE]
    entry = _arrival(request, _tool_headers(request), body=None)
    return await _recorded(state.tool_calls, entry, _execute_tools(request, state, entry))


def _arrival(request: web.Request, headers: dict[str, str | None],
             **fields: Any) -> dict[str, Any]:
    """A request's log entry, made as it arrives (`status` is filled in when answered)."""
    return {"method": request.method, "path": request.path, "headers": headers,
            **fields, "status": None, "at": time.time()}


async def _recorded(log: deque[dict[str, Any]], entry: dict[str, Any],
                    answering: Awaitable[web.StreamResponse]) -> web.StreamResponse:
    """Log `entry`, answer, and note the answer's status (0 if the client left first)."""
    log.append(entry)
    try:
        response = await answering
    except asyncio.CancelledError:
        entry["status"] = 0
        raise
    entry["status"] = response.status
    return response


def _tool_headers(request: web.Request, names: tuple[str, ...] = TOOL_HEADERS
                  ) -> dict[str, str | None]:
    headers: dict[str, str | None] = {name: request.headers.get(name) for name in names}
    headers.update((name.title(), value) for name, value in request.headers.items()
                   if name.lower().startswith("relay-") and name.title() not in headers)
    return headers


async def _execute_tools(request: web.Request, state: SimState,
                         entry: dict[str, Any]) -> web.StreamResponse:
    raw = await request.read()
    try:
        entry["body"] = body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        entry["raw"] = raw.decode("utf-8", errors="replace")
        return error_response(400, "The request body is not valid JSON.")
    try:
        calls = read_executor_request(body)
        directive = executor_directive(calls)
    except ValueError as exc:
        return error_response(400, str(exc), param="tool_calls")
    round_ = request.headers.get("Relay-Round", "?")
    if directive is None or directive.tool_round not in (None, _int_or_none(round_)):
        return web.json_response({"results": executor_results(calls, round_)})
    if directive.tool_sleep_ms:
        await asyncio.sleep(directive.tool_sleep_ms / 1000)
    if directive.tool_fail is not None:
        key = request.headers.get("Relay-Call-Id") or _calls_key(body, calls)
        seen = state.tool_seen[key]
        state.tool_seen[key] += 1
        if directive.tool_times is None or seen < directive.tool_times:
            return _tool_fault(directive.tool_fail)
    if directive.tool_garbage:
        return web.Response(text=_GARBAGE, content_type="application/json")
    results = {"results": executor_results(calls, round_, mismatch=directive.tool_mismatch,
                                           content_kb=directive.tool_content_kb)}
    if directive.tool_huge_mb is not None:
        return await _padded_response(request, results, directive.tool_huge_mb * MB)
    return web.json_response(results)


def _int_or_none(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def _calls_key(body: dict[str, Any], calls: list[ExecutorCall]) -> str:
    """What counts `times` without a Relay-Call-Id: the custom_id and the call ids."""
    return f"{body.get('custom_id')}|{','.join(call.id for call in calls)}"


def _tool_fault(status: int) -> web.Response:
    message = f"SIMULATED tool executor failure (HTTP {status}) from the Relay simulator."
    return error_response(status, message, retry_after_s=0 if status == 429 else None)


# --- the workflow callback ---------------------------------------------------------


async def sim_workflow(request: web.Request) -> web.StreamResponse:
    """`POST /_sim/workflow`: the map-reduce summariser (workflow.py) answers one event;
    `[sim:wf_*]` in the record's input pin its path and faults.

    Every event is recorded on arrival with its raw body (so a test can check
    Relay-Signature); `status` and `answer` are filled in when it is answered
    (`status` 0 if the client left first)."""
    state = request.app[STATE]
    entry = _arrival(request, _tool_headers(request, WORKFLOW_HEADERS), body=None, raw=None,
                     answer=None)
    return await _recorded(state.workflow_events, entry,
                           _answer_workflow(request, state, entry))


async def _answer_workflow(request: web.Request, state: SimState,
                           entry: dict[str, Any]) -> web.Response:
    raw = await request.read()
    entry["raw"] = raw.decode("utf-8", errors="replace")
    try:
        entry["body"] = body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return error_response(400, "The request body is not valid JSON.")
    try:
        event = read_event(body, request.headers.get("Relay-Event-Id"))
    except ValueError as exc:
        return error_response(400, str(exc))
    record = state.workflows.record_for(event)
    directive = record.plan.directive if record is not None else None
    if directive is not None and directive.wf_sleep_ms:
        await asyncio.sleep(directive.wf_sleep_ms / 1000)
    if directive is not None and directive.wf_http is not None:
        seen = state.workflows.delivered(event.event_id)
        if directive.wf_times is None or seen < directive.wf_times:
            message = (f"SIMULATED workflow callback failure (HTTP {directive.wf_http}) "
                       "from the Relay simulator.")
            return error_response(directive.wf_http, message,
                                  retry_after_s=0 if directive.wf_http == 429 else None)
    entry["answer"] = answer = state.workflows.answer(event, record)
    return web.json_response(answer)


async def _mark_simulated(request: web.Request, response: web.StreamResponse) -> None:
    response.headers["X-Relay-Simulated"] = "true"


def build_app(options: SimOptions) -> web.Application:
    """The simulator's aiohttp application; all state lives on it."""
    app = web.Application(client_max_size=_MAX_BODY)
    app[STATE] = SimState(options)
    app.on_response_prepare.append(_mark_simulated)
    app.add_routes([
        web.post("/v1/chat/completions", chat_completions),
        web.post("/v1/completions", completions),
        web.post("/v1/embeddings", embeddings),
        web.post("/v1/messages", messages),
        web.route("*", "/v1/messages/{rest:.*}", _not_found(ANTHROPIC)),
        web.post("/v1/responses", responses),
        web.route("*", "/v1/responses/{rest:.*}", _not_found(RESPONSES)),
        web.post("/v1/moderations", moderations),
        web.get("/v1/models", list_models),
        web.get("/healthz", healthz),
        web.get("/_sim/stats", sim_stats),
        web.get("/_sim/requests", sim_requests),
        web.post("/_sim/reset", sim_reset),
        web.post("/_sim/tools", sim_tools),
        web.get("/_sim/tool_calls", sim_tool_calls),
        web.get("/_sim/mcp_calls", sim_mcp_calls),
        web.post("/_sim/workflow", sim_workflow),
        web.get("/_sim/workflow_events", sim_workflow_events),
    ])
    return app
