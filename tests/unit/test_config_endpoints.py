"""`[[models]] endpoints`: the OpenAI endpoints a model's upstream serves."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.config import DEFAULT_ENDPOINTS, ConfigError, parse


def models(**overrides: Any) -> dict[str, Any]:
    return {"models": [{"alias": "m", "base_url": "https://vllm.internal", **overrides}]}


def test_a_model_serves_chat_completions_and_embeddings_unless_told() -> None:
    [model] = parse(models(), environ={}).models
    assert model.endpoints == DEFAULT_ENDPOINTS == (
        "/v1/chat/completions", "/v1/completions", "/v1/embeddings")


def test_a_model_lists_what_it_serves() -> None:
    [model] = parse(models(endpoints=["/v1/responses", "/v1/moderations"]), environ={}).models
    assert model.endpoints == ("/v1/responses", "/v1/moderations")


@pytest.mark.parametrize(("overrides", "message"), [
    ({"endpoints": []}, "models[0].endpoints: must be a non-empty array of endpoints "
                        "(/v1/chat/completions, /v1/completions, /v1/embeddings, /v1/responses, "
                        "/v1/moderations), got []"),
    ({"endpoints": "/v1/responses"}, "models[0].endpoints: must be a non-empty array"),
    ({"endpoints": [1]}, "models[0].endpoints: must be a non-empty array"),
    ({"endpoints": ["/v1/images/generations"]},
     "models[0].endpoints: '/v1/images/generations' is not one of /v1/chat/completions, "),
    ({"endpoints": ["/v1/responses", "/v1/responses"]},
     "models[0].endpoints: '/v1/responses' is listed twice"),
    ({"api": "anthropic", "endpoints": ["/v1/chat/completions"]},
     'models[0].endpoints: only for api = "openai" models'),
])
def test_bad_values_are_refused_naming_the_key(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(models(**overrides), environ={})
    assert str(info.value).startswith(message)
