"""The protocol table: which translation a row of each endpoint takes on each upstream
protocol, and Anthropic's rate-limit headers named as the pace reads them."""

from __future__ import annotations

import pytest

from daemon.config import Api, ModelConfig
from daemon.domain.usage import no_usage, read_message_usage, read_response_usage, read_usage
from daemon.upstream import anthropic_to_openai, openai_to_anthropic
from daemon.upstream.protocols import (
    AS_IS,
    CHAT,
    MESSAGES,
    rate_names,
    translation_for,
)
from daemon.upstream.untranslatable import UNSUPPORTED_ENDPOINT, Untranslatable

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z


@pytest.mark.parametrize(("endpoint", "api", "path", "sends", "answer"), [
    (CHAT, "openai", None, AS_IS.request, None),
    ("/v1/embeddings", "openai", None, AS_IS.request, None),
    (MESSAGES, "anthropic", None, AS_IS.request, None),
    (CHAT, "anthropic", MESSAGES, openai_to_anthropic.messages_request,
     openai_to_anthropic.chat_answer),
    (MESSAGES, "openai", CHAT, anthropic_to_openai.chat_request,
     anthropic_to_openai.message_answer),
])
def test_each_pair_takes_its_translation(endpoint: str, api: Api, path: str | None,
                                         sends: object, answer: object) -> None:
    translation = translation_for(endpoint, api)
    assert (translation.path, translation.request, translation.answer) == (path, sends, answer)


@pytest.mark.parametrize("endpoint", ["/v1/completions", "/v1/embeddings"])
def test_other_endpoints_are_refused_on_anthropic(endpoint: str) -> None:
    model = ModelConfig(alias="c", base_url="http://x", model="c", api="anthropic")
    with pytest.raises(Untranslatable) as info:
        translation_for(endpoint, "anthropic").request({"input": "x"}, model)
    assert info.value.code == UNSUPPORTED_ENDPOINT and endpoint in info.value.message


def test_the_as_is_body_drops_relays_key_and_names_the_upstream_model() -> None:
    model = ModelConfig(alias="a", base_url="http://x", model="up")
    assert AS_IS.request({"model": "a", "top_k": 3, "openrelay": {}}, model) == {
        "model": "up", "top_k": 3}


@pytest.mark.parametrize(("endpoint", "api", "reader"), [
    (CHAT, "openai", read_usage), ("/v1/embeddings", "openai", read_usage),
    (MESSAGES, "openai", read_usage), ("/v1/responses", "openai", read_response_usage),
    ("/v1/moderations", "openai", no_usage), (CHAT, "anthropic", read_message_usage),
    (MESSAGES, "anthropic", read_message_usage), ("/v1/responses", "anthropic",
                                                  read_message_usage)])
def test_usage_is_read_in_the_upstreams_protocol(endpoint: str, api: Api,
                                                 reader: object) -> None:
    serves = ("/v1/chat/completions", "/v1/embeddings", "/v1/responses", "/v1/moderations")
    assert translation_for(endpoint, api, serves=serves).usage is reader


def test_anthropic_rate_headers_are_named_as_openais() -> None:
    names = {"anthropic-ratelimit-requests-limit": "50",
             "anthropic-ratelimit-requests-remaining": "0",
             "anthropic-ratelimit-requests-reset": "2023-11-14T22:13:26Z",
             "anthropic-ratelimit-tokens-limit": "80000",
             "anthropic-ratelimit-tokens-remaining": "100",
             "anthropic-ratelimit-tokens-reset": "2023-11-14T22:13:19Z",  # passed: now
             "retry-after": "4"}
    assert rate_names("anthropic", names, now=NOW) == names | {
        "x-ratelimit-limit-requests": "50", "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6.000", "x-ratelimit-limit-tokens": "80000",
        "x-ratelimit-remaining-tokens": "100", "x-ratelimit-reset-tokens": "0.000"}


def test_input_token_limits_stand_in_when_no_combined_one_is_sent() -> None:
    names = {"anthropic-ratelimit-input-tokens-limit": "40000",
             "anthropic-ratelimit-input-tokens-reset": "not a time"}
    assert rate_names("anthropic", names, now=NOW) == names | {
        "x-ratelimit-limit-tokens": "40000"}


def test_openai_headers_are_read_as_they_are() -> None:
    names = {"anthropic-ratelimit-requests-limit": "50"}
    assert rate_names("openai", names, now=NOW) is names
