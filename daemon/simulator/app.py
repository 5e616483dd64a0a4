"""The simulator's aiohttp application: the OpenAI routes, the `/_sim/*` introspection
routes, and the request log they share."""

from __future__ import annotations

import asyncio
import itertools
import random
import socket
import struct
import time
from collections import Counter, deque
from typing import Any

from aiohttp import web

from daemon.simulator.content import (
    BODIES,
    PARSERS,
    BadRequest,
    Call,
    json_body,
)
from daemon.simulator.faults import (
    Directive,
    Draw,
    Outcome,
    SimOptions,
    parse_directive,
    plan,
)

MODELS = ("sim-small", "sim-large", "sim-embed")
LOG_LIMIT = 200_000  # requests remembered by /_sim/requests
_MODELS_CREATED = 1_700_000_000
_MAX_BODY = 64 * 1024 * 1024
_GARBAGE = "<html>SIMULATED garbage: this body is deliberately not JSON {"


class SimState:
    """The random source, the per-prompt directive counters and the request log."""

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

    def draw(self) -> Draw:
        return Draw(jitter=self.rng.random(), fault=self.rng.random())

    def decide(self, call: Call, directive: Directive | None, draw: Draw) -> Outcome:
        seen = 0
        if directive is not None and directive.applies_to(call.model):
            seen = self.seen[call.prompt]
            self.seen[call.prompt] += 1
        return plan(directive, model=call.model, seen=seen, draw=draw, options=self.options)

    def record(self, model: str | None, prompt: str, status: int) -> None:
        self.total += 1
        if model is not None:
            self.by_model[model] += 1
        self.by_status[str(status)] += 1
        self.log.append({"model": model, "prompt": prompt, "status": status, "at": time.time()})

    def stats(self) -> dict[str, Any]:
        return {"requests": self.total, "by_model": dict(self.by_model),
                "by_status": dict(self.by_status)}


STATE = web.AppKey("sim_state", SimState)





def error_response(status: int, message: str, *, param: str | None = None,
                   code: str | None = None, retry_after_s: float | None = None
                   ) -> web.Response:
    """OpenAI's error envelope; 429s carry Retry-After."""
    kind = ("requests" if status == 429 else "server_error" if status >= 500
            else "invalid_request_error")
    headers = {} if retry_after_s is None else {"Retry-After": _seconds(retry_after_s)}
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return web.json_response(body, status=status, headers=headers)


def _seconds(value: float) -> str:
    """'1' for 1.0, '0.05' for 0.05: Retry-After may be fractional here."""
    return f"{value:.3f}".rstrip("0").rstrip(".") or "0"


def _fault_response(status: int, options: SimOptions) -> web.Response:
    message = f"SIMULATED upstream failure (HTTP {status}) from the Relay simulator."
    if status == 429:
        return error_response(429, message, code="rate_limit_exceeded",
                              retry_after_s=options.retry_after_s)
    return error_response(status, message, code="timeout" if status == 504 else None)


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


async def _generate(request: web.Request, endpoint: str) -> web.StreamResponse:
    state = request.app[STATE]
    draw = state.draw()  # before anything can fail: every request consumes its draws
    try:
        call = PARSERS[endpoint](await json_body(request))
    except BadRequest as exc:
        return _refuse(state, exc, None)
    try:
        directive = _directive_of(call)
    except BadRequest as exc:
        return _refuse(state, exc, call)
    outcome = state.decide(call, directive, draw)
    state.record(call.model, call.prompt, outcome.status)
    if outcome.delay_s:
        await asyncio.sleep(outcome.delay_s)
    return _respond(request, state, call, outcome)


def _refuse(state: SimState, exc: BadRequest, call: Call | None) -> web.Response:
    state.record(call.model if call else None, call.prompt if call else "", 400)
    return error_response(400, exc.message, param=exc.param)


def _directive_of(call: Call) -> Directive | None:
    try:
        return parse_directive(call.prompt)
    except ValueError as exc:
        raise BadRequest(str(exc), param="messages" if call.endpoint == "chat" else None
                         ) from None


def _respond(request: web.Request, state: SimState, call: Call,
             outcome: Outcome) -> web.Response:
    if outcome.kind == "reset":
        return _reset_connection(request)
    if outcome.kind == "garbage":
        return web.Response(text=_GARBAGE, content_type="application/json")
    if outcome.status != 200:
        return _fault_response(outcome.status, state.options)
    return web.json_response(BODIES[call.endpoint](call, next(state.ids), int(time.time())))


async def chat_completions(request: web.Request) -> web.StreamResponse:
    return await _generate(request, "chat")


async def completions(request: web.Request) -> web.StreamResponse:
    return await _generate(request, "completions")


async def embeddings(request: web.Request) -> web.StreamResponse:
    return await _generate(request, "embeddings")


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


async def sim_reset(request: web.Request) -> web.Response:
    request.app[STATE].reset()
    return web.json_response({"reset": True})


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
        web.get("/v1/models", list_models),
        web.get("/healthz", healthz),
        web.get("/_sim/stats", sim_stats),
        web.get("/_sim/requests", sim_requests),
        web.post("/_sim/reset", sim_reset),
    ])
    return app
