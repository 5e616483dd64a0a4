"""The upstream protocols (`[[models]] api`), and how a row of each endpoint travels on each.

A row's request goes out in the model's protocol and its answer comes back in the
row's shape: `translation_for(endpoint, api)` picks, once per model of the chain,
one `Translation` of the table below. Per protocol too: how its answers report usage
(`usage_reader`) and how its headers announce rate limits (`rate_names`, which names
Anthropic's `anthropic-ratelimit-*` as the `x-ratelimit-*` the pace reads).

| row endpoint          | api = "openai"                 | api = "anthropic"            |
| --------------------- | ------------------------------ | ---------------------------- |
| /v1/chat/completions  | as is                          | `openai_to_anthropic`        |
| /v1/messages          | `anthropic_to_openai`          | as is                        |
| /v1/completions, ...  | as is                          | refused: unsupported_endpoint|
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from daemon.config import Api, ModelConfig
from daemon.domain.extensions import EXTENSIONS
from daemon.domain.outcome import Usage
from daemon.domain.usage import read_message_usage, read_usage
from daemon.upstream import anthropic_to_openai, openai_to_anthropic
from daemon.upstream.untranslatable import UNSUPPORTED_ENDPOINT, Untranslatable

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"

Request = Callable[[Mapping[str, Any], ModelConfig], dict[str, Any]]


class Answer(Protocol):
    """An upstream's answer in the row's shape; `usage` is the answer's, checked, and
    `sent` the request it answers. Raises `BadAnswer`."""

    def __call__(self, answer: Mapping[str, Any], /, *, usage: Usage, sent: Mapping[str, Any],
                 now: float) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Translation:
    """How a row of one endpoint goes to an upstream of one protocol and comes back."""

    request: Request  # the body as sent; raises `Untranslatable`
    path: str | None = None  # where it is posted; None: the row's own endpoint
    answer: Answer | None = None  # the answer in the row's shape; None: as received


def as_is(body: Mapping[str, Any], model: ModelConfig) -> dict[str, Any]:
    """The row's own body: the upstream's model name, without Relay's reserved key."""
    sent = {k: v for k, v in body.items() if k != EXTENSIONS}  # Relay's own; never sent upstream
    sent["model"] = model.model
    return sent


AS_IS = Translation(as_is)
TRANSLATIONS: dict[tuple[str, Api], Translation] = {
    (CHAT, "anthropic"): Translation(openai_to_anthropic.messages_request, MESSAGES,
                                     openai_to_anthropic.chat_answer),
    (MESSAGES, "openai"): Translation(anthropic_to_openai.chat_request, CHAT,
                                      anthropic_to_openai.message_answer),
    (MESSAGES, "anthropic"): AS_IS,
}


def translation_for(endpoint: str, api: Api) -> Translation:
    found = TRANSLATIONS.get((endpoint, api))
    if found is not None:
        return found
    return AS_IS if api == "openai" else Translation(_refusing(endpoint))


def _refusing(endpoint: str) -> Request:
    def refuse(body: Mapping[str, Any], model: ModelConfig) -> dict[str, Any]:
        raise Untranslatable(UNSUPPORTED_ENDPOINT, f"Anthropic's Messages API has no "
                             f"{endpoint}; it takes {CHAT} and {MESSAGES} rows")
    return refuse


def usage_reader(api: Api) -> Callable[[Mapping[str, Any]], Usage]:
    """The reader of the usage an upstream of `api` reports (`domain/usage.py`'s rules)."""
    return read_message_usage if api == "anthropic" else read_usage


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
