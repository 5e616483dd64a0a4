"""The Message Batches API's renderers: every internal status, live counts, RFC 3339
times, `results_url`, each kind of result line; every shape checked three ways: it
encodes, it validates against the schema generated from its Struct, and the official
SDK's types accept it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from anthropic.types import ErrorResponse as SdkErrorResponse
from anthropic.types.messages import (
    DeletedMessageBatch as SdkDeleted,
)
from anthropic.types.messages import (
    MessageBatch as SdkMessageBatch,
)
from anthropic.types.messages import (
    MessageBatchIndividualResponse as SdkLine,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from daemon.dialects.anthropic import render, shapes
from daemon.dialects.anthropic.ids import batch_id, is_batch_id
from daemon.domain import codec
from daemon.domain.jobs import (
    CANCELLED,
    EXPIRED,
    FAILED,
    STATUSES,
    TERMINAL,
    Job,
    RowRecord,
)
from daemon.domain.shapes import Components

CREATED = 1_791_105_164.25  # 2026-10-04T09:12:44.25Z
WINDOW = 86_400
BASE = "http://127.0.0.1:8080"
BATCH_ID = "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF"
MESSAGE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
    "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "Hello!"}],
    "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 6},
}
EXPECTED_STATUS = {
    "scheduled": "in_progress", "validating": "in_progress", "queued": "in_progress",
    "running": "in_progress", "finalizing": "in_progress", "cancelling": "canceling",
    "completed": "ended", "failed": "ended", "expired": "ended", "cancelled": "ended",
}


def make_job(**overrides: Any) -> Job:
    fields: dict[str, Any] = {
        "id": BATCH_ID, "seq": 4, "workspace_id": 1, "dialect": "anthropic",
        "name": "batch", "model": "claude-sonnet-4-5", "endpoint": "/v1/messages",
        "status": "running", "priority": 0, "created_at": CREATED,
        "expires_at": CREATED + WINDOW, "total": 5, "completed": 2, "failed": 1,
        "stamps": {"queued": CREATED, "running": CREATED + 1},
    }
    return Job(**(fields | overrides))


def ended(status: str, **overrides: Any) -> Job:
    fields: dict[str, Any] = {
        "status": status, "finished_at": CREATED + 60.5,
        "stamps": {"queued": CREATED, "running": CREATED + 1, status: CREATED + 60.5}}
    return make_job(**(fields | overrides))


def make_row(**overrides: Any) -> RowRecord:
    fields: dict[str, Any] = {
        "id": 1, "position": 0, "custom_id": "req-1", "status": "completed",
        "body": {"model": "claude-sonnet-4-5", "max_tokens": 64,
                 "messages": [{"role": "user", "content": "Hi"}]},
        "attempts": 1, "response": MESSAGE, "status_code": 200,
    }
    return RowRecord(**(fields | overrides))


def failed_row(**overrides: Any) -> RowRecord:
    return make_row(**({"status": "failed", "response": None, "status_code": None,
                        "error": "upstream_error: 503 after 3 tries",
                        "error_code": "upstream_error"} | overrides))


def wire(shape: Mapping[str, Any]) -> dict[str, Any]:
    """What a client reads: the encoded bytes, decoded back to JSON."""
    decoded: dict[str, Any] = json.loads(codec.dumps(shape))
    return decoded


def conforms(shape: Mapping[str, Any], kind: Any,
             sdk: type[BaseModel] | None = None) -> dict[str, Any]:
    """The shape's JSON validates against the schema generated from its own definition
    `kind`, and (given `sdk`) is accepted by the official SDK's type."""
    data = wire(shape)
    components = Components()
    ref = components.schema(kind)
    schemas = {"$defs": components.schemas, **ref}
    Draft202012Validator(json.loads(json.dumps(schemas).replace(
        "#/components/schemas/", "#/$defs/"))).validate(data)
    if sdk is not None:
        sdk.model_validate(data)
    return data


# -- the batch object ----------------------------------------------------------


@pytest.mark.parametrize("status", STATUSES)
def test_every_internal_status_reads_as_anthropics(status: str) -> None:
    job = ended(status) if status in TERMINAL else make_job(status=status)
    data = conforms(render.message_batch(job, base_url=BASE, completion_window_s=WINDOW),
                    shapes.MessageBatch,
                    SdkMessageBatch)
    assert data["processing_status"] == EXPECTED_STATUS[status]
    assert data["type"] == "message_batch"
    assert data["id"] == BATCH_ID
    counts = data["request_counts"]
    assert sum(counts.values()) == job.total


def test_the_status_view_names_and_filters() -> None:
    assert {s: render.VIEW.name(s) for s in STATUSES} == EXPECTED_STATUS
    assert render.VIEW.statuses_for("canceling") == ("cancelling",)
    assert render.VIEW.statuses_for("ended") == ("completed", "failed", "expired", "cancelled")
    assert render.VIEW.statuses_for("running") is None


def test_every_field_of_the_sdks_batch_is_rendered() -> None:
    data = wire(render.message_batch(make_job(), base_url=BASE, completion_window_s=WINDOW))
    assert set(data) == set(SdkMessageBatch.model_fields)
    assert set(data["request_counts"]) == {"processing", "succeeded", "errored", "canceled",
                                           "expired"}


def test_counts_move_live_while_it_runs() -> None:
    counts = render.request_counts(make_job(total=10, completed=4, failed=2))
    assert counts == shapes.MessageBatchRequestCounts(processing=4, succeeded=4, errored=2,
                                                      canceled=0, expired=0)


def test_a_cancelled_batch_counts_its_unrun_rows_canceled() -> None:
    job = ended(CANCELLED, total=10, completed=4, failed=6, canceled=3)
    assert render.request_counts(job) == shapes.MessageBatchRequestCounts(
        processing=0, succeeded=4, errored=3, canceled=3, expired=0)


def test_an_expired_batch_counts_its_unrun_rows_expired() -> None:
    job = ended(EXPIRED, total=10, completed=4, failed=6, canceled=5)
    assert render.request_counts(job) == shapes.MessageBatchRequestCounts(
        processing=0, succeeded=4, errored=1, canceled=0, expired=5)


def test_a_batch_still_canceling_keeps_its_unrun_rows_processing() -> None:
    job = make_job(status="cancelling", total=10, completed=4, failed=1,
                   stamps={"running": CREATED, "cancelling": CREATED + 9})
    counts = render.request_counts(job)
    assert (counts["processing"], counts["canceled"]) == (5, 0)


def test_an_ended_batch_has_nothing_processing() -> None:
    """A batch that failed as a whole ended with rows never started: they count errored."""
    counts = render.request_counts(ended(FAILED, total=5, completed=0, failed=0))
    assert (counts["processing"], counts["errored"]) == (0, 5)


def test_times_are_rfc3339_in_utc_to_the_microsecond() -> None:
    job = ended(CANCELLED, stamps={"running": CREATED, "cancelling": CREATED + 30.5,
                                   "cancelled": CREATED + 61})
    data = conforms(render.message_batch(job, base_url=BASE, completion_window_s=WINDOW),
                    shapes.MessageBatch)
    assert data["created_at"] == "2026-10-04T09:12:44.250000Z"
    assert data["cancel_initiated_at"] == "2026-10-04T09:13:14.750000Z"
    assert data["ended_at"] == "2026-10-04T09:13:45.250000Z"
    assert data["expires_at"] == "2026-10-05T09:12:44.250000Z"
    assert data["archived_at"] is None
    parsed = SdkMessageBatch.model_validate(data)
    assert parsed.created_at == datetime.fromtimestamp(CREATED, UTC)


def test_a_running_batch_has_no_end_no_cancel_and_no_results() -> None:
    data = wire(render.message_batch(make_job(), base_url=BASE, completion_window_s=WINDOW))
    assert (data["ended_at"], data["cancel_initiated_at"], data["results_url"]) == \
        (None, None, None)


@pytest.mark.parametrize("created", [1_764_614_763.372420, 1_791_105_164.000001,
                                     1_700_000_000.999999, 1_764_614_763.1234567])
def test_expires_at_is_exactly_the_window_after_created(created: float) -> None:
    """Rendered to the microsecond, the window is exact (seconds of one binade add exactly)."""
    for window in (2, 86_400):
        job = make_job(created_at=created, expires_at=created + window)
        parsed = SdkMessageBatch.model_validate(wire(render.message_batch(
            job, base_url=BASE, completion_window_s=WINDOW)))
        assert parsed.expires_at - parsed.created_at == timedelta(seconds=window)


def test_expires_at_is_created_plus_the_window_when_the_job_has_none() -> None:
    job = make_job(expires_at=None)
    data = wire(render.message_batch(job, base_url=BASE, completion_window_s=3_600))
    assert data["expires_at"] == "2026-10-04T10:12:44.250000Z"


@pytest.mark.parametrize("base", [BASE, BASE + "/", "https://relay.example.com"])
def test_results_url_is_absolute_once_ended(base: str) -> None:
    data = wire(render.message_batch(ended("completed"), base_url=base,
                                     completion_window_s=WINDOW))
    assert data["results_url"] == \
        f"{base.rstrip('/')}/v1/messages/batches/{BATCH_ID}/results"


def test_ended_at_falls_back_to_finished_at() -> None:
    job = make_job(status="completed", stamps={}, finished_at=CREATED + 2)
    assert wire(render.message_batch(job, base_url=BASE, completion_window_s=WINDOW))[
        "ended_at"] == "2026-10-04T09:12:46.250000Z"


# -- the list page, the deleted object ------------------------------------------------


def test_a_page_names_its_first_and_last() -> None:
    jobs = [make_job(id=batch_id()) for _ in range(3)]
    data = conforms(render.page(jobs, has_more=True, base_url=BASE,
                                completion_window_s=WINDOW), shapes.MessageBatchPage)
    assert (data["first_id"], data["last_id"], data["has_more"]) == \
        (jobs[0].id, jobs[-1].id, True)
    for item in data["data"]:
        SdkMessageBatch.model_validate(item)


def test_an_empty_page() -> None:
    data = conforms(render.page([], has_more=False, base_url=BASE, completion_window_s=WINDOW),
                    shapes.MessageBatchPage)
    assert data == {"data": [], "has_more": False, "first_id": None, "last_id": None}


def test_deleted() -> None:
    data = conforms(render.deleted(ended("completed")), shapes.DeletedMessageBatch, SdkDeleted)
    assert data == {"id": BATCH_ID, "type": "message_batch_deleted"}


# -- result lines --------------------------------------------------------------------


def line(job: Job, row: RowRecord) -> dict[str, Any]:
    return conforms(render.result_line(job, row), shapes.MessageBatchIndividualResponse, SdkLine)


def test_a_succeeded_line_carries_the_message() -> None:
    data = line(ended("completed"), make_row())
    assert data == {"custom_id": "req-1", "result": {"type": "succeeded", "message": MESSAGE}}
    assert SdkLine.model_validate(data).result.type == "succeeded"


@pytest.mark.parametrize(("ending", "kind"), [(CANCELLED, "canceled"), (EXPIRED, "expired")])
def test_rows_that_never_ran_read_as_the_ending(ending: str, kind: str) -> None:
    code, message = render.unrun_error(ending)
    row = failed_row(attempts=0, error=message, error_code=code)
    assert line(ended(ending), row) == {"custom_id": "req-1", "result": {"type": kind}}


def test_a_row_stopped_after_it_had_run_is_errored() -> None:
    code, message = render.unrun_error(CANCELLED)
    row = failed_row(attempts=2, error=f"{message} (429)", error_code=code)
    result = line(ended(CANCELLED), row)["result"]
    assert result["type"] == "errored"
    assert result["error"]["error"]["message"] == f"{message} (429)"


def errored(row: RowRecord) -> dict[str, Any]:
    result = line(ended("completed"), row)["result"]
    assert result["type"] == "errored"
    assert result["error"]["type"] == "error"
    error: dict[str, Any] = result["error"]["error"]
    return error


def test_an_upstreams_anthropic_error_is_passed_on() -> None:
    upstream = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                "request_id": "req_011"}
    row = failed_row(response=upstream, status_code=529)
    assert errored(row) == {"type": "overloaded_error", "message": "Overloaded"}


@pytest.mark.parametrize(("overrides", "kind"), [
    ({"error_code": "stream_unsupported", "attempts": 0}, "invalid_request_error"),
    ({"error_code": "invalid_request_error", "attempts": 0}, "invalid_request_error"),
    ({"error_code": "model_not_found", "attempts": 0}, "not_found_error"),
    ({"error_code": "record_too_large"}, "invalid_request_error"),
    ({"error_code": "invalid_request", "attempts": 0}, "invalid_request_error"),
    ({"error_code": "upstream_error", "status_code": 429}, "rate_limit_error"),
    ({"error_code": "upstream_error", "status_code": 529}, "overloaded_error"),
    ({"error_code": "upstream_error", "status_code": 503}, "overloaded_error"),
    ({"error_code": "upstream_error", "status_code": 500}, "api_error"),
    ({"error_code": "upstream_error", "status_code": 400}, "invalid_request_error"),
    ({"error_code": "upstream_error", "status_code": 413}, "invalid_request_error"),
    ({"error_code": "upstream_error", "status_code": 404}, "not_found_error"),
    ({"error_code": "upstream_error"}, "api_error"),  # timeouts, connection errors
    ({"error_code": "invalid_response", "status_code": 200}, "api_error"),
    ({"error_code": "response_too_large"}, "api_error"),
    ({"error_code": "internal_error"}, "api_error"),
    ({"error_code": None}, "api_error"),
    ({"response": {"error": {"message": "openai-shaped"}}, "status_code": 401},
     "authentication_error"),
    ({"response": {"type": "error", "error": {"type": "request_too_large", "message": "m"}},
      "status_code": 413}, "invalid_request_error"),
    # a garbage upstream answer: an error type that is no string is not passed on
    ({"response": {"type": "error", "error": {"type": ["overloaded_error"], "message": "m"}},
      "status_code": 529}, "overloaded_error"),
    ({"response": {"type": "error", "error": {"type": {"a": 1}, "message": "m"}},
      "status_code": 400}, "invalid_request_error"),
])
def test_relays_row_errors_map_to_anthropic_types(overrides: dict[str, Any], kind: str) -> None:
    error = errored(failed_row(**overrides))
    assert error["type"] == kind
    assert error["message"]


# Whatever an upstream answered (stored as the failed row's response), its errored line
# renders and is the SDK's shape: garbage never breaks the results stream.
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 600) | st.sampled_from(
        ["error", "overloaded_error", "request_too_large", "api_error", "x", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "error", "message", "request_id"]), inner, max_size=3),
    max_leaves=10)
_ERROR_ANSWERS = st.one_of(_JSON, st.fixed_dictionaries({"type": st.just("error"), "error": _JSON}),
                           st.fixed_dictionaries({"type": st.just("error"), "error": (
                               st.fixed_dictionaries({"type": _JSON, "message": _JSON}))}))


@settings(max_examples=200, derandomize=True, deadline=None, database=None)
@given(response=_ERROR_ANSWERS, status=st.sampled_from([None, 400, 413, 429, 500, 529]))
def test_any_upstream_answer_renders_as_an_sdk_error(response: Any, status: int | None) -> None:
    error = errored(failed_row(response=response, status_code=status))
    assert SdkErrorResponse.model_validate({"type": "error", "error": error})


def test_an_errored_line_keeps_relays_message() -> None:
    assert errored(failed_row())["message"] == "upstream_error: 503 after 3 tries"


def test_a_row_left_pending_by_a_failed_batch_is_errored() -> None:
    job = ended(FAILED, error="model 'claude-x' is no longer configured")
    row = make_row(status="pending", response=None, attempts=0)
    assert errored_for(job, row) == {"type": "api_error",
                                     "message": "model 'claude-x' is no longer configured"}


def errored_for(job: Job, row: RowRecord) -> dict[str, Any]:
    error: dict[str, Any] = line(job, row)["result"]["error"]["error"]
    return error


# -- ids ---------------------------------------------------------------------------


def test_batch_ids_look_like_anthropics() -> None:
    minted = {batch_id() for _ in range(200)}
    assert len(minted) == 200
    assert all(is_batch_id(i) and len(i) == len(BATCH_ID) for i in minted)
    assert is_batch_id(BATCH_ID)
    assert not is_batch_id("batch_" + "0" * 32)
    assert not is_batch_id(BATCH_ID + "x")


def test_the_error_envelope_is_anthropics() -> None:
    from daemon.dialects.anthropic.errors import envelope
    data = conforms(envelope("not_found_error", "No batch."),
                    shapes.AnthropicErrorResponse, SdkErrorResponse)
    assert data == {"type": "error", "error": {"type": "not_found_error", "message": "No batch."}}
