"""The router: one row's whole trip upstream, with retries, fallbacks and per-model limits.

`Router.call` tries the row's model, retrying transient failures with backoff,
then each of that model's fallbacks in order, and sums the trip up in a
`RowOutcome`. How one reply is judged (success, transient, permanent) is the
pure `classify`, tested on its own; time, sleeping and jitter are injected.

Every call passes its model's gate (`gate.py`: slots, rpm/tpm pacing, pauses),
shared by every job, and tells it how it went (`load_signal`), which is how the
model's concurrency adapts. A 429 that names a rate (`x-ratelimit-*`) pauses the
whole model, and the row that met it waits out the pause at the gate. A bare 429 (a
server at capacity) lowers an adaptive model's concurrency instead, and only its row
waits (its `Retry-After`, else the backoff). Either way the row spends no attempt, up
to `RATE_LIMITED_TRIES` times per model (so a model limited for good still ends),
and does not fall back.

Each model speaks its protocol (`[[models]] api`): the row's request is translated for
it and its answer back into the row's shape (`protocols.py`), so a row may fall back
from an OpenAI-compatible model to an Anthropic one. A request the model's protocol
cannot carry, or of an endpoint the model does not serve (`[[models]] endpoints`),
fails on that model without calling it (`Untranslatable`), and the chain goes on.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from daemon.config import ModelConfig, RetryConfig
from daemon.domain import codec
from daemon.domain.cluster import Part
from daemon.domain.concurrency import Signal
from daemon.domain.outcome import Attempt, RowOutcome, Usage
from daemon.domain.ratelimit import (
    RATE_LIMITED_TRIES,
    RateHeaders,
    max_tokens_of,
    read_rate_headers,
)
from daemon.domain.retry import is_transient_status, retry_delay
from daemon.domain.usage import INVALID, InvalidUsage, read_usage
from daemon.upstream.gate import ModelGate
from daemon.upstream.protocols import Translation, as_is, rate_names, translation_for
from daemon.upstream.transport import Reply, Transport, TransportError
from daemon.upstream.untranslatable import BadAnswer, Untranslatable

MESSAGE_LIMIT = 200
TOO_LARGE = "response_too_large"

Kind = Literal["success", "transient", "permanent"]
SILENT = RateHeaders()  # an answer with no rate-limit headers
OVERLOADED = 529  # Anthropic's "overloaded_error": a server at capacity, like a bare 429
UsageReader = Callable[[Mapping[str, Any]], Usage]


@dataclass(slots=True)  # made per row or call: see `outcome.py`
class Verdict:
    """What one upstream call came to."""

    kind: Kind
    status: int | None = None
    response: dict[str, Any] | None = None
    error: str | None = None  # the attempt's error text
    what: str = ""  # a short phrase for the row's error summary: "503", "timeout"
    detail: str | None = None  # the upstream's own message, when it sent one
    text: str | None = None  # a successful body as received (UTF-8 JSON text)
    code: str = "upstream_error"
    retry_after: str | None = None
    paused_model: bool = False  # a 429 that paused the whole model (the gate waits it out)
    usage: Usage = field(default_factory=Usage)  # a success's, checked (`read_usage`)


@dataclass(frozen=True)
class Failure:
    """How one model in the chain ended, for the row's error summary."""

    alias: str
    verdict: Verdict
    tries: int


@dataclass(frozen=True)
class Outbound:
    """A row's request as one model takes it: where it goes, what is sent, and how its
    answer comes back in the row's shape."""

    path: str
    sent: dict[str, Any]
    payload: bytes
    translation: Translation
    asked: Mapping[str, Any]  # the row's own request

    @classmethod
    def of(cls, endpoint: str, body: Mapping[str, Any], model: ModelConfig) -> Outbound:
        """Raises `Untranslatable` when the model cannot carry the request (its protocol,
        or the endpoints it serves)."""
        translation = translation_for(endpoint, model.api, serves=model.endpoints)
        sent = translation.request(body, model)
        return cls(translation.path or endpoint, sent, codec.dumps(sent), translation, body)


def classify(reply: Reply, *, alias: str, usage_of: UsageReader = read_usage) -> Verdict:
    """Judge one reply: 2xx with a JSON object succeeds; 408/409/429/5xx may pass on retry.
    `usage_of` reads a success's usage in the upstream's protocol."""
    if 200 <= reply.status <= 299:
        return _classify_ok(reply, alias=alias, usage_of=usage_of)
    message = upstream_message(reply.body)
    error = f"{reply.status} {message}" if message else str(reply.status)
    kind: Kind = "transient" if is_transient_status(reply.status) else "permanent"
    retry_after = header(reply.headers, "Retry-After")
    return Verdict(kind, status=reply.status, error=error, what=str(reply.status),
                   detail=message, retry_after=retry_after, response=_json_object(reply.body))


def load_signal(verdict: Verdict) -> Signal:
    """What a call says of the model's load, for its adaptive concurrency: a 429 or a
    timeout (or Anthropic's 529) is an overload; any other failure says nothing."""
    if verdict.status in (429, OVERLOADED) or verdict.what == "timeout":
        return "overload"
    return "ok" if verdict.kind == "success" else "neutral"


def classify_error(exc: TransportError) -> Verdict:
    """No answer at all: always worth another try. An answer over the size cap is
    permanent: the same request would get the same answer (another model may not)."""
    if exc.kind == "too_large":
        return Verdict("permanent", status=exc.status, error=f"{TOO_LARGE}: {exc.message}",
                       what=exc.message, code=TOO_LARGE)
    what = "timeout" if exc.kind == "timeout" else "connection error"
    return Verdict("transient", error=f"{exc.kind}: {exc}", what=what)


def refused(exc: Untranslatable, *, model: ModelConfig) -> Verdict:
    """A request the model's protocol cannot carry: permanent, and never sent."""
    return Verdict("permanent", error=f"{exc.code}: {exc.message}", code=exc.code,
                   what=f"cannot take this row ({model.api} protocol): {exc.message}")


def translated(verdict: Verdict, outbound: Outbound, *, alias: str, now: float) -> Verdict:
    """A success's answer in the row's shape (re-encoded when stored); an answer that
    cannot take that shape is an invalid response, kept as the row's error body."""
    answer = outbound.translation.answer
    if verdict.kind != "success" or answer is None or verdict.response is None:
        return verdict
    try:
        response = answer(verdict.response, usage=verdict.usage, sent=outbound.sent,
                          asked=outbound.asked, now=now)
    except BadAnswer as exc:
        what = f"answered {verdict.status} with {exc}"
        return Verdict("permanent", status=verdict.status, error=f"{INVALID}: {alias} {what}",
                       what=what, code=INVALID, response=verdict.response)
    return replace(verdict, response=response, text=None)


def _classify_ok(reply: Reply, *, alias: str, usage_of: UsageReader) -> Verdict:
    """A JSON object whose usage passes `read_usage` succeeds; any other 2xx is an invalid
    response (permanent: the same request would get the same answer), the answer kept
    as the row's error body."""
    body = _json_object(reply.body)
    if body is None:
        return _invalid(reply, alias, "with a body that is not a JSON object")
    try:
        usage = usage_of(body)
    except InvalidUsage as exc:
        return replace(_invalid(reply, alias, f"with {exc}"), response=body)
    return Verdict("success", status=reply.status, response=body, text=_utf8(reply.body),
                   usage=usage)


def _invalid(reply: Reply, alias: str, problem: str) -> Verdict:
    what = f"answered {reply.status} {problem}"
    return Verdict("permanent", status=reply.status, error=f"{INVALID}: {alias} {what}",
                   what=what, code=INVALID)


def upstream_message(body: bytes) -> str | None:
    """The message of an `{"error": {"message": ...}}` (or `{"error": "..."}`) envelope."""
    error = (_json_object(body) or {}).get("error")
    message = error.get("message") if isinstance(error, dict) else error
    if not isinstance(message, str) or not message.strip():
        return None
    message = " ".join(message.split())
    return message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 1] + "…"


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by name, ignoring case, whatever mapping the transport used."""
    value = headers.get(name)
    if value is not None:
        return value
    wanted = name.lower()
    return next((v for k, v in headers.items() if k.lower() == wanted), None)


def payload_for(body: Mapping[str, Any], model: ModelConfig) -> bytes:
    """The request body as sent to a model of the row's own protocol (`protocols.as_is`)."""
    return codec.dumps(as_is(body, model))


def summarize(failures: Sequence[Failure]) -> str:
    """One line for the row: `upstream_error: 503 from a after 3 attempts; fallback b: ...`."""
    first, *rest = failures
    parts = [_primary_phrase(first)] + [f"fallback {f.alias}: {_phrase(f)}" for f in rest]
    return f"{first.verdict.code}: " + "; ".join(parts)


def _primary_phrase(failure: Failure) -> str:
    if failure.verdict.code in (INVALID, TOO_LARGE) or failure.tries == 0:
        return f"{failure.alias} {failure.verdict.what}"
    return f"{failure.verdict.what} from {failure.alias}{_tries(failure)}"


def _phrase(failure: Failure) -> str:
    return f"{failure.verdict.what}{_tries(failure)}"


def _tries(failure: Failure) -> str:
    """` after 3 attempts (upstream said: …)` or ` (not retried; upstream said: …)`;
    nothing for a model that was never called (its protocol refused the row)."""
    if failure.tries == 0:
        return ""
    said = f"upstream said: {failure.verdict.detail}" if failure.verdict.detail else ""
    if failure.tries == 1 and failure.verdict.kind == "permanent":
        return f" (not retried; {said})" if said else " (not retried)"
    tries = f" after {failure.tries} attempt{'s' if failure.tries > 1 else ''}"
    return f"{tries} ({said})" if said else tries


def _utf8(body: bytes) -> str | None:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:  # JSON in UTF-16/32: stored re-encoded instead
        return None


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        value = codec.loads(body)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class Router:
    """Sends rows to configured models by alias, with retries, fallbacks and limits."""

    def __init__(
        self,
        models: Sequence[ModelConfig],
        retry: RetryConfig,
        *,
        transport: Transport,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self._models = {m.alias: m for m in models}
        self._retry = retry
        self._transport = transport
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        # Built once: the API reads them from its own thread, so the dict never changes.
        self._gates = {m.alias: ModelGate(m) for m in models}

    async def call(self, alias: str, endpoint: str, body: Mapping[str, Any], *,
                   resume_at: str | None = None,
                   fence: Callable[[], None] = lambda: None) -> RowOutcome:
        """Run one row's request to the end: an ok outcome or a failure summing up every try.
        `resume_at` starts the chain at that alias (a row of several calls that already
        fell back keeps going on the same model). `fence` runs before every try goes out
        (after its waits) and raises to stop the row (its lease may be another node's:
        `Lane.fence`)."""
        if alias not in self._models:
            return RowOutcome(
                ok=False, model=alias, error=f"model_not_found: {alias!r} is not configured",
                error_code="model_not_found",
            )
        attempts: list[Attempt] = []
        failures: list[Failure] = []
        for model in self._chain(alias, resume_at):
            verdict, tries = await self._try_model(model, endpoint, body, attempts, fence)
            if verdict.kind == "success":
                return _succeeded(model, verdict, attempts)
            failures.append(Failure(model.alias, verdict, tries))
        return _failed(failures, attempts)

    async def share(self, part: Part) -> None:
        """The live nodes changed: every model's limits follow this node's part (run on
        the I/O loop, where the gates live)."""
        now = self._clock()
        for gate in self._gates.values():
            gate.share(part, now)

    def model_states(self) -> dict[str, dict[str, Any]]:
        """Each model's limits, pause and concurrency, as `GET /v1/models` shows them."""
        now = self._clock()
        return {alias: gate.snapshot(now) for alias, gate in self._gates.items()}

    async def aclose(self) -> None:
        close = getattr(self._transport, "close", None)
        if close is not None:
            await close()

    def _chain(self, alias: str, resume_at: str | None = None) -> Iterator[ModelConfig]:
        """The model, then its own fallbacks in order; each alias once; from `resume_at`
        on when it is in the chain."""
        names = [alias, *self._models[alias].fallbacks]
        if resume_at in names:
            names = names[names.index(resume_at):]
        seen: set[str] = set()
        for name in names:
            if name in self._models and name not in seen:
                seen.add(name)
                yield self._models[name]

    async def _try_model(
        self, model: ModelConfig, endpoint: str, body: Mapping[str, Any],
        attempts: list[Attempt], fence: Callable[[], None],
    ) -> tuple[Verdict, int]:
        """How the model ended for this row, and its tries (0: its protocol refused it)."""
        try:
            outbound = Outbound.of(endpoint, body, model)
        except Untranslatable as exc:
            return refused(exc, model=model), 0
        max_tokens = max_tokens_of(outbound.sent)
        tries = paced = 0
        while True:
            verdict = await self._attempt(model, outbound, attempts,
                                          max_tokens=max_tokens, fence=fence)
            if verdict.status == 429 and paced < RATE_LIMITED_TRIES:
                paced += 1
                if not verdict.paused_model:  # a server at capacity: only this row waits
                    await self._sleep(self._delay(paced, verdict))
                continue  # else the gate waits out the model's pause
            tries += 1
            if verdict.kind != "transient" or tries >= self._retry.attempts:
                return verdict, tries + paced
            await self._sleep(self._delay(tries, verdict))

    def _delay(self, tries: int, verdict: Verdict) -> float:
        return retry_delay(
            tries,
            retry_after=verdict.retry_after,
            policy=self._retry,
            now=self._clock(),
            rng=self._rng,
        )

    async def _attempt(
        self, model: ModelConfig, outbound: Outbound, attempts: list[Attempt], *,
        max_tokens: int | None, fence: Callable[[], None],
    ) -> Verdict:
        """One upstream call, holding the model's slot while it waits for its pace and
        while it is on the wire. `fence` runs last before it goes out: a freeze may have
        come during the wait."""
        gate = self._gates[model.alias]
        async with gate.slot() as ticket:
            tokens = gate.pace.estimator.estimate(len(outbound.payload), max_tokens)
            await gate.admit(tokens, clock=self._clock, sleep=self._sleep)
            fence()
            started = self._clock()
            verdict = await self._send(model, outbound, gate)
            gate.finish(ticket, load_signal(verdict))
            elapsed_ms = max(0, round((self._clock() - started) * 1000))
        if verdict.kind == "success":
            self._settle(gate, verdict, size=len(outbound.payload), max_tokens=max_tokens,
                         estimated=tokens)
        transient = verdict.kind == "transient"
        attempts.append(
            Attempt(model.alias, verdict.status, verdict.error, elapsed_ms, started, transient)
        )
        return verdict

    async def _send(self, model: ModelConfig, outbound: Outbound, gate: ModelGate) -> Verdict:
        try:
            reply = await self._transport.send(model, outbound.path, outbound.payload)
        except TransportError as exc:
            return classify_error(exc)
        paused = self._observe(gate, reply, model)
        verdict = classify(reply, alias=model.alias, usage_of=outbound.translation.usage)
        verdict = translated(verdict, outbound, alias=model.alias, now=self._clock())
        return replace(verdict, paused_model=True) if paused else verdict

    def _observe(self, gate: ModelGate, reply: Reply, model: ModelConfig) -> bool:
        """Let the model's pace learn from an answer's rate-limit headers (and a 429);
        say whether the answer paused the model."""
        now = self._clock()
        rate = SILENT
        # Most answers say nothing of limits: one look at the header names (in C) skips
        # copying and reading them, 4 µs of 6 a call with pyreqwest's header map.
        if reply.status == 429 or "ratelimit" in " ".join(reply.headers.keys()).lower():
            names = rate_names(model.api, {k.lower(): v for k, v in reply.headers.items()},
                               now=now)
            if reply.status == 429 or any(k.startswith("x-ratelimit-") for k in names):
                rate = read_rate_headers(names.get, now=now)
        return gate.pace.observe(reply.status, rate, now=now,
                                 backoff_s=self._retry.backoff_base_s,
                                 backoff_cap_s=self._retry.backoff_cap_s,
                                 pause_cap_s=self._retry.retry_after_cap_s,
                                 in_flight=gate.in_flight)

    def _settle(self, gate: ModelGate, verdict: Verdict, *, size: int, max_tokens: int | None,
                estimated: int) -> None:
        """Correct the token bucket and the estimate by the answer's usage."""
        usage = verdict.usage
        gate.pace.settle(estimated, usage.prompt_tokens + usage.completion_tokens,
                         self._clock())
        gate.pace.estimator.learn(size, max_tokens, prompt=usage.prompt_tokens,
                                  completion=usage.completion_tokens)


def _succeeded(model: ModelConfig, verdict: Verdict, attempts: list[Attempt]) -> RowOutcome:
    response = verdict.response or {}
    return RowOutcome(
        ok=True,
        response=response,
        response_text=verdict.text,
        status_code=verdict.status,
        model=model.alias,
        attempts=tuple(attempts),
        usage=verdict.usage,
    )


def _failed(failures: list[Failure], attempts: list[Attempt]) -> RowOutcome:
    statuses = [a.status_code for a in attempts if a.status_code is not None]
    return RowOutcome(
        ok=False,
        status_code=statuses[-1] if statuses else None,
        model=failures[-1].alias,
        error=summarize(failures),
        error_code=failures[0].verdict.code,
        error_body=failures[-1].verdict.response,
        dead_letter=any(f.verdict.kind == "transient" for f in failures),
        attempts=tuple(attempts),
    )
