"""Property-based tests of the input parsers: the Relay submit body, the OpenAI create
body and JSONL records, cron expressions, and the TUI's CSV and JSONL files.

Each parser, given anything, returns or raises its one documented error type
(`InvalidRequest`, `FileError` entries, `InputFileError`); what it accepts reads back
as it was written; an accepted cron expression always has a next run. Bounded and
derandomized (`BOUNDED`): the same examples every run, a few seconds in all.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from daemon.api.middleware import status_of
from daemon.domain import cron
from daemon.domain.errors import InvalidRequest
from daemon.domain.openai_input import (
    CHAT,
    ENDPOINTS,
    FileError,
    jsonl_lines,
    parse_create,
    parse_records,
    record_row,
)
from daemon.domain.relay_input import ROLES, parse_submission
from daemon.outbound.policy import TargetCheck
from relaytui.formats import HEADER_NAMES, InputFileError, csv_rows, jsonl_rows

BOUNDED = settings(max_examples=100, derandomize=True, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow])
NOW = 1_791_105_164.0  # 2026-10-04 09:12:44 UTC
MODELS = frozenset({"gpt-4o-mini", "backup"})
CHECK_URL = TargetCheck(allow_private=False, resolve=lambda host: ["93.184.216.34"])

# -- strategies ---------------------------------------------------------------------------

scalars = (st.none() | st.booleans() | st.integers()
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                           max_leaves=6)
# text a name or an id may hold: no lone surrogate, no NUL
clean_text = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
                     min_size=1, max_size=24)
messages = st.lists(st.fixed_dictionaries({"role": st.sampled_from(sorted(ROLES)),
                                           "content": clean_text}), min_size=1, max_size=3)
relay_rows = st.lists(st.fixed_dictionaries({"custom_id": clean_text, "messages": messages}),
                      min_size=1, max_size=5, unique_by=lambda row: row["custom_id"])


def mostly(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`valid` values seven times in eight, else any JSON value in their place."""
    return st.integers(0, 7).flatmap(lambda n: valid if n else json_values)


def near(required: dict[str, st.SearchStrategy[Any]],
         optional: dict[str, st.SearchStrategy[Any]] | None = None) -> st.SearchStrategy[Any]:
    """Objects with `required` and some of `optional` fields (each mostly valid), and now
    and then a stray key: mostly right, so a parser's deeper rules are reached too."""
    known = st.fixed_dictionaries({k: mostly(v) for k, v in required.items()},
                                  optional={k: mostly(v) for k, v in (optional or {}).items()})
    stray = st.dictionaries(st.text(max_size=6), scalars, min_size=1, max_size=1)
    sometimes_stray = st.integers(0, 3).flatmap(lambda n: st.just({}) if n else stray)
    return st.builds(lambda extra, body: {**extra, **body}, sometimes_stray, known)


def record_of(custom_id: str, model: str, extensions: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    if extensions is not None:
        body["openrelay"] = extensions
    return {"custom_id": custom_id, "method": "POST", "url": CHAT, "body": body}


urls = st.sampled_from(["https://tools.example/run", "http://tools.example/run",
                        "https://10.0.0.1/x", "ftp://x", "", "https://"]) | st.text(max_size=20)
extensions = near({}, {
    "tool_config": near({"url": urls}, {"type": st.sampled_from(["http", "mcp"]),
                                        "max_rounds": st.integers(-2, 40),
                                        "timeout_ms": st.integers(-1, 200_000),
                                        "authorization": st.text(max_size=8)}),
    "workflow": near({"url": urls, "authorization": st.text(max_size=8)},
                     {"max_steps": st.integers(-1, 200),
                      "callback_timeout_ms": st.integers(0, 700_000),
                      "timeout_ms": st.integers(0, 2_000_000)})})
records = mostly(st.builds(record_of, clean_text, st.sampled_from([*MODELS, "nope"]),
                           st.none() | extensions))

# -- the Relay submit body ------------------------------------------------------------


def parse_relay(body: Any) -> Any:
    return parse_submission(body, models=MODELS, now=NOW, check_cron=cron.check,
                            check_url=CHECK_URL)


relay_bodies = mostly(near({
    "model": st.sampled_from([*MODELS, "unknown"]),
    "requests": st.lists(mostly(st.fixed_dictionaries({"messages": messages}) | records),
                         min_size=1, max_size=3),
}, {"name": clean_text, "priority": st.integers(-2_000_000, 2_000_000),
    "cron": st.sampled_from(["0 * * * *", "*/5 9-17 * * 1-5", "0 0 31 2 *", "@daily"]),
    "webhookUrl": urls}))


@BOUNDED
@given(relay_bodies)
def test_a_relay_body_is_accepted_or_refused_with_invalid_request(body: Any) -> None:
    try:
        parse_relay(body)
    except InvalidRequest as exc:
        assert status_of(exc) == 400 and exc.message


@BOUNDED
@given(rows=relay_rows, model=st.sampled_from(sorted(MODELS)), name=clean_text,
       priority=st.integers(-1_000_000, 1_000_000))
def test_an_accepted_relay_body_reads_back_as_written(rows: list[dict[str, Any]], model: str,
                                                      name: str, priority: int) -> None:
    if not name.strip():
        name += "x"
    sub = parse_relay({"model": model, "name": name, "priority": priority, "requests": rows})
    assert (sub.model, sub.name, sub.priority, sub.cron) == (model, name, priority, None)
    assert [(r.custom_id, r.body) for r in sub.rows] == [
        (row["custom_id"], {"messages": row["messages"]}) for row in rows]


# -- the OpenAI create body and records -----------------------------------------------

CREATE_OPTIONS = {
    "metadata": st.dictionaries(st.text(max_size=66), st.text(max_size=10), max_size=3),
    "model": st.text(max_size=8), "priority": st.sampled_from(["standard", "expedited"]),
    "output_expires_after": near({"anchor": st.just("created_at"),
                                  "seconds": st.integers(3000, 2_600_000)})}
create_bodies = mostly(st.one_of(*(
    near({"endpoint": st.sampled_from(ENDPOINTS), "completion_window": st.just("24h"),
          source: strategy}, CREATE_OPTIONS)
    for source, strategy in (("input_file_id", st.text(max_size=8)),
                             ("requests", st.lists(records, min_size=1, max_size=3))))))


@BOUNDED
@given(create_bodies)
def test_a_create_body_is_accepted_or_refused_with_invalid_request(body: Any) -> None:
    try:
        parse_create(body)
    except InvalidRequest as exc:
        assert status_of(exc) == 400 and exc.message


@BOUNDED
@given(endpoint=st.sampled_from(ENDPOINTS), file_id=clean_text,
       metadata=st.dictionaries(st.text(max_size=64), st.text(max_size=512), max_size=16))
def test_an_accepted_create_body_reads_back_as_written(endpoint: str, file_id: str,
                                                       metadata: dict[str, str]) -> None:
    made = parse_create({"endpoint": endpoint, "completion_window": "24h",
                         "input_file_id": file_id, "metadata": metadata})
    assert (made.endpoint, made.input_file_id, made.metadata, made.tier) == (
        endpoint, file_id, metadata, "standard")


@BOUNDED
@given(record=json_values | records, workflows=st.booleans())
def test_any_inline_record_becomes_a_row_or_a_file_error(record: Any, workflows: bool) -> None:
    row = record_row(1, record, endpoint=CHAT, models=MODELS, check_url=CHECK_URL,
                     workflows=workflows)
    assert isinstance(row, FileError) or row.custom_id == record["custom_id"]


@BOUNDED
@given(st.binary(max_size=300) | st.lists(records.map(json.dumps), max_size=4)
       .map(lambda lines: "\n".join(lines).encode()))
def test_any_jsonl_bytes_parse_into_rows_and_numbered_errors(data: bytes) -> None:
    parsed = parse_records(jsonl_lines(io.BytesIO(data)), endpoint=CHAT, models=MODELS,
                           check_url=CHECK_URL, workflows=True)
    lines = len(data.splitlines()) or 1
    assert all(e.line is None or 1 <= e.line <= lines for e in parsed.errors)
    assert parsed.rows or parsed.errors


@BOUNDED
@given(st.lists(clean_text, min_size=1, max_size=6, unique=True))
def test_jsonl_records_read_back_as_written(custom_ids: list[str]) -> None:
    written = [record_of(c, "gpt-4o-mini") for c in custom_ids]
    data = "".join(json.dumps(r) + "\n" for r in written).encode()
    parsed = parse_records(jsonl_lines(io.BytesIO(data)), endpoint=CHAT, models=MODELS)
    assert parsed.errors == []
    assert [(r.custom_id, r.body, r.model) for r in parsed.rows] == [
        (r["custom_id"], r["body"], "gpt-4o-mini") for r in written]


# -- cron -------------------------------------------------------------------------------

FIELD_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))  # minute … weekday (0: Sunday)


def cron_field(low: int, high: int) -> st.SearchStrategy[str]:
    value = st.integers(low, high)
    part = st.one_of(
        st.just("*"), value.map(str),
        st.tuples(value, value).map(lambda ab: f"{ab[0]}-{ab[1]}"),
        st.tuples(st.just("*") | value.map(str) | st.tuples(value, value).map(
            lambda ab: f"{ab[0]}-{ab[1]}"), st.integers(1, high)).map(
            lambda base_step: f"{base_step[0]}/{base_step[1]}"))
    return st.lists(part, min_size=1, max_size=3).map(",".join)


@st.composite
def cron_exprs(draw: st.DrawFn) -> str:
    """Five fields; day of month and weekday never both restricted (cron ORs them then,
    which `fires_at` leaves out)."""
    fields = [draw(cron_field(low, high)) for low, high in FIELD_RANGES]
    if draw(st.booleans()):
        fields[2 + 2 * draw(st.integers(0, 1))] = "*"
    else:
        fields[2] = fields[4] = "*"
    return " ".join(fields)


def allowed(field: str, low: int, high: int) -> set[int]:
    """The values a field of `cron_exprs` allows (`a/n` runs from a to the top)."""
    values: set[int] = set()
    for part in field.split(","):
        span, _, step = part.partition("/")
        first, _, last = span.partition("-")
        start = low if first == "*" else int(first)
        end = int(last) if last else high if first == "*" or step else start
        values |= set(range(start, end + 1, int(step or 1)))
    return values


def fires_at(expr: str, tick: float) -> bool:
    at = datetime.fromtimestamp(tick, UTC)
    actual = (at.minute, at.hour, at.day, at.month, (at.weekday() + 1) % 7)
    return all(value in allowed(field, low, high) for value, field, (low, high)
               in zip(actual, expr.split(), FIELD_RANGES, strict=True))


instants = st.floats(min_value=NOW - 10 * 365 * 86_400, max_value=NOW + 10 * 365 * 86_400)


@BOUNDED
@given(st.text(max_size=40) | cron_exprs())
def test_any_text_is_a_cron_expression_or_an_invalid_request(expr: str) -> None:
    try:
        cron.check(expr)
    except InvalidRequest as exc:
        assert (exc.param, exc.code) == ("cron", "invalid_cron")


@BOUNDED
@given(expr=cron_exprs(), now=instants)
@example(expr="5-5 * * * *", now=NOW)  # croniter 7 read a one-value range as `*`
@example(expr="0 0 31 4-4 *", now=NOW)  # so this passed the check, and fired on Oct 31
def test_an_accepted_cron_expression_fires_next_when_its_fields_say(expr: str,
                                                                     now: float) -> None:
    try:
        cron.check(expr)
    except InvalidRequest:
        return
    tick = cron.next_after(expr, now)
    assert tick > now and tick % 60 == 0 and fires_at(expr, tick)
    following = cron.next_after(expr, tick)
    assert following > tick and fires_at(expr, following)
    assert cron.due_tick(expr, next_run_at=tick, now=tick) == (tick, following)


def test_a_one_value_range_is_that_value() -> None:
    """Found by the property above: `1-1` (Mondays) fired every day, `5-5` every minute."""
    monday_9am = datetime(2026, 10, 5, 9, tzinfo=UTC).timestamp()
    assert cron.next_after("0 9 * * 1-1", NOW) == monday_9am
    assert cron.next_after("5-5 * * * *", NOW) == NOW - NOW % 3600 + 3600 + 300
    with pytest.raises(InvalidRequest):
        cron.check("0 0 31 4-4 *")  # April 31 never comes


# -- the TUI's CSV and JSONL files ----------------------------------------------------

texts = st.text(max_size=200) | st.lists(
    st.sampled_from(['"', ",", "\n", "\r", "a", " ", "\x00", '{"messages": []}', "{"]),
    max_size=30).map("".join)


@BOUNDED
@given(texts)
def test_any_text_is_csv_rows_or_an_input_file_error(text: str) -> None:
    try:
        rows = csv_rows(text)
    except InputFileError as exc:
        assert exc.line is not None and exc.reason
        return
    assert all(row["messages"][0]["content"].strip() for row in rows)


prompt_text = st.text(min_size=1, max_size=40).filter(
    lambda p: p.strip() and p.strip().casefold() not in HEADER_NAMES)


@BOUNDED
@given(st.lists(prompt_text, min_size=1, max_size=5))
def test_csv_prompts_read_back_as_written(prompts: list[str]) -> None:
    out = io.StringIO()
    csv.writer(out).writerows([p] for p in prompts)
    assert [row["messages"][0]["content"] for row in csv_rows(out.getvalue())] == prompts


@BOUNDED
@given(st.lists(st.tuples(clean_text.map(str.strip).filter(bool), prompt_text),
                min_size=1, max_size=5))
def test_a_csv_table_reads_back_as_written(pairs: list[tuple[str, str]]) -> None:
    out = io.StringIO()
    csv.writer(out).writerows([("custom_id", "Prompt"), *pairs])
    assert [(row["custom_id"], row["messages"][0]["content"])
            for row in csv_rows(out.getvalue())] == pairs


@BOUNDED
@given(texts)
def test_any_text_is_jsonl_rows_or_an_input_file_error(text: str) -> None:
    try:
        jsonl_rows(text)
    except InputFileError as exc:
        assert exc.line is not None and exc.reason


@BOUNDED
@given(relay_rows)
def test_jsonl_rows_read_back_as_written(rows: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(row) + "\n" for row in rows)
    assert jsonl_rows(text) == rows
