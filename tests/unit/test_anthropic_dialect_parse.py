"""The Message Batches API's create body: checked whole, every refusal naming its field;
a request that cannot run in a batch fails alone."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.dialects.anthropic.errors import row_error
from daemon.dialects.anthropic.parse import (
    EXTENSION_UNSUPPORTED,
    MESSAGES,
    MODEL_NOT_FOUND,
    STREAM_UNSUPPORTED,
    job_draft,
    parse_create,
)
from daemon.dialects.anthropic.shapes import MAX_REQUESTS
from daemon.domain.errors import InvalidRequest
from daemon.domain.jobs import RowRecord

MODEL = "claude-sonnet-4-5"


def params(**overrides: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 256,
            "messages": [{"role": "user", "content": "Hello"}]} | overrides


def request(custom_id: str = "req-1", **overrides: Any) -> dict[str, Any]:
    return {"custom_id": custom_id, "params": params(**overrides)}


def body(*requests: dict[str, Any]) -> dict[str, Any]:
    return {"requests": list(requests) or [request()]}


def refusal(payload: Any, **kwargs: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        parse_create(payload, **kwargs)
    return caught.value


def test_rows_are_the_requests_in_order() -> None:
    submission = parse_create(body(request("a"), request("b", model="claude-haiku-4-5")))
    assert [r.custom_id for r in submission.rows] == ["a", "b"]
    assert [r.model for r in submission.rows] == [MODEL, "claude-haiku-4-5"]
    assert submission.rows[0].body == params()
    assert all(r.error is None for r in submission.rows)
    assert submission.model == MODEL  # the first request's: what listings show


def test_the_rows_endpoint_is_the_messages_api() -> None:
    assert MESSAGES == "/v1/messages"


def test_params_pass_through_whole() -> None:
    extra = params(system="Be brief.", temperature=0.2, top_k=5, metadata={"user_id": "u"})
    submission = parse_create({"requests": [{"custom_id": "x", "params": extra}]})
    assert submission.rows[0].body == extra  # the translation refuses what it cannot map


@pytest.mark.parametrize(("payload", "param"), [
    ({}, "requests"),
    ({"requests": None}, "requests"),
    ({"requests": {"custom_id": "a"}}, "requests"),
    ({"requests": []}, "requests"),
    ({"requests": [request()], "model": MODEL}, "model"),
    ({"requests": [request(), "x"]}, "requests[1]"),
    ({"requests": [request(), {**request("b"), "method": "POST"}]}, "requests[1].method"),
    ({"requests": [{"params": params()}]}, "requests[0].custom_id"),
    ({"requests": [request(""), request()]}, "requests[0].custom_id"),
    ({"requests": [request("a" * 65)]}, "requests[0].custom_id"),
    ({"requests": [request("has space")]}, "requests[0].custom_id"),
    ({"requests": [request("dot.ted")]}, "requests[0].custom_id"),
    ({"requests": [request("é")]}, "requests[0].custom_id"),
    ({"requests": [{"custom_id": 7, "params": params()}]}, "requests[0].custom_id"),
    ({"requests": [request("a"), request("b"), request("a")]}, "requests[2].custom_id"),
    ({"requests": [request(), {"custom_id": "b"}]}, "requests[1].params"),
    ({"requests": [{"custom_id": "a", "params": [1]}]}, "requests[0].params"),
    ({"requests": [request(model=None)]}, "requests[0].params.model"),
    ({"requests": [request(model="")]}, "requests[0].params.model"),
    ({"requests": [request(model=3)]}, "requests[0].params.model"),
    ({"requests": [request(max_tokens=None)]}, "requests[0].params.max_tokens"),
    ({"requests": [request(max_tokens=0)]}, "requests[0].params.max_tokens"),
    ({"requests": [request(max_tokens=-5)]}, "requests[0].params.max_tokens"),
    ({"requests": [request(max_tokens=1.5)]}, "requests[0].params.max_tokens"),
    ({"requests": [request(max_tokens=True)]}, "requests[0].params.max_tokens"),
    ({"requests": [request(max_tokens="9")]}, "requests[0].params.max_tokens"),
    ({"requests": [request(messages=[])]}, "requests[0].params.messages"),
    ({"requests": [request(messages="Hello")]}, "requests[0].params.messages"),
    ({"requests": [request(messages=None)]}, "requests[0].params.messages"),
    ({"requests": [request(stream="yes")]}, "requests[0].params.stream"),
])
def test_each_refusal_names_its_field(payload: Any, param: str) -> None:
    error = refusal(payload)
    assert error.param == param
    assert error.type == "invalid_request_error"
    assert param.split(".")[-1].split("[")[0] in error.message


def test_a_body_that_is_not_an_object_is_refused() -> None:
    assert refusal([request()]).param is None


def test_a_duplicate_names_where_it_was_first_used() -> None:
    error = refusal(body(request("a"), request("b"), request("a")))
    assert "requests[0]" in error.message


def test_custom_ids_of_every_allowed_character_pass() -> None:
    ids = ["a", "A-z_09", "x" * 64, "-", "_"]
    assert [r.custom_id for r in parse_create(body(*map(request, ids))).rows] == ids


def test_the_row_cap_is_the_dialects_own() -> None:
    assert MAX_REQUESTS == 100_000
    at_cap = {"requests": [request(f"r{i}") for i in range(3)]}
    assert len(parse_create(at_cap, max_requests=3).rows) == 3
    error = refusal({"requests": [request(f"r{i}") for i in range(4)]}, max_requests=3)
    assert error.param == "requests"
    assert "at most 3" in error.message


def test_the_default_cap_takes_a_full_batch() -> None:
    shared = params()
    full = {"requests": [{"custom_id": f"r{i}", "params": shared}
                         for i in range(MAX_REQUESTS + 1)]}
    assert refusal(full).param == "requests"
    full["requests"].pop()
    assert len(parse_create(full).rows) == MAX_REQUESTS


def test_stream_true_fails_that_request_alone() -> None:
    submission = parse_create(body(request("a"), request("b", stream=True), request("c")))
    failed = submission.rows[1]
    assert failed.custom_id == "b"
    assert failed.error_code == STREAM_UNSUPPORTED
    assert failed.error is not None and "stream" in failed.error
    assert failed.error_path == "stream"
    assert failed.body["stream"] is True  # stored as submitted
    assert [r.error for r in (submission.rows[0], submission.rows[2])] == [None, None]


def test_relays_record_extensions_fail_that_request_alone() -> None:
    """Tool-calling and workflow records are the OpenRelay batch API's: in a Message
    Batch, an `openrelay` key fails its request with a reason, the others run."""
    tools = {"tool_config": {"url": "https://tools.example/run"}}
    submission = parse_create(body(request("a"), request("b", openrelay=tools)))
    ok, failed = submission.rows
    assert ok.error is None
    assert failed.error_code == EXTENSION_UNSUPPORTED and failed.error_path == "openrelay"
    assert failed.error is not None and "tool_use" in failed.error
    stored = RowRecord(id=1, position=1, custom_id="b", status="failed", body=failed.body,
                       error=failed.error, error_code=failed.error_code)
    assert row_error(stored)["error"]["type"] == "invalid_request_error"


def test_stream_false_is_a_plain_request() -> None:
    assert parse_create(body(request(stream=False))).rows[0].error is None


def test_a_model_this_server_does_not_serve_fails_that_request_alone() -> None:
    submission = parse_create(body(request("a"), request("b", model="claude-opus-9")),
                              models={MODEL})
    ok, failed = submission.rows
    assert ok.error is None and ok.model == MODEL
    assert failed.error_code == MODEL_NOT_FOUND
    assert failed.error is not None and "claude-opus-9" in failed.error
    assert failed.model is None


def test_without_a_model_list_any_model_is_taken() -> None:
    assert parse_create(body(request(model="anything"))).rows[0].error is None


def test_the_job_is_queued_on_the_messages_endpoint_with_its_window() -> None:
    submission = parse_create(body(request("a"), request("b")))
    draft = job_draft(submission, job_id="msgbatch_x", workspace_id=7, dialect="anthropic",
                      now=1_000.5, completion_window_s=86_400)
    assert (draft.id, draft.workspace_id, draft.dialect) == ("msgbatch_x", 7, "anthropic")
    assert (draft.status, draft.endpoint, draft.model) == ("queued", MESSAGES, MODEL)
    assert (draft.created_at, draft.expires_at) == (1_000.5, 87_400.5)
    assert draft.name == "message batch of 2 requests"
    assert draft.webhook_url is None and draft.cron is None
