"""`openrelay.tool_config`: every field rule and clamp, the record-level refusal
(`invalid_tool_config`) in both dialects, URL policy, and redaction of the secret."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.dialects.base import openai_error as error_envelope
from daemon.domain.errors import InvalidRequest
from daemon.domain.openai_input import parse_records
from daemon.domain.relay_input import parse_submission
from daemon.domain.tool_config import (
    REDACTED,
    ToolConfig,
    ToolConfigError,
    parse_tool_config,
    redacted,
)
from daemon.outbound.policy import TargetCheck

URL = "https://tools.example.com/run"
CHAT = "/v1/chat/completions"


def config(**fields: Any) -> dict[str, Any]:
    return {"url": URL, **fields}


def test_defaults() -> None:
    assert parse_tool_config({"url": URL}) == ToolConfig(
        url=URL, type="http", authorization=None, context=None, max_rounds=8,
        timeout_ms=30_000)


def test_every_field() -> None:
    parsed = parse_tool_config(config(type="mcp", authorization="Bearer s3cret",
                                      context={"tenant": 7}, max_rounds=3, timeout_ms=500))
    assert (parsed.type, parsed.authorization, parsed.context) == (
        "mcp", "Bearer s3cret", {"tenant": 7})
    assert (parsed.max_rounds, parsed.timeout_ms) == (3, 500)


@pytest.mark.parametrize(("sent", "rounds"), [(None, 8), (0, 8), (1, 1), (16, 16), (17, 16),
                                              (10_000, 16)])
def test_max_rounds_default_and_clamp(sent: int | None, rounds: int) -> None:
    assert parse_tool_config(config(max_rounds=sent)).max_rounds == rounds


@pytest.mark.parametrize(("sent", "timeout"), [(None, 30_000), (0, 30_000), (1, 1),
                                               (120_000, 120_000), (120_001, 120_000)])
def test_timeout_default_and_clamp(sent: int | None, timeout: int) -> None:
    assert parse_tool_config(config(timeout_ms=sent)).timeout_ms == timeout


@pytest.mark.parametrize(("value", "field"), [
    ("https://x", ""), (["url"], ""), ({}, "url"), (config(url=None), "url"),
    (config(url=5), "url"), (config(url="tools.example.com/run"), "url"),
    (config(url="ftp://tools.example.com"), "url"), (config(type="grpc"), "type"),
    (config(type="HTTP"), "type"), (config(authorization=123), "authorization"),
    (config(context="text"), "context"), (config(context=[1]), "context"),
    (config(max_rounds=-1), "max_rounds"), (config(max_rounds=True), "max_rounds"),
    (config(max_rounds=2.5), "max_rounds"), (config(max_rounds="3"), "max_rounds"),
    (config(timeout_ms=-5), "timeout_ms"), (config(timeout_ms=False), "timeout_ms"),
    (config(authorization="Bearer s3cret\n"), "authorization"),
    (config(authorization="Bearer a\r\nX-Evil: 1"), "authorization"),
    (config(retries=3), "retries"),
])
def test_malformed_values_name_the_field(value: Any, field: str) -> None:
    with pytest.raises(ToolConfigError) as refused:
        parse_tool_config(value)
    assert refused.value.field == field
    assert refused.value.path == ".".join(p for p in ("openrelay", "tool_config", field) if p)


def test_the_secret_never_shows_in_a_repr() -> None:
    assert "s3cret" not in repr(parse_tool_config(config(authorization="Bearer s3cret")))


def test_redacted_hides_only_the_secret_and_copies() -> None:
    body: dict[str, Any] = {"model": "m", "messages": [], "openrelay": {"tool_config": config(
        authorization="Bearer s3cret", context={"k": "v"})}}
    shown = redacted(body)
    assert shown["openrelay"]["tool_config"] == config(authorization=REDACTED,
                                                       context={"k": "v"})
    assert body["openrelay"]["tool_config"]["authorization"] == "Bearer s3cret"
    plain = {"model": "m"}
    assert redacted(plain) is plain


# -- the OpenAI dialect: the record fails, the rest of the batch runs -------------


def record(custom_id: str, tool_config: Any, *, url: str = CHAT) -> dict[str, Any]:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "openrelay": {"tool_config": tool_config}}
    return {"custom_id": custom_id, "method": "POST", "url": url, "body": body}


def parse(records: list[dict[str, Any]], *, endpoint: str = CHAT, **kwargs: Any) -> Any:
    return parse_records(enumerate(records, 1), endpoint=endpoint, models={"m"}, **kwargs)


def test_a_malformed_tool_config_fails_that_record_only() -> None:
    parsed = parse([record("good", config()), record("bad", config(max_rounds=-2)),
                    record("also-good", config(type="mcp"))])
    assert parsed.errors == []
    by_id = {r.custom_id: r for r in parsed.rows}
    assert [by_id["good"].error, by_id["also-good"].error] == [None, None]
    assert by_id["bad"].error_code == "invalid_tool_config"
    assert by_id["bad"].error.startswith("openrelay.tool_config.max_rounds: ")


def test_tool_config_is_for_chat_records_only() -> None:
    parsed = parse([record("e", config(), url="/v1/embeddings")], endpoint="/v1/embeddings")
    assert parsed.rows[0].error_code == "invalid_tool_config"
    assert "only for /v1/chat/completions" in str(parsed.rows[0].error)


def resolver(answers: dict[str, list[str]]) -> Any:
    return lambda host: answers[host]


@pytest.mark.parametrize(("url", "addresses", "reason"), [
    ("http://tools.example.com/run", ["93.184.216.34"], "must use https"),
    ("https://tools.internal/run", ["10.0.0.7"], "non-public address"),
    ("https://127.0.0.1/run", [], "non-public address"),
    ("https://[::1]/run", [], "non-public address"),
])
def test_the_url_policy_refuses_private_and_plain_http_targets(url: str, addresses: list[str],
                                                               reason: str) -> None:
    check = TargetCheck(allow_private=False, resolve=resolver(
        {"tools.example.com": addresses, "tools.internal": addresses}))
    parsed = parse([record("r", config(url=url))], check_url=check)
    assert parsed.rows[0].error_code == "invalid_tool_config"
    assert parsed.rows[0].error_path == "openrelay.tool_config.url"
    assert reason in str(parsed.rows[0].error)


def test_allow_private_targets_lifts_the_policy() -> None:
    check = TargetCheck(allow_private=True)
    parsed = parse([record("r", config(url="http://127.0.0.1:9/run"))], check_url=check)
    assert parsed.rows[0].error is None


def test_a_host_is_resolved_once_per_batch() -> None:
    lookups: list[str] = []

    def resolve(host: str) -> list[str]:
        lookups.append(host)
        return ["93.184.216.34"]

    check = TargetCheck(allow_private=False, resolve=resolve)
    parsed = parse([record(f"r{i}", config()) for i in range(50)], check_url=check)
    assert all(r.error is None for r in parsed.rows)
    assert lookups == ["tools.example.com"]


# -- the Relay dialect: a 400 naming the field -----------------------------------


def test_the_relay_dialect_refuses_at_submit_naming_the_field() -> None:
    body = {"model": "m", "requests": [
        record("ok", config()), record("bad", config(timeout_ms="soon"))]}
    with pytest.raises(InvalidRequest) as refused:
        parse_submission(body, models={"m"}, now=0.0, check_url=TargetCheck(allow_private=True))
    error = error_envelope(refused.value)["error"]
    assert (error["param"], error["code"]) == (
        "requests[1].body.openrelay.tool_config.timeout_ms", "invalid_tool_config")


def test_the_relay_dialect_refuses_a_private_executor() -> None:
    body = {"model": "m", "requests": [record("r", config(url="https://10.1.2.3/run"))]}
    with pytest.raises(InvalidRequest) as refused:
        parse_submission(body, models={"m"}, now=0.0,
                         check_url=TargetCheck(allow_private=False))
    assert refused.value.param == "requests[0].body.openrelay.tool_config.url"
