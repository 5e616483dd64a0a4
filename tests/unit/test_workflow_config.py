"""`openrelay.workflow`: every field rule (`invalid_workflow` naming the field), the
workspace's switch, the Relay dialect's refusal, and the callback's answers."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.domain.errors import InvalidRequest
from daemon.domain.openai_input import parse_records
from daemon.domain.relay_input import parse_submission
from daemon.domain.workflow_config import (
    InvalidAnswer,
    WorkflowConfig,
    WorkflowConfigError,
    parse_answer,
    parse_workflow,
)
from daemon.outbound.policy import TargetCheck

URL = "https://flows.example.com/cb"
AUTH = "Bearer s3cret"
CHAT = "/v1/chat/completions"
MODELS = frozenset({"m"})


def config(**fields: Any) -> dict[str, Any]:
    return {"url": URL, "authorization": AUTH, **fields}


def test_defaults() -> None:
    assert parse_workflow(config()) == WorkflowConfig(
        url=URL, authorization=AUTH, context=None, callback_timeout_ms=120_000,
        max_steps=128, max_requests=512, max_tokens=10_000_000)


def test_every_field() -> None:
    parsed = parse_workflow(config(context={"a": 1}, callback_timeout_ms=1000, max_steps=1,
                                   max_requests=4096, max_tokens=100_000_000))
    assert (parsed.context, parsed.callback_timeout_ms, parsed.max_steps) == ({"a": 1}, 1000, 1)
    assert (parsed.max_requests, parsed.max_tokens) == (4096, 100_000_000)


@pytest.mark.parametrize(("sent", "applied"), [
    ({"timeout_ms": 1000}, 1000), ({"timeout_ms": 1_800_000}, 600_000),
    ({"timeout_ms": 700_000}, 600_000),
    ({"timeout_ms": 5000, "callback_timeout_ms": 5000}, 5000),
])
def test_the_deprecated_timeout_alias(sent: dict[str, int], applied: int) -> None:
    assert parse_workflow(config(**sent)).callback_timeout_ms == applied


@pytest.mark.parametrize(("value", "field"), [
    ("https://x", ""), (config(url=None), "url"), (config(url="flows.example.com"), "url"),
    ({"url": URL}, "authorization"), (config(authorization=""), "authorization"),
    (config(authorization=7), "authorization"), (config(context="x"), "context"),
    (config(authorization="Bearer s3cret\n"), "authorization"),
    (config(callback_timeout_ms=999), "callback_timeout_ms"),
    (config(callback_timeout_ms=600_001), "callback_timeout_ms"),
    (config(callback_timeout_ms="5s"), "callback_timeout_ms"),
    (config(timeout_ms=999), "timeout_ms"), (config(timeout_ms=1_800_001), "timeout_ms"),
    (config(timeout_ms=5000, callback_timeout_ms=6000), "timeout_ms"),
    (config(max_steps=0), "max_steps"), (config(max_steps=129), "max_steps"),
    (config(max_steps=True), "max_steps"),
    (config(max_requests=0), "max_requests"), (config(max_requests=4097), "max_requests"),
    (config(max_tokens=0), "max_tokens"), (config(max_tokens=100_000_001), "max_tokens"),
    (config(retries=2), "retries"),
])
def test_malformed_values_name_the_field(value: Any, field: str) -> None:
    with pytest.raises(WorkflowConfigError) as refused:
        parse_workflow(value)
    assert refused.value.field == field


def test_the_secret_never_shows_in_a_repr() -> None:
    assert "s3cret" not in repr(parse_workflow(config()))


# -- records ------------------------------------------------------------------------


def record(custom_id: str, workflow: Any, **extensions: Any) -> dict[str, Any]:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}],
            "openrelay": {"workflow": workflow, **extensions}}
    return {"custom_id": custom_id, "method": "POST", "url": CHAT, "body": body}


def parse(records: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    parsed = parse_records(enumerate(records, 1), endpoint=CHAT, models=MODELS, **kwargs)
    assert parsed.errors == []
    return {r.custom_id: r for r in parsed.rows}


def test_workflow_records_are_off_unless_the_workspace_enables_them() -> None:
    rows = parse([record("w", config()), {"custom_id": "plain", "method": "POST", "url": CHAT,
                                          "body": {"model": "m", "messages": []}}])
    assert (rows["w"].error_code, rows["plain"].error) == ("workflow_not_enabled", None)
    assert parse([record("w", config())], workflows=True)["w"].error is None


def test_a_malformed_workflow_fails_that_record_naming_the_field() -> None:
    rows = parse([record("bad", config(max_steps=500)), record("ok", config())],
                 workflows=True)
    assert rows["bad"].error_code == "invalid_workflow"
    assert rows["bad"].error.startswith("openrelay.workflow.max_steps: ")
    assert rows["ok"].error is None


def test_a_record_carries_one_extension() -> None:
    rows = parse([record("both", config(), tool_config={"url": URL})], workflows=True)
    assert rows["both"].error_code == "invalid_workflow"


@pytest.mark.parametrize(("url", "reason"), [
    ("http://flows.example.com/cb", "must use https"),
    ("https://10.0.0.8/cb", "non-public address")])
def test_the_url_policy(url: str, reason: str) -> None:
    check = TargetCheck(allow_private=False, resolve=lambda host: ["93.184.216.34"])
    rows = parse([record("w", config(url=url))], workflows=True, check_url=check)
    assert rows["w"].error_code == "invalid_workflow" and reason in str(rows["w"].error)


def test_the_relay_dialect_refuses_workflow_records_naming_the_field() -> None:
    body = {"model": "m", "requests": [record("w", config())]}
    with pytest.raises(InvalidRequest) as refused:
        parse_submission(body, models=MODELS, now=0.0)
    assert (refused.value.param, refused.value.code) == (
        "requests[0].body.openrelay.workflow", "invalid_workflow")


# -- answers -----------------------------------------------------------------------


def request(**body: Any) -> dict[str, Any]:
    return {"url": CHAT, "body": {"model": "m", "messages": [], **body}}


def answer(value: Any) -> Any:
    return parse_answer(value, endpoint=CHAT, models=MODELS)


def test_the_four_answers() -> None:
    go = answer({"action": "continue", "requests": [request(), request(temperature=0)]})
    assert (go.action, len(go.requests)) == ("continue", 2)
    assert answer({"action": "wait", "delay_ms": 1000}).delay_ms == 1000
    assert answer({"action": "completed", "output": None}).output is None
    assert answer({"action": "failed", "error": {"code": "c", "message": "m"}}).error == {
        "code": "c", "message": "m"}


@pytest.mark.parametrize(("value", "says"), [
    ([], "JSON object"), ({"action": "dance"}, "'action' must be"),
    ({"action": "continue", "requests": []}, "1 to 256"),
    ({"action": "continue", "requests": [request()] * 257}, "1 to 256"),
    ({"action": "continue", "requests": [{"url": CHAT}]}, "object body"),
    ({"action": "continue", "requests": [{"url": "/v1/embeddings", "body": {"model": "m"}}]},
     "endpoint"),
    ({"action": "continue", "requests": [request(model="gpt-9")]}, "not configured"),
    ({"action": "continue", "requests": [request(stream=True)]}, "streaming"),
    ({"action": "continue", "requests": [request(openrelay={})]}, "openrelay"),
    ({"action": "wait", "delay_ms": 999}, "delay_ms"),
    ({"action": "wait", "delay_ms": 3_600_001}, "delay_ms"),
    ({"action": "wait"}, "delay_ms"), ({"action": "completed"}, "output"),
    ({"action": "failed", "error": "boom"}, "error"),
])
def test_malformed_answers_say_what_is_wrong(value: Any, says: str) -> None:
    with pytest.raises(InvalidAnswer, match=says):
        answer(value)
