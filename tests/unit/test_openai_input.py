"""The OpenAI Batch dialect's input (seed 002): the create body and the JSONL record
parser, including malformed files (bad UTF-8, huge lines, blank lines, no final newline)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from daemon.api.middleware import status_of
from daemon.domain.errors import InvalidRequest
from daemon.domain.jobs import RowDraft
from daemon.domain.openai_input import (
    MAX_ERRORS,
    MAX_METADATA,
    MAX_RECORDS,
    ParsedRecords,
    RecordStream,
    jsonl_lines,
    parse_create,
    parse_records,
    record_row,
)

CHAT = "/v1/chat/completions"
MODELS = frozenset({"gpt-4o-mini", "backup"})
FILE_ID = "file-" + "a" * 32


def make_body(**overrides: Any) -> dict[str, Any]:
    """A create body; an override of `...` drops that key."""
    body: dict[str, Any] = {"input_file_id": FILE_ID, "endpoint": CHAT,
                            "completion_window": "24h"}
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not ...}


def make_record(custom_id: object = "r-1", text: str = "Classify: great product!",
                **overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "custom_id": custom_id, "method": "POST", "url": CHAT,
        "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]},
    }
    record.update(overrides)
    return {k: v for k, v in record.items() if v is not ...}


def with_body(**extra: Any) -> dict[str, Any]:
    record = make_record()
    record["body"] = {**record["body"], **extra}
    return record


def line(record: Any) -> bytes:
    return json.dumps(record).encode()


def parse_file(data: bytes, *, endpoint: str = CHAT) -> ParsedRecords:
    """What the validator does with an uploaded file."""
    return parse_records(jsonl_lines(io.BytesIO(data)), endpoint=endpoint, models=MODELS)


def parse_inline(records: list[Any], *, endpoint: str = CHAT) -> ParsedRecords:
    return parse_records(enumerate(records, start=1), endpoint=endpoint, models=MODELS)


def refused(body: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as info:
        parse_create(body)
    assert status_of(info.value) == 400
    return info.value


def only_error(parsed: ParsedRecords) -> dict[str, Any]:
    assert len(parsed.errors) == 1, parsed.errors
    return parsed.errors[0].as_dict()


# -- the create body -------------------------------------------------------------


def test_create_from_an_input_file() -> None:
    request = parse_create(make_body(metadata={"name": "October"}, model="gpt-4o-mini"))
    assert request.input_file_id == FILE_ID
    assert request.requests is None
    assert request.endpoint == CHAT
    assert request.metadata == {"name": "October"}
    assert request.model_hint == "gpt-4o-mini"
    assert request.tier == "standard"


def test_create_from_inline_requests() -> None:
    records = [make_record("a"), make_record("b")]
    request = parse_create(make_body(input_file_id=..., requests=records))
    assert request.input_file_id is None
    assert request.requests == records


@pytest.mark.parametrize("endpoint", ["/v1/chat/completions", "/v1/completions",
                                      "/v1/embeddings", "/v1/responses", "/v1/moderations"])
def test_each_endpoint_is_accepted(endpoint: str) -> None:
    assert parse_create(make_body(endpoint=endpoint)).endpoint == endpoint


@pytest.mark.parametrize(("priority", "tier"), [("standard", "standard"),
                                                ("expedited", "expedited"),
                                                (None, "standard"), (..., "standard")])
def test_priority_picks_the_tier(priority: Any, tier: str) -> None:
    assert parse_create(make_body(priority=priority)).tier == tier


@pytest.mark.parametrize(("overrides", "param"), [
    ({"endpoint": ...}, "endpoint"),
    ({"endpoint": "/v1/images/generations"}, "endpoint"),
    ({"endpoint": ["/v1/chat/completions"]}, "endpoint"),
    ({"completion_window": ...}, "completion_window"),
    ({"completion_window": "48h"}, "completion_window"),
    ({"completion_window": 24}, "completion_window"),
    ({"priority": "urgent"}, "priority"),
    ({"priority": "Expedited"}, "priority"),
    ({"input_file_id": ...}, "requests"),
    ({"requests": [make_record()]}, "input_file_id"),
    ({"input_file_id": ""}, "input_file_id"),
    ({"input_file_id": 42}, "input_file_id"),
    ({"input_file_id": ..., "requests": []}, "requests"),
    ({"input_file_id": ..., "requests": {"custom_id": "r-1"}}, "requests"),
    ({"metadata": ["a", "b"]}, "metadata"),
    ({"metadata": "name=October"}, "metadata"),
    ({"model": 4}, "model"),
    ({"stream": True}, "stream"),
])
def test_each_refusal_names_its_field(overrides: dict[str, Any], param: str) -> None:
    assert refused(make_body(**overrides)).param == param


def test_a_body_that_is_not_an_object_is_refused() -> None:
    refused([make_body()])
    refused("batch")


def test_at_most_fifty_thousand_inline_requests() -> None:
    record = make_record()
    assert len(parse_create(make_body(input_file_id=..., requests=[record] * MAX_RECORDS))
               .requests or []) == 50_000
    error = refused(make_body(input_file_id=..., requests=[record] * (MAX_RECORDS + 1)))
    assert error.param == "requests"
    assert "50001" in error.message and "50000" in error.message


def test_metadata_limits() -> None:
    at_limit = {f"k{i}": "v" for i in range(MAX_METADATA)}
    assert parse_create(make_body(metadata=at_limit)).metadata == at_limit
    assert refused(make_body(metadata={**at_limit, "one-more": "v"})).param == "metadata"

    assert parse_create(make_body(metadata={"k" * 64: "v" * 512})).metadata is not None
    assert (refused(make_body(metadata={"k" * 65: "v"})).param or "").startswith("metadata")
    assert refused(make_body(metadata={"k": "v" * 513})).param == "metadata.k"
    assert refused(make_body(metadata={"k": 5})).param == "metadata.k"
    assert refused(make_body(metadata={"k": None})).param == "metadata.k"


def test_metadata_may_be_null_or_empty() -> None:
    assert parse_create(make_body(metadata=None)).metadata is None
    assert parse_create(make_body(metadata={})).metadata == {}


# -- records: a well-formed file --------------------------------------------------


def test_a_well_formed_file_becomes_rows_in_order() -> None:
    data = b"".join(line(make_record(f"r-{i}", f"text {i}")) + b"\n" for i in range(3))
    parsed = parse_file(data)
    assert parsed.errors == []
    assert [r.custom_id for r in parsed.rows] == ["r-0", "r-1", "r-2"]
    assert parsed.rows[1].body == make_record("r-1", "text 1")["body"]
    assert all(r.model == "gpt-4o-mini" and r.error is None for r in parsed.rows)
    assert parsed.model == "gpt-4o-mini"


def test_inline_records_parse_like_lines() -> None:
    parsed = parse_inline([make_record("a"), make_record("b")])
    assert parsed.errors == []
    assert [r.custom_id for r in parsed.rows] == ["a", "b"]


def test_the_model_is_settled_from_the_first_record_that_names_one() -> None:
    nameless = make_record("a")
    del nameless["body"]["model"]
    parsed = parse_inline([nameless, make_record("b", body={"model": "backup", "messages": []}),
                           make_record("c")])
    assert parsed.model == "backup"


def test_every_endpoint_reads_its_own_records() -> None:
    embedding = {"custom_id": "e-1", "method": "POST", "url": "/v1/embeddings",
                 "body": {"model": "gpt-4o-mini", "input": "hello"}}
    completion = {"custom_id": "c-1", "method": "POST", "url": "/v1/completions",
                  "body": {"model": "gpt-4o-mini", "prompt": "Say hi"}}
    assert parse_inline([embedding], endpoint="/v1/embeddings").rows[0].body["input"] == "hello"
    assert parse_inline([completion], endpoint="/v1/completions").rows[0].error is None


# -- records: malformed files ----------------------------------------------------------


def test_blank_lines_are_skipped_and_line_numbers_kept() -> None:
    data = (b"\n" + line(make_record("a")) + b"\n\n   \n\t\r\n" + line(make_record("b"))
            + b"\n\n" + b"{oops\n" + b"\n")
    parsed = parse_file(data)
    assert [r.custom_id for r in parsed.rows] == ["a", "b"]
    error = only_error(parsed)
    assert error["code"] == "invalid_json_line"
    assert error["line"] == 8  # counted over every line, blank ones included


def test_a_last_line_without_a_newline_is_read() -> None:
    parsed = parse_file(line(make_record("a")) + b"\n" + line(make_record("last")))
    assert parsed.errors == []
    assert [r.custom_id for r in parsed.rows] == ["a", "last"]


def test_windows_line_endings_are_read() -> None:
    parsed = parse_file(line(make_record("a")) + b"\r\n" + line(make_record("b")) + b"\r\n")
    assert parsed.errors == []
    assert [r.custom_id for r in parsed.rows] == ["a", "b"]


def test_a_utf8_byte_order_mark_is_read() -> None:
    parsed = parse_file(b"\xef\xbb\xbf" + line(make_record("a")) + b"\n")
    assert [r.custom_id for r in parsed.rows] == ["a"]


def test_non_ascii_text_survives() -> None:
    text = "Klassifiziere: großartig — 很好 👍"
    data = json.dumps(make_record("ü-1", text), ensure_ascii=False).encode() + b"\n"
    row = parse_file(data).rows[0]
    assert row.custom_id == "ü-1"
    assert row.body["messages"][0]["content"] == text


@pytest.mark.parametrize("bad", [
    b"\xff",  # never valid in UTF-8
    b"\xc3\x28",  # a broken two-byte sequence
    b"\xe2\x82",  # truncated three-byte sequence
    b"\xc0\xaf",  # overlong encoding of '/'
    b"\xed\xa0\x80",  # an encoded UTF-16 surrogate (CESU-8), not UTF-8
])
def test_bad_utf8_fails_that_line(bad: bytes) -> None:
    good = line(make_record("a"))
    broken = line(make_record("BROKEN")).replace(b"BROKEN", b"b" + bad)
    error = only_error(parse_file(good + b"\n" + broken + b"\n"))
    assert error["code"] == "invalid_json_line"
    assert error["line"] == 2
    assert "UTF-8" in error["message"]


def test_a_utf16_line_is_not_read_as_json() -> None:
    """JSONL is UTF-8; bytes in another encoding are not a record."""
    data = json.dumps(make_record("a")).encode("utf-16-le")
    error = only_error(parse_file(data))
    assert error["code"] == "invalid_json_line"


@pytest.mark.parametrize("value", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_json_numbers_fail_that_line(value: bytes) -> None:
    """Python reads NaN and Infinity; JSON has no such values, and upstreams refuse them."""
    data = line(with_body(temperature=0.5)).replace(b"0.5", value)
    error = only_error(parse_file(data + b"\n"))
    assert error["code"] == "invalid_json_line"


@pytest.mark.parametrize("text", [b"{oops", b"[1, 2", b'{"custom_id": "a",}', b"null x",
                                  b"\x00", b"{'custom_id': 'a'}"])
def test_invalid_json_fails_that_line(text: bytes) -> None:
    error = only_error(parse_file(line(make_record("a")) + b"\n" + text + b"\n"))
    assert error["code"] == "invalid_json_line"
    assert error["line"] == 2
    assert error["message"].startswith("Line 2 ")


def test_a_ten_megabyte_line_is_read() -> None:
    text = "word " * (2 * 1024 * 1024)  # 10 MiB of prompt
    data = line(make_record("big", text)) + b"\n" + line(make_record("small")) + b"\n"
    assert len(data) > 10 * 1024 * 1024
    parsed = parse_file(data)
    assert parsed.errors == []
    assert [r.custom_id for r in parsed.rows] == ["big", "small"]
    assert len(parsed.rows[0].body["messages"][0]["content"]) == len(text)


def test_a_ten_megabyte_broken_line_gives_a_short_message() -> None:
    data = line(make_record("a")) + b"\n" + b'{"custom_id": "' + b"x" * (10 * 1024 * 1024) + b"\n"
    error = only_error(parse_file(data))
    assert error["code"] == "invalid_json_line"
    assert error["line"] == 2
    assert len(error["message"]) < 500  # the line itself is not echoed


def test_a_file_of_blank_lines_is_empty() -> None:
    assert only_error(parse_file(b"\n \n\r\n\n"))["code"] == "empty_file"
    assert only_error(parse_file(b""))["code"] == "empty_file"


def test_more_than_fifty_thousand_records_is_too_many() -> None:
    records = [make_record(f"r-{i}") for i in range(MAX_RECORDS + 1)]
    error = only_error(parse_inline(records))
    assert error["code"] == "too_many_tasks"
    assert parse_inline(records[:MAX_RECORDS]).errors == []


def test_the_configured_row_cap_replaces_fifty_thousand_for_files() -> None:
    records = [make_record(f"r-{i}") for i in range(MAX_RECORDS + 1)]
    raised = parse_records(enumerate(records, start=1), endpoint=CHAT, models=MODELS,
                           max_records=MAX_RECORDS + 1)
    assert raised.errors == [] and len(raised.rows) == MAX_RECORDS + 1
    lowered = parse_records(enumerate(records[:3], start=1), endpoint=CHAT, models=MODELS,
                            max_records=2)
    assert only_error(lowered)["message"] == "The input has 3 records; at most 2 are allowed."


def test_duplicate_custom_id_names_both_lines() -> None:
    parsed = parse_inline([make_record("a"), make_record("b"), make_record("a")])
    error = only_error(parsed)
    assert error["code"] == "duplicate_custom_id"
    assert error["line"] == 3
    assert error["param"] == "custom_id"
    assert "line 1" in error["message"]


def test_a_record_for_another_endpoint_is_a_url_mismatch() -> None:
    error = only_error(parse_inline([make_record("a"), make_record("b", url="/v1/embeddings")]))
    assert error == {"code": "url_mismatch", "line": 2, "param": "url",
                     "message": error["message"]}
    assert "/v1/embeddings" in error["message"]


@pytest.mark.parametrize(("record", "param"), [
    (["custom_id", "r-1"], None),
    ("r-1", None),
    (42, None),
    (make_record(custom_id=...), "custom_id"),
    (make_record(method=...), "method"),
    (make_record(url=...), "url"),
    (make_record(body=...), "body"),
    (make_record(method="GET"), "method"),
    (make_record(method="post"), "method"),
    (make_record(custom_id=""), "custom_id"),
    (make_record(custom_id=7), "custom_id"),
    (make_record(custom_id=None), "custom_id"),
    (make_record(custom_id="x" * 513), "custom_id"),
    (make_record(extra="field"), "extra"),
])
def test_a_record_that_is_not_a_batch_record_fails_the_file(record: Any,
                                                            param: str | None) -> None:
    error = only_error(parse_file(line(make_record("ok")) + b"\n" + line(record) + b"\n"))
    assert error["code"] == "invalid_request"
    assert error["line"] == 2
    assert error["param"] == param


def test_a_null_line_fails_the_file() -> None:
    """`null` is valid JSON but not a record; it must not vanish from the batch."""
    error = only_error(parse_file(line(make_record("a")) + b"\nnull\n"))
    assert (error["code"], error["line"]) == ("invalid_request", 2)


def test_a_null_inline_record_fails_the_batch() -> None:
    error = only_error(parse_inline([make_record("a"), None]))
    assert (error["code"], error["line"]) == ("invalid_request", 2)


def test_an_inline_string_is_not_decoded_as_a_jsonl_line() -> None:
    """Inline `requests` are already JSON: a string item is not a record, even when
    the string holds one."""
    error = only_error(parse_inline([make_record("a"), json.dumps(make_record("b"))]))
    assert (error["code"], error["line"]) == ("invalid_request", 2)


def test_file_errors_have_the_openai_shape() -> None:
    error = parse_inline([make_record(method="GET")]).errors[0].as_dict()
    assert set(error) == {"code", "line", "message", "param"}


def test_file_errors_are_capped() -> None:
    parsed = parse_file(b"{oops\n" * (MAX_ERRORS + 50))
    assert len(parsed.errors) == MAX_ERRORS
    assert [e.line for e in parsed.errors] == list(range(1, MAX_ERRORS + 1))


def test_every_file_error_is_reported_not_just_the_first() -> None:
    parsed = parse_file(b"{oops\n" + line(make_record("a")) + b"\n" + line(make_record("a"))
                        + b"\n" + line(make_record("c", url="/v1/completions")) + b"\n")
    assert [(e.code, e.line) for e in parsed.errors] == [
        ("invalid_json_line", 1), ("duplicate_custom_id", 3), ("url_mismatch", 4)]


# -- records: record-level refusals -------------------------------------------------


@pytest.mark.parametrize(("record", "code"), [
    (with_body(stream=True), "stream_unsupported"),
    (with_body(tool_config={"url": "https://tools.example.com"}), "tool_config_moved"),
    (with_body(openrelay={"tool_config": {"url": "https://tools.example.com",
                                          "type": "grpc"}}),
     "invalid_tool_config"),
    (with_body(openrelay={"workflow": {"url": "https://flow.example.com",
                                       "authorization": "Bearer x"}}),
     "workflow_not_enabled"),
    (with_body(openrelay="tools"), "invalid_body"),
    (make_record(body="not an object"), "invalid_body"),
    (make_record(body=["model", "gpt-4o-mini"]), "invalid_body"),
    (make_record(body={"messages": []}), "invalid_body"),
    (with_body(model="gpt-5-imaginary"), "model_not_found"),
])
def test_a_record_level_problem_fails_only_that_record(record: dict[str, Any],
                                                       code: str) -> None:
    parsed = parse_inline([make_record("ok-1"), {**record, "custom_id": "bad"},
                           make_record("ok-2")])
    assert parsed.errors == []
    by_id = {r.custom_id: r for r in parsed.rows}
    assert list(by_id) == ["ok-1", "bad", "ok-2"]
    assert by_id["bad"].error_code == code
    assert by_id["bad"].error
    assert isinstance(by_id["bad"].body, dict)
    assert by_id["ok-1"].error is None and by_id["ok-2"].error is None


def test_stream_false_and_an_empty_extension_object_are_fine() -> None:
    parsed = parse_inline([with_body(stream=False), {**with_body(openrelay={}),
                                                     "custom_id": "r-2"}])
    assert [r.error for r in parsed.rows] == [None, None]


def test_record_row_fills_a_default_model() -> None:
    record = make_record()
    del record["body"]["model"]
    row = record_row(1, record, endpoint=CHAT, models=MODELS, default_model="backup")
    assert isinstance(row, RowDraft)
    assert (row.model, row.body["model"], row.error) == ("backup", "backup", None)


# -- a file read a chunk at a time (the validator's `RecordStream`) -------------------


def stream_of(records: list[Any], **options: Any) -> RecordStream:
    data = b"\n".join(line(r) for r in records) + b"\n"
    return RecordStream(jsonl_lines(io.BytesIO(data)), endpoint=CHAT, models=MODELS,
                        chunk_rows=2, **options)


def test_a_stream_hands_out_numbered_chunks_and_adds_them_up() -> None:
    records = [make_record(f"r-{i}") for i in range(1, 5)]
    records.insert(2, make_record("no-model", body=make_body(model="nope")))
    stream = stream_of(records)
    chunks = [[row.custom_id for row in chunk] for chunk in stream.chunks()]
    assert chunks == [["r-1", "r-2"], ["no-model", "r-3"], ["r-4"]]
    assert (stream.count, stream.failed, stream.refused_last, stream.model) == (
        5, 1, 3, "gpt-4o-mini")
    assert stream.errors == []


def test_a_custom_id_used_again_in_a_later_chunk_names_its_first_line() -> None:
    records = [make_record("a"), make_record("b"), make_record("c"), make_record("a")]
    stream = stream_of(records)
    handed = [row.custom_id for chunk in stream.chunks() for row in chunk]
    assert handed == ["a", "b", "c"]
    assert [(e.code, e.line, e.message) for e in stream.errors] == [
        ("duplicate_custom_id", 4, "custom_id 'a' is used again (first on line 1).")]


def test_past_the_row_cap_nothing_more_is_handed_out_but_every_record_is_counted() -> None:
    stream = stream_of([make_record(f"r-{i}") for i in range(1, 8)], max_records=3)
    handed = [row.custom_id for chunk in stream.chunks() for row in chunk]
    assert handed == ["r-1", "r-2"]  # the chunk that crosses the cap is not stored
    assert [(e.code, e.message) for e in stream.errors] == [
        ("too_many_tasks", "The input has 7 records; at most 3 are allowed.")]


def test_past_the_cap_a_dry_run_and_the_validator_find_the_same_problems() -> None:
    records = [make_record(f"r-{i}") for i in range(1, 9)] + [make_record("r-7")]
    in_memory = stream_of(records, max_records=5)  # a dry run's reader (chunks of 2 here)
    list(in_memory.chunks())
    stored: dict[str, int] = {}

    class Stored:  # what the validator's stored rows answer
        def positions(self, custom_ids: Any) -> dict[str, int]:
            return {c: stored[c] for c in custom_ids if c in stored}

        def add(self, rows: Any, *, start: int) -> None:
            pass

    stream = stream_of(records, max_records=5, earlier=Stored())
    for chunk in stream.chunks():
        first = stream.count - len(chunk)
        stored.update((row.custom_id, first + n) for n, row in enumerate(chunk, start=1))
    assert [(e.code, e.message) for e in stream.errors] == [
        (e.code, e.message) for e in in_memory.errors] == [
        ("too_many_tasks", "The input has 9 records; at most 5 are allowed.")]
