"""The Relay dialect's submit body (seed 000): what is accepted and how each refusal reads."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.api.middleware import status_of
from daemon.dialects.base import openai_error as error_envelope
from daemon.domain import cron
from daemon.domain.cron import check
from daemon.domain.errors import InvalidRequest
from daemon.domain.relay_input import MAX_ROWS, parse_submission

NOW = 1_791_105_164.0  # 2026-10-04 09:12:44 UTC
MODELS = frozenset({"gpt-4o-mini", "backup"})


def make_row(text: str = "Classify: great product!", **overrides: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], **overrides}


def make_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-4o-mini", "requests": [make_row()]}
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not ...}


def parse(body: Any, **kwargs: Any) -> Any:
    return parse_submission(body, models=MODELS, now=NOW, **kwargs)


def refused(body: Any, **kwargs: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as info:
        parse(body, **kwargs)
    assert status_of(info.value) == 400
    return info.value


SEED_BODY = {
    "name": "Review sentiment — October",
    "model": "gpt-4o-mini",
    "requests": [
        {"custom_id": "r-1",
         "messages": [{"role": "user", "content": "Classify: great product!"}]},
        {"custom_id": "r-2",
         "messages": [{"role": "user", "content": "Classify: terrible service"}]},
    ],
    "priority": 5,
    "webhookUrl": "https://my-app/relay-webhook",
    "cron": None,
}


def test_seed_example_body_is_accepted() -> None:
    seen: list[tuple[str, str]] = []
    sub = parse(SEED_BODY, check_cron=cron.check,
                check_url=lambda url, param: seen.append((url, param)))
    assert sub.name == "Review sentiment — October"
    assert sub.model == "gpt-4o-mini"
    assert sub.priority == 5
    assert sub.cron is None
    assert sub.webhook_url == "https://my-app/relay-webhook"
    assert [r.custom_id for r in sub.rows] == ["r-1", "r-2"]
    assert sub.rows[1].body == {
        "messages": [{"role": "user", "content": "Classify: terrible service"}]}
    assert all(r.model is None and r.error is None for r in sub.rows)
    assert seen == [("https://my-app/relay-webhook", "webhookUrl")]


def test_defaults() -> None:
    sub = parse({"model": "backup", "requests": [make_row("a"), make_row("b"), make_row("c")]})
    assert [r.custom_id for r in sub.rows] == ["row-1", "row-2", "row-3"]
    assert sub.name == "Batch 2026-10-04 09:12:44 UTC"
    assert sub.priority == 0
    assert sub.webhook_url is None
    assert sub.cron is None


def test_default_custom_id_counts_every_position() -> None:
    sub = parse(make_body(requests=[make_row(custom_id="x"), make_row()]))
    assert [r.custom_id for r in sub.rows] == ["x", "row-2"]


def test_content_parts_array_is_accepted() -> None:
    parts = [{"type": "text", "text": "hi"}]
    sub = parse(make_body(requests=[{"messages": [{"role": "user", "content": parts}]}]))
    assert sub.rows[0].body["messages"][0]["content"] == parts


@pytest.mark.parametrize("body", [[], "text", 3, None])
def test_body_not_an_object(body: Any) -> None:
    error = refused(body)
    assert error.param is None
    assert "object" in error.message


def test_unknown_top_level_field() -> None:
    assert refused(make_body(webhook_url="https://x")).param == "webhook_url"


@pytest.mark.parametrize("model", [..., "gpt-5", 5, None])
def test_model_missing_unknown_or_not_a_string(model: Any) -> None:
    error = refused(make_body(model=model))
    assert error.param == "model"


def test_unknown_model_has_code_model_not_found() -> None:
    error = refused(make_body(model="gpt-5"))
    assert error.code == "model_not_found"
    assert "backup" in error.message and "gpt-4o-mini" in error.message


@pytest.mark.parametrize("requests", [..., None, {"custom_id": "a"}, "rows", []])
def test_requests_missing_not_a_list_or_empty(requests: Any) -> None:
    assert refused(make_body(requests=requests)).param == "requests"


def test_requests_over_the_limit() -> None:
    error = refused(make_body(requests=[make_row()] * (MAX_ROWS + 1)))
    assert error.param == "requests"
    assert str(MAX_ROWS) in error.message


def test_a_raised_row_cap_lets_a_larger_batch_through() -> None:
    rows = [make_row()] * (MAX_ROWS + 1)
    assert len(parse(make_body(requests=rows), max_rows=MAX_ROWS + 1).rows) == MAX_ROWS + 1
    assert refused(make_body(requests=rows[:3]), max_rows=2).param == "requests"


def test_requests_at_the_limit_are_accepted() -> None:
    sub = parse(make_body(requests=[make_row()] * MAX_ROWS))
    assert len(sub.rows) == MAX_ROWS
    assert sub.rows[-1].custom_id == f"row-{MAX_ROWS}"


@pytest.mark.parametrize(("rows", "param"), [
    ([make_row(), "text"], "requests[1]"),
    ([make_row(), make_row(colour="red")], "requests[1].colour"),
    ([{"custom_id": "a"}], "requests[0].messages"),
    ([make_row() | {"messages": []}], "requests[0].messages"),
    ([make_row() | {"messages": "hi"}], "requests[0].messages"),
    ([{"messages": ["hi"]}], "requests[0].messages[0]"),
    ([{"messages": [{"role": "robot", "content": "hi"}]}], "requests[0].messages[0].role"),
    ([{"messages": [{"content": "hi"}]}], "requests[0].messages[0].role"),
    # A role that is no string (unhashable ones once raised TypeError, a 500).
    ([{"messages": [{"role": ["user"], "content": "hi"}]}], "requests[0].messages[0].role"),
    ([{"messages": [{"role": {"user": 1}, "content": "hi"}]}],
     "requests[0].messages[0].role"),
    ([make_row(), {"messages": [{"role": "user", "content": "a"}, 7]}],
     "requests[1].messages[1]"),
    ([{"messages": [{"role": "system", "content": "s"}, {"role": "user"}]}],
     "requests[0].messages[1].content"),
    ([{"messages": [{"role": "user", "content": 42}]}], "requests[0].messages[0].content"),
    ([{"messages": [{"role": "user", "content": None}]}], "requests[0].messages[0].content"),
    ([{"messages": [{"role": "user", "content": []}]}], "requests[0].messages[0].content"),
    ([make_row(custom_id="")], "requests[0].custom_id"),
    ([make_row(custom_id=7)], "requests[0].custom_id"),
    ([make_row(custom_id=None)], "requests[0].custom_id"),
    ([make_row(custom_id="a\x00b")], "requests[0].custom_id"),
    ([make_row(custom_id="a\ud800")], "requests[0].custom_id"),
])
def test_bad_row_names_the_field(rows: list[Any], param: str) -> None:
    assert refused(make_body(requests=rows)).param == param


def test_duplicate_explicit_custom_id() -> None:
    rows = [make_row(custom_id="a"), make_row(custom_id="b"), make_row(custom_id="a")]
    error = refused(make_body(requests=rows))
    assert error.param == "requests[2].custom_id"
    assert "requests[0]" in error.message


def test_explicit_custom_id_clashing_with_a_default() -> None:
    error = refused(make_body(requests=[make_row(custom_id="row-2"), make_row()]))
    assert error.param == "requests[1].custom_id"


@pytest.mark.parametrize("priority", [1.5, 2.0, "5", True, False, 10**7])
def test_priority_must_be_an_integer_in_range(priority: Any) -> None:
    assert refused(make_body(priority=priority)).param == "priority"


def test_negative_priority_is_allowed() -> None:
    assert parse(make_body(priority=-3)).priority == -3


@pytest.mark.parametrize("name", ["x" * 257, "", "   ", 12])
def test_bad_name(name: Any) -> None:
    assert refused(make_body(name=name)).param == "name"


def test_name_at_the_limit_is_accepted() -> None:
    assert parse(make_body(name="x" * 256)).name == "x" * 256


def test_cron_none_passes_without_a_checker() -> None:
    assert parse(make_body(cron=None)).cron is None


def test_cron_string_without_a_checker_is_refused() -> None:
    assert refused(make_body(cron="0 * * * *")).param == "cron"


def test_five_field_cron_is_accepted() -> None:
    sub = parse(make_body(cron="*/15 9-17 * * 1-5"), check_cron=cron.check)
    assert sub.cron == "*/15 9-17 * * 1-5"


@pytest.mark.parametrize("expr", [
    "0 0 * * * *", "0 0 * * * * 2030", "@daily", "0 0 31 2 *", "61 * * * *", "", "* * * *",
])
def test_bad_cron_is_refused(expr: str) -> None:
    assert refused(make_body(cron=expr), check_cron=cron.check).param == "cron"


@pytest.mark.parametrize("expr", [5, ["0", "*", "*", "*", "*"], {"m": 0}])
def test_non_string_cron_is_refused(expr: Any) -> None:
    assert refused(make_body(cron=expr), check_cron=cron.check).param == "cron"


@pytest.mark.parametrize("url", [5, "", ["https://x"]])
def test_webhook_url_must_be_a_string(url: Any) -> None:
    calls: list[Any] = []
    error = refused(make_body(webhookUrl=url), check_url=lambda *a: calls.append(a))
    assert error.param == "webhookUrl"
    assert calls == []


def test_webhook_url_refusal_from_the_checker_propagates() -> None:
    def deny(url: str, param: str) -> None:
        raise InvalidRequest("no", param=param, code="forbidden_target")

    error = refused(make_body(webhookUrl="https://127.0.0.1/"), check_url=deny)
    assert (error.param, error.code) == ("webhookUrl", "forbidden_target")


def test_error_envelope_shape() -> None:
    error = refused(make_body(model="gpt-5"))
    assert error_envelope(error) == {"error": {"message": error.message,
                                          "type": "invalid_request_error",
                                          "param": "model", "code": "model_not_found"}}


@pytest.mark.parametrize(("body", "param"), [
    (make_body(name="night\x00ly"), "name"),
    (make_body(requests=[{"custom_id": "r\x00-1", "messages": [
        {"role": "user", "content": "x"}]}]), "requests[0].custom_id"),
])
def test_a_nul_in_a_name_or_custom_id_is_refused(body: dict[str, Any], param: str) -> None:
    assert refused(body).param == param


def test_a_null_priority_is_the_default_like_a_null_cron() -> None:
    sub = parse(make_body(priority=None, cron=None, webhookUrl=None))
    assert (sub.priority, sub.cron, sub.webhook_url) == (0, None, None)


def test_cron_fields_are_stored_with_single_spaces() -> None:
    sub = parse(make_body(cron="*/5\t*  *\n* *"), check_cron=check)
    assert sub.cron == "*/5 * * * *"
