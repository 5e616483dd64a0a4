"""A SIMULATED OpenAI-compatible upstream: what `relayd simulate` serves.

The demo, the end-to-end tests and the benchmarks run against this server
instead of a real provider. It answers chat, completion, embedding and model
requests in OpenAI's shapes with canned, deterministic content (a sentiment
label when asked to classify, else an echo that says it is simulated), and
it injects faults in two ways:

- **At random**, with per-request probabilities (`SimOptions.rate_*`) drawn
  from one seeded `random.Random`. Every generation request consumes exactly
  two draws, jitter then fault, in arrival order, so the same request sequence
  with the same seed meets the same faults. One draw picks at most one fault
  from consecutive bands 429 | 5xx | timeout | reset, so the rates must sum to
  at most 1. The 5xx fault is always 503.
- **By directive**: a `[sim:...]` token in the prompt pins that row's
  behaviour (see `parse_directive`). A prompt carrying any directive is never
  hit by a random fault, so tests stay deterministic under any rates.

Every response carries `X-Relay-Simulated: true`. The `/_sim/*` routes let
tests see (and forget) what the server was asked.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import math
import random
import re
import signal
import socket
import struct
import sys
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

MODELS = ("sim-small", "sim-large", "sim-embed")
LOG_LIMIT = 200_000
_MODELS_CREATED = 1_700_000_000
_MAX_BODY = 64 * 1024 * 1024
_ECHO_WORDS = 8
_GARBAGE = "<html>SIMULATED garbage: this body is deliberately not JSON {"


@dataclass(frozen=True)
class SimOptions:
    """How the simulator behaves; the defaults are instant and fault-free."""

    latency_ms: float = 0
    jitter_ms: float = 0
    rate_429: float = 0
    rate_5xx: float = 0
    rate_timeout: float = 0
    rate_reset: float = 0
    retry_after_s: float = 1
    timeout_s: float = 30
    seed: int | None = None

    def __post_init__(self) -> None:
        for name in ("latency_ms", "jitter_ms", "retry_after_s", "timeout_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        rates = [rate for _, rate in self.fault_bands]
        if not all(0 <= rate <= 1 for rate in rates):
            raise ValueError("fault rates must be between 0 and 1")
        if sum(rates) > 1 + 1e-9:
            raise ValueError("fault rates must add up to at most 1")

    @property
    def fault_bands(self) -> tuple[tuple[int | str, float], ...]:
        """(fault, probability) in the fixed order one draw is compared against."""
        return ((429, self.rate_429), (503, self.rate_5xx),
                ("timeout", self.rate_timeout), ("reset", self.rate_reset))


# --- directives -------------------------------------------------------------

_DIRECTIVE = re.compile(r"\[sim:([^\]]*)\]")
_FLAGS = {"garbage", "reset", "timeout"}


@dataclass(frozen=True)
class Directive:
    """What the `[sim:...]` tokens of one prompt ask for."""

    fail: int | None = None
    garbage: bool = False
    reset: bool = False
    timeout: bool = False
    times: int | None = None
    model: str | None = None
    sleep_ms: float = 0.0

    @property
    def fault(self) -> int | str | None:
        """The fault asked for; if several, reset > timeout > fail > garbage."""
        if self.reset or self.timeout:
            return "reset" if self.reset else "timeout"
        if self.fail is not None:
            return self.fail
        return "garbage" if self.garbage else None

    def applies_to(self, model: str) -> bool:
        """Whether the fault (if any) is scoped to this requested model."""
        return self.fault is not None and self.model in (None, model)


def parse_directive(text: str) -> Directive | None:
    """Read every `[sim:...]` token in `text` into one `Directive`; None if none.

    Words inside the brackets are separated by spaces or commas:
    `fail=CODE` (400–599), `times=N`, `model=NAME`, `garbage`, `reset`,
    `timeout`, `sleep=MS`. Several tokens merge, later words winning.
    An unknown word or a bad value raises ValueError.
    """
    bodies = _DIRECTIVE.findall(text)
    if not bodies:
        return None
    words = [w for body in bodies for w in re.split(r"[\s,]+", body) if w]
    return Directive(**dict(_directive_word(w) for w in words))


def _directive_word(word: str) -> tuple[str, Any]:
    key, sep, value = word.partition("=")
    if not sep and key in _FLAGS:
        return key, True
    if sep and key in _VALUES:
        field, convert = _VALUES[key]
        return field, convert(key, value)
    raise ValueError(f"unknown simulator directive {word!r}")


def _int_value(key: str, value: str, low: int, high: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"[sim:{key}=…] needs an integer, got {value!r}") from None
    if not low <= number <= high:
        raise ValueError(f"[sim:{key}=…] must be {low}–{high}, got {number}")
    return number


def _sleep_value(key: str, value: str) -> float:
    try:
        ms = float(value)
    except ValueError:
        raise ValueError(f"[sim:{key}=…] needs milliseconds, got {value!r}") from None
    if not 0 <= ms < math.inf:
        raise ValueError(f"[sim:{key}=…] must be a non-negative number, got {value!r}")
    return ms


_VALUES: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "fail": ("fail", lambda k, v: _int_value(k, v, 400, 599)),
    "times": ("times", lambda k, v: _int_value(k, v, 0, 10**9)),
    "model": ("model", lambda k, v: v),
    "sleep": ("sleep_ms", _sleep_value),
}


# --- deciding what happens to a request ---------------------------------------


@dataclass(frozen=True)
class Draw:
    """The two uniform [0, 1) numbers every generation request consumes."""

    jitter: float
    fault: float


@dataclass(frozen=True)
class Outcome:
    """What the server does with one request, decided when it arrives.

    `kind` is "answer" (the normal body for 200, an error envelope otherwise),
    "garbage" (200 with a non-JSON body) or "reset" (no answer at all).
    `status` is what the request log records: 0 means the connection was reset.
    """

    kind: str
    status: int
    delay_s: float = 0.0


def plan(directive: Directive | None, *, model: str, seen: int, draw: Draw,
         options: SimOptions) -> Outcome:
    """Decide one request's fate. `seen`: earlier in-scope requests with this prompt."""
    delay = latency_s(options, draw.jitter) + (directive.sleep_ms / 1000 if directive else 0)
    if directive is None:
        return _outcome(random_fault(options, draw.fault), delay, options)
    return _outcome(directed_fault(directive, model, seen), delay, options)


def latency_s(options: SimOptions, u: float) -> float:
    """Mean latency with uniform ± jitter, never below zero."""
    return max(0.0, options.latency_ms + (2 * u - 1) * options.jitter_ms) / 1000


def random_fault(options: SimOptions, u: float) -> int | str | None:
    edge = 0.0
    for fault, rate in options.fault_bands:
        edge += rate
        if u < edge:
            return fault
    return None


def directed_fault(directive: Directive, model: str, seen: int) -> int | str | None:
    if not directive.applies_to(model):
        return None
    if directive.times is not None and seen >= directive.times:
        return None
    return directive.fault


def _outcome(fault: int | str | None, delay_s: float, options: SimOptions) -> Outcome:
    if fault is None or isinstance(fault, int):
        return Outcome("answer", fault or 200, delay_s)
    if fault == "timeout":  # hang, then answer 504 (the client has usually given up)
        return Outcome("answer", 504, delay_s + options.timeout_s)
    return Outcome(fault, 200 if fault == "garbage" else 0, delay_s)


# --- what the server remembers ----------------------------------------------


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


# --- parsing requests ---------------------------------------------------------


class BadRequest(ValueError):
    """A request OpenAI would refuse with 400 invalid_request_error."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


@dataclass(frozen=True)
class Call:
    """One parsed generation request."""

    endpoint: str  # "chat", "completions" or "embeddings"
    model: str
    prompt: str  # what directives and the request log read
    inputs: tuple[str, ...]  # every text sent: message contents, prompts or inputs


async def _json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.read())
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    return body


def _common(body: dict[str, Any]) -> str:
    """Check what every endpoint requires; return the requested model."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("you must provide a model parameter", param="model")
    if body.get("stream") is True:
        raise BadRequest("stream=true is not supported by the Relay simulator.", param="stream")
    return model


def parse_chat(body: dict[str, Any]) -> Call:
    model = _common(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) for m in messages):
        raise BadRequest("'messages' must be a non-empty array of message objects.",
                         param="messages")
    texts = tuple(content_text(m.get("content")) for m in messages)
    users = [t for m, t in zip(messages, texts, strict=True) if m.get("role") == "user"]
    return Call("chat", model, users[-1] if users else "", texts)


def parse_completion(body: dict[str, Any]) -> Call:
    model = _common(body)
    prompts = _texts(body.get("prompt"), "prompt")
    return Call("completions", model, prompts[0], prompts)


def parse_embedding(body: dict[str, Any]) -> Call:
    model = _common(body)
    inputs = _texts(body.get("input"), "input")
    return Call("embeddings", model, inputs[0], inputs)


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content array."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _texts(value: Any, param: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return (" ".join(map(str, value)),)  # one pre-tokenized input
    raise BadRequest(f"'{param}' must be a string or a non-empty array of strings.",
                     param=param)


# --- canned content -----------------------------------------------------------


def _wordset(*lines: str) -> frozenset[str]:
    return frozenset(" ".join(lines).split())


_POSITIVE = _wordset(
    "love loved loves great excellent amazing perfect perfectly happy recommend best "
    "fantastic awesome good nice comfortable reliable sturdy worth wonderful superb "
    "impressed pleased delighted flawless brilliant solid easy beautiful glad favorite "
    "favourite quick fast quiet crisp happier")
_NEGATIVE = _wordset(
    "terrible awful broke broken worst disappointed disappointing refund returned poor "
    "bad waste flimsy hate hated useless defective junk annoying leaks leaked cracked "
    "died stopped unusable overpriced horrible rude late missing faulty regret "
    "frustrating complaints problems issues slow loud noisy loose")
_NEGATORS = _wordset("not never no isn't wasn't doesn't didn't don't hardly barely")


def classify_sentiment(text: str) -> str:
    """'positive', 'negative' or 'neutral' from keyword cues; a negator flips a cue."""
    words = re.findall(r"[a-z']+", text.lower())
    score = 0
    for i, word in enumerate(words):
        cue = (word in _POSITIVE) - (word in _NEGATIVE)
        score += -cue if _NEGATORS.intersection(words[max(0, i - 2):i]) else cue
    return "positive" if score > 0 else "negative" if score < 0 else "neutral"


def compose_reply(model: str, prompt: str, *, context: tuple[str, ...] = ()) -> str:
    """A sentiment label when the request asks to classify, else a labelled echo."""
    if any(re.search(r"classify|sentiment", t, re.IGNORECASE) for t in (prompt, *context)):
        return classify_sentiment(_DIRECTIVE.sub(" ", prompt))
    words = _DIRECTIVE.sub(" ", prompt).split()
    echo = " ".join(words[:_ECHO_WORDS]) + ("…" if len(words) > _ECHO_WORDS else "")
    return f"Simulated reply ({model}): {echo or '(empty prompt)'}"


def embed(text: str) -> list[float]:
    """8 floats of unit length, derived from a hash of the text."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    raw = [int.from_bytes(digest[i:i + 4], "big") / 2**31 - 1 for i in range(0, 32, 4)]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [round(x / norm, 6) for x in raw]


def count_tokens(texts: tuple[str, ...] | list[str]) -> int:
    """A cheap estimate: one token per word."""
    return sum(len(t.split()) for t in texts)


def chat_body(call: Call, n: int, now: int) -> dict[str, Any]:
    reply = compose_reply(call.model, call.prompt, context=call.inputs)
    return {
        "id": f"chatcmpl-sim{n:012d}", "object": "chat.completion", "created": now,
        "model": call.model, "system_fingerprint": "relay-simulator",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": _usage(call.inputs, [reply]),
    }


def completion_body(call: Call, n: int, now: int) -> dict[str, Any]:
    replies = [compose_reply(call.model, p) for p in call.inputs]
    return {
        "id": f"cmpl-sim{n:012d}", "object": "text_completion", "created": now,
        "model": call.model, "system_fingerprint": "relay-simulator",
        "choices": [{"index": i, "text": r, "logprobs": None, "finish_reason": "stop"}
                    for i, r in enumerate(replies)],
        "usage": _usage(call.inputs, replies),
    }


def embedding_body(call: Call, n: int, now: int) -> dict[str, Any]:
    tokens = count_tokens(call.inputs)
    return {
        "object": "list", "model": call.model,
        "data": [{"object": "embedding", "index": i, "embedding": embed(t)}
                 for i, t in enumerate(call.inputs)],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _usage(inputs: tuple[str, ...], replies: list[str]) -> dict[str, int]:
    prompt, completion = count_tokens(inputs), count_tokens(replies)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


_BODIES = {"chat": chat_body, "completions": completion_body, "embeddings": embedding_body}
_PARSERS = {"chat": parse_chat, "completions": parse_completion, "embeddings": parse_embedding}


# --- HTTP -----------------------------------------------------------------------


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
        call = _PARSERS[endpoint](await _json_body(request))
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
    state.record(call and call.model, call.prompt if call else "", 400)
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
    return web.json_response(_BODIES[call.endpoint](call, next(state.ids), int(time.time())))


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


# --- command line -----------------------------------------------------------------


def _rate(text: str) -> float:
    value = _non_negative(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be a probability between 0 and 1, got {text}")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a non-negative number, got {text}")
    return value


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0–65535 (0 picks a free port), got {port}")
    return port


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relayd simulate",
        description="Run a SIMULATED OpenAI-compatible upstream for demos, tests and "
                    "benchmarks. Prompts may carry [sim:...] directives.")
    add = parser.add_argument
    add("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    add("--port", type=_port, required=True, help="port to bind; 0 picks a free one")
    add("--latency-ms", type=_non_negative, default=0.0, help="mean added latency")
    add("--jitter-ms", type=_non_negative, default=0.0, help="uniform ± spread around it")
    for fault in ("429", "5xx", "timeout", "reset"):
        add(f"--rate-{fault}", type=_rate, default=0.0, help=f"probability of a {fault} fault")
    add("--retry-after", type=_non_negative, default=1.0, help="Retry-After seconds on 429s")
    add("--timeout-s", type=_non_negative, default=30.0,
        help="how long a simulated timeout hangs before answering 504")
    add("--seed", type=int, default=None, help="seed for the random faults and jitter")
    return parser


def options_from(args: argparse.Namespace) -> SimOptions:
    return SimOptions(
        latency_ms=args.latency_ms, jitter_ms=args.jitter_ms, rate_429=args.rate_429,
        rate_5xx=args.rate_5xx, rate_timeout=args.rate_timeout, rate_reset=args.rate_reset,
        retry_after_s=args.retry_after, timeout_s=args.timeout_s, seed=args.seed)


def main(argv: list[str] | None = None) -> int:
    """`relayd simulate`: serve until SIGINT or SIGTERM, then exit 0."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        options = options_from(args)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        asyncio.run(_serve(build_app(options), args.host, args.port))
    except OSError as exc:
        print(f"relayd simulate: cannot listen on {args.host}:{args.port}: {exc}",
              file=sys.stderr)
        return 1
    return 0


async def _serve(app: web.Application, host: str, port: int) -> None:
    # handler_cancellation: a simulated timeout stops hanging once its client leaves.
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True,
                           shutdown_timeout=1.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        bound = runner.addresses[0][1]
        shown = f"[{host}]" if ":" in host else host
        print("relayd simulate: SIMULATED OpenAI-compatible upstream listening on "
              f"http://{shown}:{bound}/v1", flush=True)
        await _until_signalled()
    finally:
        await runner.cleanup()


async def _until_signalled() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


if __name__ == "__main__":
    sys.exit(main())
