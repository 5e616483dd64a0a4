"""`[[models]] api` (the upstream's protocol) and `default_max_tokens`."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.config import DEFAULT_MAX_TOKENS, ConfigError, parse


def models(**overrides: Any) -> dict[str, Any]:
    return {"models": [{"alias": "m", "base_url": "https://api.anthropic.com", **overrides}]}


def test_a_model_speaks_openai_with_4096_default_max_tokens_unless_told() -> None:
    [model] = parse(models(), environ={}).models
    assert (model.api, model.default_max_tokens) == ("openai", DEFAULT_MAX_TOKENS) == (
        "openai", 4096)


def test_an_anthropic_model() -> None:
    [model] = parse(models(api="anthropic", default_max_tokens=1024), environ={}).models
    assert (model.api, model.default_max_tokens) == ("anthropic", 1024)


@pytest.mark.parametrize(("overrides", "message"), [
    ({"api": "claude"}, "models[0].api: must be one of openai, anthropic (the upstream's "
                        "protocol), got 'claude'"),
    ({"api": 1}, "models[0].api: must be str, got 1"),
    ({"default_max_tokens": 0}, "models[0].default_max_tokens: must be 1–1,000,000,000, got 0"),
    ({"default_max_tokens": 10**10}, "models[0].default_max_tokens: must be 1–1,000,000,000"),
    ({"default_max_tokens": "4096"}, "models[0].default_max_tokens: must be int"),
    ({"default_max_tokens": True}, "models[0].default_max_tokens: must be int"),
])
def test_bad_values_are_refused_naming_the_key(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(models(**overrides), environ={})
    assert str(info.value).startswith(message)
