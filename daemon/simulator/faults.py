"""What happens to each simulated request: the options, `[sim:...]` directives and
the seeded draws that decide latency and faults. Pure: no I/O."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SimOptions:
    """How the simulator behaves; the defaults are instant and fault-free."""

    latency_ms: float = 0
    jitter_ms: float = 0
    rate_429: float = 0
    rate_5xx: float = 0
    rate_timeout: float = 0
    rate_reset: float = 0
    rate_huge: float = 0
    retry_after_s: float = 1
    timeout_s: float = 30
    huge_mb: int = 100  # the size of a huge answer (MB = 2^20 bytes)
    seed: int | None = None
    rpm: int | None = None  # requests a minute per model, else 429 (limits.py)
    tpm: int | None = None  # tokens a minute per model
    capacity: int | None = None  # requests at once, else 429

    def __post_init__(self) -> None:
        for name in ("latency_ms", "jitter_ms", "retry_after_s", "timeout_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        for name in ("rpm", "tpm", "capacity"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if not 1 <= self.huge_mb <= MAX_HUGE_MB:
            raise ValueError(f"huge_mb must be 1–{MAX_HUGE_MB}")
        rates = [rate for _, rate in self.fault_bands]
        if not all(0 <= rate <= 1 for rate in rates):
            raise ValueError("fault rates must be between 0 and 1")
        if sum(rates) > 1 + 1e-9:
            raise ValueError("fault rates must add up to at most 1")

    @property
    def fault_bands(self) -> tuple[tuple[int | str, float], ...]:
        """(fault, probability) in the fixed order one draw is compared against."""
        return ((429, self.rate_429), (503, self.rate_5xx),
                ("timeout", self.rate_timeout), ("reset", self.rate_reset),
                ("huge", self.rate_huge))


MAX_HUGE_MB = 4096
USAGE_BOUND = 10**30 - 1  # [sim:prompt_tokens=N]: up to 30 digits, either sign
DIRECTIVE_PATTERN = re.compile(r"\[sim:([^\]]*)\]")
_FLAGS = {"garbage", "huge", "reset", "timeout", "tool_bad_args", "tool_garbage",
          "tool_mismatch", "wf_fail", "wf_garbage", "json_bad", "json_wrong"}


@dataclass(frozen=True)
class Directive:
    """What the `[sim:...]` tokens of one prompt ask for."""

    fail: int | None = None
    garbage: bool = False
    # A 200 whose valid JSON body is padded to `huge_mb` MB (None: the --huge-mb option).
    huge: bool = False
    huge_mb: int | None = None
    reset: bool = False
    timeout: bool = False
    times: int | None = None
    model: str | None = None
    sleep_ms: float = 0.0
    # The simulated model's tool calling (requests with `tools`): how many rounds of
    # tool calls before the final answer (None: 1), and how many calls per round (None: 1).
    tool_rounds: int | None = None
    tool_calls: int | None = None
    tool_bad_args: bool = False  # the calls' arguments are cut short: not valid JSON
    # The HTTP tool executor (`POST /_sim/tools`), which reads these from the calls'
    # arguments; the MCP server honours tool_fail/tool_times/tool_sleep_ms too.
    tool_fail: int | None = None
    tool_times: int | None = None
    tool_sleep_ms: float = 0.0
    tool_garbage: bool = False
    tool_mismatch: bool = False
    tool_huge_mb: int | None = None  # valid results padded to this many MB
    tool_content_kb: int | None = None  # each result's content this many KB (a transcript grows)
    tool_round: int | None = None  # the executor faults hit only this Relay-Round
    # The workflow callback (`POST /_sim/workflow`), which reads these from the last user
    # message of a workflow record's input (see workflow.py).
    wf_fanout: int | None = None  # map requests (None: one per sentence, at most 4)
    wf_wait_ms: int | None = None  # the first answer is `wait` this long
    wf_fail: bool = False  # the first answer is `failed`
    wf_garbage: bool = False  # the first answer is a 200 that is no valid answer
    wf_http: int | None = None  # answer this HTTP status instead...
    wf_times: int | None = None  # ...to the first N deliveries of each event (None: all)
    wf_steps: int = 0  # one-request `continue` steps before the map step
    wf_sleep_ms: float = 0.0  # before every answer
    wf_stall: int = 0  # map requests (the first K) that carry [sim:sleep=3000]
    wf_pad_kb: int = 0  # each map request's prompt padded by this many KB (a state grows)
    # A JSON answer (response_format, text.format; structured.py): not JSON, JSON that
    # violates the schema, or valid only from the K-th call of the conversation on.
    json_bad: bool = False
    json_wrong: bool = False
    json_valid_on: int = 0
    json_sleep_ms: float = 0.0  # every call of the conversation after the first waits
    # The answer's usage as given, whatever it is (an untrusted upstream's numbers):
    # `usage.prompt_tokens` / `completion_tokens` (total_tokens their sum).
    usage_prompt: int | None = None
    usage_completion: int | None = None

    @property
    def fault(self) -> int | str | None:
        """The fault asked for; if several, reset > timeout > fail > garbage > huge."""
        if self.reset or self.timeout:
            return "reset" if self.reset else "timeout"
        if self.fail is not None:
            return self.fail
        if self.garbage:
            return "garbage"
        return "huge" if self.huge or self.huge_mb is not None else None

    def usage_for(self, model: str) -> dict[str, int] | None:
        """The usage counts this prompt asks the answer to report on `model`, if any."""
        if self.usage_prompt is None and self.usage_completion is None:
            return None
        return None if self.model not in (None, model) else {
            k: v for k, v in (("prompt_tokens", self.usage_prompt),
                              ("completion_tokens", self.usage_completion)) if v is not None}

    def applies_to(self, model: str) -> bool:
        """Whether the fault (if any) is scoped to this requested model."""
        return self.fault is not None and self.model in (None, model)


def parse_directive(text: str) -> Directive | None:
    """Read every `[sim:...]` token in `text` into one `Directive`; None if none.

    Words inside the brackets are separated by spaces or commas:
    `fail=CODE` (400–599), `times=N`, `model=NAME`, `garbage`, `huge` or
    `huge=MB` (1–4096: a 200 whose valid JSON body is that big), `reset`,
    `timeout`, `sleep=MS`; for tool calling `tool_rounds=N` (0–100),
    `tool_calls=K` (1–100), `tool_bad_args` (the calls' arguments are not valid
    JSON); for the tool executors `tool_fail=CODE` (400–599),
    `tool_times=N`, `tool_sleep=MS`, `tool_garbage`, `tool_mismatch`, `tool_huge=MB`
    (1–4096: valid results that big; MCP: `lookup` only), `tool_content=KB` (1–8192:
    each result's content that many KB, which the transcript then carries; HTTP), and
    `tool_round=N` (those faults hit only round N); for the workflow callback
    (`POST /_sim/workflow`, read from a workflow input's last user message)
    `wf_fanout=K` (1–256 map requests), `wf_wait=MS` (0–10⁹: the first answer waits; Relay
    accepts 1000–3600000), `wf_fail`, `wf_garbage`, `wf_http=CODE` (400–599),
    `wf_times=N`, `wf_steps=N` (0–10000 extra steps), `wf_sleep=MS`, `wf_stall=K` (0–256),
    `wf_pad=KB` (0–1024: each map request's prompt that many KB longer); for the answer's
    usage `prompt_tokens=N` and `completion_tokens=N` (any integer of up to 30 digits,
    negative too: reported as is, with `model=NAME` only on that model); for a JSON
    answer (`response_format` or `text.format` asks for one) `json_bad` (not JSON),
    `json_wrong` (JSON that violates the schema) and `json_valid_on=K` (1–10: the bad
    answer until the K-th call of the conversation, then a valid one; read from the
    first user message, so a repair's follow-up still counts), `json_sleep=MS` (every
    call of that conversation after the first waits MS first: a slow repair).
    In a token that names `tool_fail` but not `fail`, `times=N` means `tool_times=N`, so
    `[sim:tool_fail=503 times=2]` reads as it looks; likewise in a token that names
    `wf_http` but neither `fail` nor `tool_fail`, `times=N` means `wf_times=N`. Several
    tokens merge, later words winning. An unknown word or a bad value raises ValueError.
    """
    bodies = DIRECTIVE_PATTERN.findall(text)
    if not bodies:
        return None
    fields: dict[str, Any] = {}
    for body in bodies:
        words = [w for w in re.split(r"[\s,]+", body) if w]
        keys = {w.partition("=")[0] for w in words}
        times = ("tool_times" if "tool_fail" in keys and "fail" not in keys
                 else "wf_times" if "wf_http" in keys and "fail" not in keys
                 else "times")
        for word in words:
            field, value = _directive_word(word)
            fields[times if field == "times" else field] = value
    return Directive(**fields)


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
    "huge": ("huge_mb", lambda k, v: _int_value(k, v, 1, MAX_HUGE_MB)),
    "tool_huge": ("tool_huge_mb", lambda k, v: _int_value(k, v, 1, MAX_HUGE_MB)),
    "model": ("model", lambda k, v: v),
    "sleep": ("sleep_ms", _sleep_value),
    "tool_rounds": ("tool_rounds", lambda k, v: _int_value(k, v, 0, 100)),
    "tool_calls": ("tool_calls", lambda k, v: _int_value(k, v, 1, 100)),
    "tool_fail": ("tool_fail", lambda k, v: _int_value(k, v, 400, 599)),
    "tool_times": ("tool_times", lambda k, v: _int_value(k, v, 0, 10**9)),
    "tool_sleep": ("tool_sleep_ms", _sleep_value),
    "tool_round": ("tool_round", lambda k, v: _int_value(k, v, 1, 100)),
    "tool_content": ("tool_content_kb", lambda k, v: _int_value(k, v, 1, 8192)),
    "wf_fanout": ("wf_fanout", lambda k, v: _int_value(k, v, 1, 256)),
    "wf_wait": ("wf_wait_ms", lambda k, v: _int_value(k, v, 0, 10**9)),
    "wf_http": ("wf_http", lambda k, v: _int_value(k, v, 400, 599)),
    "wf_times": ("wf_times", lambda k, v: _int_value(k, v, 0, 10**9)),
    "wf_steps": ("wf_steps", lambda k, v: _int_value(k, v, 0, 10_000)),
    "wf_sleep": ("wf_sleep_ms", _sleep_value),
    "wf_pad": ("wf_pad_kb", lambda k, v: _int_value(k, v, 0, 1024)),
    "json_valid_on": ("json_valid_on", lambda k, v: _int_value(k, v, 1, 10)),
    "json_sleep": ("json_sleep_ms", _sleep_value),
    "wf_stall": ("wf_stall", lambda k, v: _int_value(k, v, 0, 256)),
    "prompt_tokens": ("usage_prompt", lambda k, v: _int_value(k, v, -USAGE_BOUND, USAGE_BOUND)),
    "completion_tokens": ("usage_completion",
                          lambda k, v: _int_value(k, v, -USAGE_BOUND, USAGE_BOUND)),
}


@dataclass(frozen=True)
class Draw:
    """The two uniform [0, 1) numbers every generation request consumes."""

    jitter: float
    fault: float


@dataclass(frozen=True)
class Outcome:
    """What the server does with one request, decided when it arrives.

    `kind` is "answer" (the normal body for 200, an error envelope otherwise),
    "garbage" (200 with a non-JSON body), "huge" (200 with the normal body padded to
    `huge_mb` MB, streamed) or "reset" (no answer at all).
    `status` is what the request log records: 0 means the connection was reset.
    """

    kind: str
    status: int
    delay_s: float = 0.0
    huge_mb: int = 0


def plan(directive: Directive | None, *, model: str, seen: int, draw: Draw,
         options: SimOptions) -> Outcome:
    """Decide one request's fate. `seen`: earlier in-scope requests with this prompt."""
    delay = latency_s(options, draw.jitter) + (directive.sleep_ms / 1000 if directive else 0)
    if directive is None:
        return _outcome(random_fault(options, draw.fault), delay, options,
                        huge_mb=options.huge_mb)
    return _outcome(directed_fault(directive, model, seen), delay, options,
                    huge_mb=directive.huge_mb or options.huge_mb)


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


def _outcome(fault: int | str | None, delay_s: float, options: SimOptions, *,
             huge_mb: int) -> Outcome:
    if fault is None or isinstance(fault, int):
        return Outcome("answer", fault or 200, delay_s)
    if fault == "timeout":  # hang, then answer 504 (the client has usually given up)
        return Outcome("answer", 504, delay_s + options.timeout_s)
    if fault == "huge":
        return Outcome("huge", 200, delay_s, huge_mb=huge_mb)
    return Outcome(fault, 200 if fault == "garbage" else 0, delay_s)
