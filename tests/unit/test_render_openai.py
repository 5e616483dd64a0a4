"""Rendering for the OpenAI Batch dialect (seed 002): the batch object, the file object
and the lines of the output and error files."""

from __future__ import annotations

import re
from typing import Any

import pytest
from openai.types import Batch, BatchUsage

from daemon.dialects.openai.render import (
    batch,
    error_line,
    file_object,
    openai_status,
    output_line,
    request_line,
)
from daemon.dialects.openai.shapes import LineResponse, OutputLine
from daemon.domain.files import FileRecord
from daemon.domain.jobs import STATUSES, Job, RowRecord

CREATED = 1_791_105_164.0  # 2026-10-04T09:12:44Z
BATCH_ID = "batch_" + "9f2c1b7e4a8d4e51b0c6d3f2a1e5c7b9"
INPUT_ID = "file-" + "1" * 32

# Seed 002's BatchObject, plus the timestamps and `errors` OpenAI's object also has.
SEED_FIELDS = {
    "cancelled_at", "completed_at", "completion_window", "created_at", "endpoint",
    "error_file_id", "expired_at", "expires_at", "failed_at", "id", "input_file_id",
    "metadata", "model", "object", "output_file_id", "priority", "request_counts",
    "status", "usage",
}
EXTRA_FIELDS = {"in_progress_at", "finalizing_at", "cancelling_at", "errors"}
OPENAI_STATUSES = {"validating", "in_progress", "finalizing", "completed", "failed",
                   "expired", "cancelling", "cancelled"}


def make_job(**overrides: Any) -> Job:
    fields: dict[str, Any] = {
        "id": BATCH_ID, "seq": 3, "workspace_id": 1, "dialect": "openai",
        "name": "batch " + INPUT_ID, "model": "gpt-4o-mini",
        "endpoint": "/v1/chat/completions", "status": "running", "priority": 0,
        "created_at": CREATED, "total": 3, "completed": 1, "failed": 0,
        "input_file_id": INPUT_ID, "expires_at": CREATED + 86_400,
        "stamps": {"validating": CREATED, "queued": CREATED + 1.7, "running": CREATED + 2.2},
    }
    return Job(**(fields | overrides))


def make_row(**overrides: Any) -> RowRecord:
    fields: dict[str, Any] = {
        "id": 11, "position": 1, "custom_id": "request-1", "status": "completed",
        "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]},
        "response": {"id": "chatcmpl-1", "object": "chat.completion",
                     "choices": [{"message": {"role": "assistant", "content": "Hello"}}]},
        "status_code": 200,
    }
    return RowRecord(**(fields | overrides))


def make_file(**overrides: Any) -> FileRecord:
    fields: dict[str, Any] = {
        "id": INPUT_ID, "workspace_id": 1, "filename": "requests.jsonl", "purpose": "batch",
        "bytes": 1234, "created_at": CREATED + 0.6, "path": "/data/files/" + INPUT_ID,
    }
    return FileRecord(**(fields | overrides))


# -- the batch object ---------------------------------------------------------------


def test_batch_has_exactly_the_seed_fields() -> None:
    assert set(batch(make_job())) == SEED_FIELDS | EXTRA_FIELDS


def test_a_running_batch() -> None:
    view = batch(make_job(metadata={"name": "October"}))
    assert view["id"] == BATCH_ID
    assert view["object"] == "batch"
    assert view["endpoint"] == "/v1/chat/completions"
    assert view["completion_window"] == "24h"
    assert view["status"] == "in_progress"
    assert view["input_file_id"] == INPUT_ID
    assert view["output_file_id"] is None and view["error_file_id"] is None
    assert view["created_at"] == 1_791_105_164
    assert view["in_progress_at"] == 1_791_105_165  # when it was queued, whole seconds
    assert view["expires_at"] == 1_791_105_164 + 86_400
    for stamp in ("finalizing_at", "completed_at", "failed_at", "expired_at",
                  "cancelling_at", "cancelled_at"):
        assert view[stamp] is None
    assert view["request_counts"] == {"total": 3, "completed": 1, "failed": 0}
    assert view["metadata"] == {"name": "October"}
    assert view["model"] == "gpt-4o-mini"
    assert view["priority"] == "standard"
    assert view["errors"] is None


def test_timestamps_are_integers() -> None:
    stamps = {s: CREATED + i + 0.5 for i, s in enumerate(STATUSES)}
    view = batch(make_job(status="completed", stamps=stamps, created_at=CREATED + 0.99))
    for key, value in view.items():
        if key.endswith("_at"):
            assert isinstance(value, int), key
    assert view["created_at"] == 1_791_105_164


@pytest.mark.parametrize(("internal", "shown"), [
    ("validating", "validating"), ("queued", "in_progress"), ("running", "in_progress"),
    ("finalizing", "finalizing"), ("completed", "completed"), ("failed", "failed"),
    ("expired", "expired"), ("cancelling", "cancelling"), ("cancelled", "cancelled"),
])
def test_status_names(internal: str, shown: str) -> None:
    assert openai_status(internal) == shown
    assert batch(make_job(status=internal))["status"] == shown


def test_every_status_a_batch_can_reach_has_an_openai_name() -> None:
    reachable = set(STATUSES) - {"scheduled"}  # cron templates are Relay-dialect only
    assert {openai_status(s) for s in reachable} == OPENAI_STATUSES


def test_a_validating_batch_is_not_in_progress_yet() -> None:
    view = batch(make_job(status="validating", total=0, completed=0, model="",
                          stamps={"validating": CREATED}))
    assert view["in_progress_at"] is None
    assert view["model"] is None
    assert view["usage"] is None
    assert view["request_counts"] == {"total": 0, "completed": 0, "failed": 0}


def test_a_batch_that_failed_validation_carries_the_errors_list() -> None:
    errors = [{"code": "invalid_json_line", "line": 2, "message": "Line 2 is not valid JSON.",
               "param": None}]
    view = batch(make_job(status="failed", total=0, completed=0, errors=errors,
                          stamps={"validating": CREATED, "failed": CREATED + 1}))
    assert view["status"] == "failed"
    assert view["errors"] == {"object": "list", "data": errors}
    assert view["failed_at"] == 1_791_105_165
    assert view["in_progress_at"] is None


def test_each_ending_stamps_its_own_time() -> None:
    stamps = {"validating": CREATED, "queued": CREATED + 1, "running": CREATED + 2,
              "finalizing": CREATED + 10, "completed": CREATED + 11}
    done = batch(make_job(status="completed", stamps=stamps))
    assert (done["finalizing_at"], done["completed_at"]) == (CREATED + 10, CREATED + 11)

    stamps = {"validating": CREATED, "queued": CREATED + 1, "cancelling": CREATED + 5,
              "cancelled": CREATED + 6}
    cancelled = batch(make_job(status="cancelled", stamps=stamps))
    assert (cancelled["cancelling_at"], cancelled["cancelled_at"]) == (CREATED + 5,
                                                                       CREATED + 6)
    assert cancelled["completed_at"] is None

    stamps = {"validating": CREATED, "queued": CREATED + 1, "expired": CREATED + 86_400}
    expired = batch(make_job(status="expired", stamps=stamps))
    assert expired["expired_at"] == CREATED + 86_400


def test_usage_appears_once_there_is_progress() -> None:
    assert batch(make_job(completed=0, failed=0))["usage"] is None
    view = batch(make_job(completed=2, input_tokens=120, output_tokens=30,
                          cost_nano_usd=18_000))
    assert view["usage"] == {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 0},
                             "output_tokens": 30,
                             "output_tokens_details": {"reasoning_tokens": 0},
                             "total_tokens": 150, "cost_nano_usd": 18_000}
    failed_only = batch(make_job(completed=0, failed=1))
    assert failed_only["usage"] == {"input_tokens": 0, "input_tokens_details": {"cached_tokens": 0},
                                    "output_tokens": 0,
                                    "output_tokens_details": {"reasoning_tokens": 0},
                                    "total_tokens": 0, "cost_nano_usd": 0}


def test_usage_has_the_cached_and_reasoning_tokens_openai_requires() -> None:
    usage = batch(make_job(input_tokens=120, cached_tokens=64, output_tokens=30,
                           reasoning_tokens=12))["usage"]
    assert usage is not None
    assert usage["input_tokens_details"] == {"cached_tokens": 64}
    assert usage["output_tokens_details"] == {"reasoning_tokens": 12}
    assert usage["total_tokens"] == 150
    BatchUsage.model_validate(usage, strict=True)


@pytest.mark.parametrize("status", [s for s in STATUSES if s != "scheduled"])  # cron: Relay's
def test_every_status_of_a_batch_validates_as_the_sdks_batch(status: str) -> None:
    stamps = {s: CREATED + n for n, s in enumerate(STATUSES)}
    view = batch(make_job(status=status, stamps=stamps, metadata={"name": "October"},
                          errors=[{"code": "empty_file", "message": "no records",
                                   "line": None}] if status == "failed" else None))
    typed = Batch.model_validate(view, strict=True)
    assert typed.request_counts is not None and typed.input_file_id == INPUT_ID


def test_the_tier_is_the_priority() -> None:
    assert batch(make_job(tier="expedited"))["priority"] == "expedited"


# -- the file object -------------------------------------------------------------------


def test_file_object() -> None:
    view = file_object(make_file())
    assert {k: view[k] for k in ("id", "object", "bytes", "created_at", "filename",
                                 "purpose", "status")} == {
        "id": INPUT_ID, "object": "file", "bytes": 1234, "created_at": 1_791_105_164,
        "filename": "requests.jsonl", "purpose": "batch", "status": "processed"}
    assert "path" not in view and "workspace_id" not in view


def test_a_result_file_object() -> None:
    view = file_object(make_file(purpose="batch_output", filename=f"{BATCH_ID}_output.jsonl"))
    assert view["purpose"] == "batch_output"


# -- output and error file lines ---------------------------------------------------------


def response_of(line: OutputLine) -> LineResponse:
    """`line`'s response, which it has."""
    assert line["response"] is not None
    return line["response"]


def test_output_line() -> None:
    row = make_row()
    line = output_line(make_job(), row)
    assert set(line) == {"id", "custom_id", "response", "error"}
    assert re.fullmatch(r"batch_req_[0-9a-f]{32}", line["id"])
    assert line["custom_id"] == "request-1"
    assert line["error"] is None
    response = response_of(line)
    assert set(response) == {"status_code", "request_id", "body"}
    assert response["status_code"] == 200
    assert re.fullmatch(r"req_[0-9a-f]{32}", response["request_id"])
    assert response["body"] == row.response


def test_line_ids_are_stable_and_distinct() -> None:
    job = make_job()
    first = output_line(job, make_row(position=1))
    assert output_line(job, make_row(position=1)) == first
    second = output_line(job, make_row(position=2, custom_id="request-2"))
    other_job = output_line(make_job(id="batch_" + "0" * 32), make_row(position=1))
    ids = {first["id"], second["id"], other_job["id"]}
    requests = {response_of(first)["request_id"], response_of(second)["request_id"],
                response_of(other_job)["request_id"]}
    assert len(ids) == 3 and len(requests) == 3


def test_an_upstream_refusal_keeps_its_response() -> None:
    body = {"error": {"message": "bad request", "type": "invalid_request_error",
                      "param": None, "code": None}}
    line = error_line(make_job(), make_row(status="failed", status_code=400, response=body,
                                           error="upstream_error: 400 from gpt-4o-mini",
                                           error_code="upstream_error"))
    assert line["error"] is None
    assert response_of(line)["status_code"] == 400
    assert response_of(line)["body"] == body
    assert re.fullmatch(r"req_[0-9a-f]{32}", response_of(line)["request_id"])


@pytest.mark.parametrize(("code", "status_code"), [
    ("stream_unsupported", None),  # refused at validation: never sent upstream
    ("tool_config_moved", None),
    ("unsupported_extension", None),
    ("batch_cancelled", None),
    ("batch_expired", None),
    ("upstream_error", None),  # timeouts, resets: no answer came back
    ("invalid_response", 200),  # a 200 whose body was not JSON
])
def test_a_failure_without_an_upstream_answer_has_an_error(code: str,
                                                           status_code: int | None) -> None:
    row = make_row(status="failed", status_code=status_code, response=None,
                   error=f"{code}: what happened", error_code=code)
    line = error_line(make_job(), row)
    assert set(line) == {"id", "custom_id", "response", "error"}
    assert re.fullmatch(r"batch_req_[0-9a-f]{32}", line["id"])
    assert line["response"] is None
    assert line["error"] == {"code": code, "message": f"{code}: what happened"}


def test_an_error_line_always_has_a_code_and_message() -> None:
    line = error_line(make_job(), make_row(status="failed", status_code=None, response=None))
    assert line["error"] is not None
    assert line["error"]["code"] and line["error"]["message"]


def test_output_and_error_lines_of_one_row_share_the_line_id() -> None:
    job, row = make_job(), make_row(status="failed", response=None, status_code=None,
                                    error="x", error_code="batch_cancelled")
    assert error_line(job, row)["id"] == output_line(job, row)["id"]


# -- a row as an input file's record -------------------------------------------------------


def test_a_row_reads_back_as_the_record_it_was_submitted_as() -> None:
    row = make_row()
    assert request_line(make_job(), row) == {"custom_id": "request-1", "method": "POST",
                                              "url": "/v1/chat/completions", "body": row.body}
