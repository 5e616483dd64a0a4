"""The upstream protocols (`[[models]] api`), and how a row of each endpoint travels on each.

A row's request goes out in the model's protocol and its answer comes back in the
row's shape: `translation_for(endpoint, api, serves=...)` picks, once per model of the
chain, one `Translation` of the table below, which also says how the answer reports
usage (`domain/usage.py`'s readers). An OpenAI-protocol model serves the endpoints its
`[[models]] endpoints` lists (`serves`). How an upstream's headers announce rate limits
is per protocol (`rate_names`, which names Anthropic's `anthropic-ratelimit-*` as the
`x-ratelimit-*` the pace reads).

"served": in the model's `endpoints`; "refused": the row fails on that model.

| row endpoint          | api = "openai"                       | api = "anthropic"       |
| --------------------- | ------------------------------------ | ----------------------- |
| /v1/chat/completions  | as is if served, else refused        | `openai_to_anthropic`   |
| /v1/messages          | `anthropic_to_openai` if chat served | as is                   |
| /v1/responses         | as is if served, else                | `responses_to_chat`,    |
|                       | `responses_to_chat` if chat served   | `openai_to_anthropic`   |
| /v1/moderations       | as is if served, else refused        | refused                 |
| /v1/completions, ...  | as is if served, else refused        | refused                 |

Refused: `endpoint_not_served` on an OpenAI model whose `endpoints` lack what the row
needs, `unsupported_endpoint` on an Anthropic one; the chain goes on to the next model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from daemon.config import DEFAULT_ENDPOINTS, OPENAI_ENDPOINTS, Api, ModelConfig
from daemon.domain.extensions import EXTENSIONS
from daemon.domain.outcome import Usage
from daemon.domain.usage import no_usage, read_message_usage, read_response_usage, read_usage
from daemon.upstream import anthropic_to_openai, openai_to_anthropic, responses_to_chat
from daemon.upstream.untranslatable import (
    ENDPOINT_NOT_SERVED,
    UNSUPPORTED_ENDPOINT,
    Untranslatable,
)

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
RESPONSES = "/v1/responses"
MODERATIONS = "/v1/moderations"

Request = Callable[[Mapping[str, Any], ModelConfig], dict[str, Any]]
UsageReader = Callable[[Mapping[str, Any]], Usage]


class Answer(Protocol):
    """An upstream's answer in the row's shape; `usage` is the answer's, checked, `sent`
    the request it answers and `asked` the row's own request. Raises `BadAnswer`."""

    def __call__(self, answer: Mapping[str, Any], /, *, usage: Usage, sent: Mapping[str, Any],
                 asked: Mapping[str, Any], now: float) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Translation:
    """How a row of one endpoint goes to an upstream of one protocol and comes back."""

    request: Request  # the body as sent; raises `Untranslatable`
    path: str | None = None  # where it is posted; None: the row's own endpoint
    answer: Answer | None = None  # the answer in the row's shape; None: as received
    usage: UsageReader = read_usage  # how the upstream's answer reports usage


def as_is(body: Mapping[str, Any], model: ModelConfig) -> dict[str, Any]:
    """The row's own body: the upstream's model name, without Relay's reserved key."""
    sent = {k: v for k, v in body.items() if k != EXTENSIONS}  # Relay's own; never sent upstream
    sent["model"] = model.model
    return sent


# A Responses field under its chat name, as a refusal met in the chat step names it.
CHAT_NAMES = {"reasoning_effort": "reasoning.effort", "response_format": "text.format",
              "verbosity": "text.verbosity", "max_completion_tokens": "max_output_tokens",
              "messages": "input"}


def _responses_on_anthropic(body: Mapping[str, Any], model: ModelConfig) -> dict[str, Any]:
    """Responses to chat, then chat to Messages; a refusal of the second step names the
    row's own field."""
    chat = responses_to_chat.chat_request(body, model)
    try:
        return openai_to_anthropic.messages_request(chat, model)
    except Untranslatable as exc:
        name = next((n for n in CHAT_NAMES if exc.message.startswith((f"{n} ", f"{n}["))),
                    None)
        if name is None:
            raise
        said = f"{CHAT_NAMES[name]} (as chat's {name}){exc.message[len(name):]}"
        raise Untranslatable(exc.code, said) from exc


def _response_of_message(message: Mapping[str, Any], *, usage: Usage, sent: Mapping[str, Any],
                         asked: Mapping[str, Any], now: float) -> dict[str, Any]:
    chat = openai_to_anthropic.chat_answer(message, usage=usage, sent=sent, now=now)
    return responses_to_chat.response_answer(chat, usage=usage, sent=sent, asked=asked,
                                             now=now)


AS_IS = Translation(as_is)
RESPONSES_ON_CHAT = Translation(responses_to_chat.chat_request, CHAT,
                                responses_to_chat.response_answer)
ANTHROPIC: dict[str, Translation] = {
    CHAT: Translation(openai_to_anthropic.messages_request, MESSAGES,
                      openai_to_anthropic.chat_answer, read_message_usage),
    MESSAGES: Translation(as_is, usage=read_message_usage),
    RESPONSES: Translation(_responses_on_anthropic, MESSAGES, _response_of_message,
                           read_message_usage),
}
# How an OpenAI upstream reports usage on the endpoints whose answers are not chat's.
OPENAI_USAGE: dict[str, UsageReader] = {RESPONSES: read_response_usage, MODERATIONS: no_usage}
SERVED = {e: Translation(as_is, usage=OPENAI_USAGE.get(e, read_usage)) for e in OPENAI_ENDPOINTS}
# What an OpenAI upstream that does not serve a row's endpoint may take it as.
OVER_CHAT: dict[str, Translation] = {
    MESSAGES: Translation(anthropic_to_openai.chat_request, CHAT,
                          anthropic_to_openai.message_answer),
    RESPONSES: RESPONSES_ON_CHAT,
}


def translation_for(endpoint: str, api: Api, *,
                    serves: Sequence[str] = DEFAULT_ENDPOINTS) -> Translation:
    """How a row of `endpoint` goes to a model of `api` that serves the OpenAI endpoints
    `serves` (its `[[models]] endpoints`; an Anthropic model's are not read)."""
    if api == "anthropic":
        return ANTHROPIC.get(endpoint) or Translation(_refusing(endpoint))
    if endpoint in serves:
        return SERVED[endpoint]
    if endpoint in OVER_CHAT and CHAT in serves:
        return OVER_CHAT[endpoint]
    if endpoint in OPENAI_ENDPOINTS or endpoint in OVER_CHAT:
        return Translation(_not_served(endpoint, serves))
    return AS_IS  # an endpoint Relay does not know: the upstream is the judge


def _refusing(endpoint: str) -> Request:
    def refuse(body: Mapping[str, Any], model: ModelConfig) -> dict[str, Any]:
        raise Untranslatable(UNSUPPORTED_ENDPOINT, f"Anthropic's Messages API has no "
                             f"{endpoint}; it takes {CHAT}, {RESPONSES} and {MESSAGES} rows")
    return refuse


def _not_served(endpoint: str, serves: Sequence[str]) -> Request:
    needs = f"{endpoint} or {CHAT}" if endpoint in OVER_CHAT else endpoint

    def refuse(body: Mapping[str, Any], model: ModelConfig) -> dict[str, Any]:
        raise Untranslatable(ENDPOINT_NOT_SERVED, f"its upstream serves {', '.join(serves)} "
                             f"(endpoints), not {needs}")
    return refuse


# Anthropic's rate-limit headers, as the `x-ratelimit-*` names `read_rate_headers` takes:
# requests, then tokens (the most restrictive of input and output, else input's own).
_RATES = (("requests", ("requests",)), ("tokens", ("tokens", "input-tokens")))


def rate_names(api: Api, names: Mapping[str, str], *, now: float) -> Mapping[str, str]:
    """An answer's lowercase headers, with Anthropic's `anthropic-ratelimit-*` also named
    as OpenAI's (a reset, an RFC 3339 instant, becomes the seconds until it)."""
    if api != "anthropic" or not any(k.startswith("anthropic-ratelimit-") for k in names):
        return names
    named = dict(names)
    for kind, sources in _RATES:
        source = next((s for s in sources if f"anthropic-ratelimit-{s}-limit" in names
                       or f"anthropic-ratelimit-{s}-remaining" in names), sources[0])
        for field in ("limit", "remaining"):
            value = names.get(f"anthropic-ratelimit-{source}-{field}")
            if value is not None:
                named.setdefault(f"x-ratelimit-{field}-{kind}", value)
        reset = _seconds_until(names.get(f"anthropic-ratelimit-{source}-reset"), now)
        if reset is not None:
            named.setdefault(f"x-ratelimit-reset-{kind}", f"{reset:.3f}")
    return named


def _seconds_until(instant: str | None, now: float) -> float | None:
    if instant is None:
        return None
    try:
        at = datetime.fromisoformat(instant.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if at.tzinfo is None:
        return None
    return max(0.0, at.timestamp() - now)
