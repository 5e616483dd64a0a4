"""Tables in and out (`relaytui.tables`) and batches made from them
(`relaytui.table_batch`): templates over CSV, JSONL and Parquet columns, and results
joined back on. Pure functions, no daemon."""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from relaytui import table_batch, table_jobs
from relaytui.formats import InputFileError
from relaytui.table_batch import (
    NOT_RUN,
    Outcome,
    Request,
    TemplateError,
    failed_rows,
    join_results,
    json_schema_format,
    outcome_of_line,
    outcome_of_result,
    parse_setting,
    parse_template,
    render_template,
    row_ids,
    table_records,
)
from relaytui.tables import (
    TableWriteError,
    parse_csv_table,
    parse_jsonl_table,
    read_table,
    write_table,
)

TRICKY = ('id,review,stars\n'
          'a,"Good, solid, cheap",5\n'
          'b,"Line one\nline two ""quoted""",3\n'
          '\n'
          'c,Ünïcödé ✓ 日本語 🙂,4\n')


def prompts(records: list[dict[str, Any]]) -> list[str]:
    return [r["body"]["messages"][-1]["content"] for r in records]


def chat_line(custom_id: str, content: str, *, finish: str = "stop") -> dict[str, Any]:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": finish}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}}
    return {"id": "batch_req_x", "custom_id": custom_id,
            "response": {"status_code": 200, "request_id": "req_x", "body": body},
            "error": None}


def error_line(custom_id: str) -> dict[str, Any]:
    return {"id": "batch_req_y", "custom_id": custom_id, "response": None,
            "error": {"code": "upstream_error", "message": "503 from upstream"}}


# -- the template ----------------------------------------------------------------------


def test_a_template_fills_columns_and_keeps_doubled_braces_literal() -> None:
    template = parse_template('Classify {review} as {{"label": …}} ({stars}/5)')
    assert template.columns == ["review", "stars"]
    assert render_template(template, {"review": "nice", "stars": 4}) == (
        'Classify nice as {"label": …} (4/5)')


@pytest.mark.parametrize(("text", "message"), [
    ("Classify {review", "an unclosed '{' at character 10"),
    ("Classify review}", "a lone '}' at character 16"),
    ("Classify {}", "'{}' at character 10 names no column"),
    ("   ", "the template is empty"),
    ("{a{b}}", "an unclosed '{' at character 1"),
])
def test_a_malformed_template_is_refused_saying_where(text: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        parse_template(text)


def test_nothing_inside_braces_is_evaluated() -> None:
    template = parse_template("{review.upper()} {0}")
    assert template.columns == ["review.upper()", "0"]
    assert render_template(template, {"review.upper()": "x", "0": "y"}) == "x y"


# -- CSV -------------------------------------------------------------------------------


def test_quoted_commas_newlines_and_unicode_survive_the_template() -> None:
    table = parse_csv_table(TRICKY, path="t.csv")
    assert table.columns == ["id", "review", "stars"] and table.lines == [2, 3, 6]
    records = table_records(table, parse_template("Review: {review}"),
                            request=Request("gpt-4o-mini", system="One word."),
                            id_column="id")
    assert prompts(records) == ["Review: Good, solid, cheap",
                                'Review: Line one\nline two "quoted"',
                                "Review: Ünïcödé ✓ 日本語 🙂"]
    assert [r["custom_id"] for r in records] == ["a", "b", "c"]
    assert records[0]["body"]["messages"][0] == {"role": "system", "content": "One word."}
    assert records[0]["url"] == "/v1/chat/completions"


def test_a_missing_column_is_refused_naming_it_and_the_header_line() -> None:
    table = parse_csv_table(TRICKY, path="t.csv")
    with pytest.raises(InputFileError) as caught:
        table_records(table, parse_template("{text}"), request=Request("m"))
    assert caught.value.line == 1 and "'text'" in caught.value.reason
    assert "'id', 'review', 'stars'" in caught.value.reason


def test_an_empty_value_is_refused_naming_the_column_and_its_line() -> None:
    table = parse_csv_table("id,review\n1,fine\n2,\"\n\"\n3,  \n", path="t.csv")
    with pytest.raises(InputFileError) as caught:
        table_records(table, parse_template("{review}"), request=Request("m"))
    assert (caught.value.line, caught.value.reason) == (
        3, "the 'review' value is empty (the template uses it)")


def test_row_numbers_are_the_default_custom_ids_and_id_columns_must_be_unique() -> None:
    table = parse_csv_table("id,review\nx,a\nx,b\n", path="t.csv")
    assert row_ids(table, None) == ["row-1", "row-2"]
    with pytest.raises(InputFileError, match=r"t\.csv:3: custom_id 'x' again"):
        row_ids(table, "id")
    with pytest.raises(InputFileError, match="no column 'key' for --id-column"):
        row_ids(table, "key")


def test_a_row_longer_than_the_header_and_duplicate_names_are_refused() -> None:
    with pytest.raises(InputFileError, match=r"t\.csv:2: 3 cells, but the header"):
        parse_csv_table("a,b\n1,2,3\n", path="t.csv")
    with pytest.raises(InputFileError, match="two columns are named 'a'"):
        parse_csv_table("a,a\n1,2\n", path="t.csv")


@pytest.mark.timeout(30)
def test_ten_thousand_rows_go_through_the_template_and_join_back(tmp_path: Path) -> None:
    source = tmp_path / "big.csv"
    with open(source, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["n", "review"])
        writer.writerows([n, f"review {n}, with a comma\nand ✓"] for n in range(10_000))
    table = read_table(source)
    records = table_records(table, parse_template("{review}"), request=Request("m"))
    assert len(records) == 10_000 and prompts(records)[9_999] == (
        "review 9999, with a comma\nand ✓")
    ids = row_ids(table, None)
    outcomes = dict(outcome_of_line(chat_line(i, "positive")) for i in ids if i != "row-7")
    joined = join_results(table, ids, outcomes=outcomes)
    out = tmp_path / "out.csv"
    assert write_table(out, joined.columns, rows=joined.rows) == 10_000
    back = parse_csv_table(out.read_text(encoding="utf-8"), path="out.csv")
    assert back.columns == ["n", "review", "content", "error", "finish_reason",
                            "prompt_tokens", "completion_tokens", "total_tokens"]
    assert back.rows[0] == {"n": "0", "review": "review 0, with a comma\nand ✓",
                            "content": "positive", "error": "", "finish_reason": "stop",
                            "prompt_tokens": "7", "completion_tokens": "2",
                            "total_tokens": "9"}
    assert back.rows[6]["error"] == NOT_RUN and back.rows[6]["content"] == ""


# -- JSONL -----------------------------------------------------------------------------


def test_a_jsonl_of_objects_is_a_table_and_one_of_records_is_not() -> None:
    table = parse_jsonl_table('{"a": 1, "b": {"x": [1]}}\n\n{"c": true}\n', path="t.jsonl")
    assert table.columns == ["a", "b", "c"] and table.lines == [1, 3]
    rendered = render_template(parse_template("{a} {b} {c}"), {**table.rows[0], "c": True})
    assert rendered == '1 {"x": [1]} true'
    with pytest.raises(InputFileError) as caught:
        table_records(table, parse_template("{a}"), request=Request("m"))
    assert caught.value.line == 3 and "'a'" in caught.value.reason
    record = {"custom_id": "1", "method": "POST", "url": "/v1/chat/completions", "body": {}}
    with pytest.raises(InputFileError, match="every line is an OpenAI record"):
        parse_jsonl_table(json.dumps(record) + "\n", path="r.jsonl")
    mixed = parse_jsonl_table(json.dumps(record) + '\n{"a": 1}\n', path="m.jsonl")
    assert mixed.columns == ["custom_id", "method", "url", "body", "a"]


# -- Parquet ---------------------------------------------------------------------------


def parquet(tmp_path: Path) -> Path:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "review": pa.array(["good", None, "bad, really"], pa.string()),
        "score": pa.array([4.5, None, 1.0], pa.float64()),
        "verified": pa.array([True, False, None], pa.bool_()),
        "day": pa.array([dt.date(2026, 1, 2), None, dt.date(2026, 3, 4)], pa.date32()),
    }), path)
    return path


def test_parquet_columns_of_any_type_fill_the_template(tmp_path: Path) -> None:
    table = read_table(parquet(tmp_path))
    assert table.columns == ["id", "review", "score", "verified", "day"]
    template = parse_template("#{id} on {day}: {score} verified={verified}")
    assert render_template(template, table.rows[0]) == "#1 on 2026-01-02: 4.5 verified=true"
    with pytest.raises(InputFileError) as caught:
        table_records(table, parse_template("{review}"), request=Request("m"))
    assert str(caught.value).endswith("t.parquet: row 2: the 'review' value is empty (the "
                                      "template uses it)")


def test_a_parquet_join_keeps_the_input_types_and_nulls(tmp_path: Path) -> None:
    table = read_table(parquet(tmp_path))
    ids = row_ids(table, "id")
    outcomes = dict([outcome_of_line(chat_line("1", '{"label": "pos", "score": 0.9}')),
                     outcome_of_line(error_line("3"))])
    joined = join_results(table, ids, outcomes=outcomes, expand=True)
    out = tmp_path / "out.parquet"
    write_table(out, joined.columns, rows=joined.rows, types=joined.types)
    back = pq.read_table(out)
    assert back.schema.field("id").type == pa.int64()
    assert back.schema.field("day").type == pa.date32()
    assert back.schema.field("prompt_tokens").type == pa.int64()
    assert back.schema.field("error").type == pa.string()
    rows = back.to_pylist()
    assert rows[0]["label"] == "pos" and rows[0]["score"] == 4.5  # input's score kept
    assert rows[0]["result_score"] == 0.9  # the answer's field, renamed beside it
    assert rows[1]["review"] is None and rows[1]["error"] == NOT_RUN
    assert rows[2]["error"] == "upstream_error: 503 from upstream"
    assert rows[2]["content"] is None and rows[2]["label"] is None


# -- results ---------------------------------------------------------------------------


def test_failed_rows_are_the_input_rows_to_submit_again() -> None:
    table = parse_csv_table(TRICKY, path="t.csv")
    ids = row_ids(table, "id")
    outcomes = dict([outcome_of_line(chat_line("a", "ok")), outcome_of_line(error_line("b"))])
    retry = failed_rows(table, ids, outcomes=outcomes)
    assert retry.columns == ["id", "review", "stars"]
    assert [r["id"] for r in retry.rows] == ["b", "c"]  # c never ran


def test_results_for_rows_the_table_lacks_mean_the_wrong_table() -> None:
    table = parse_csv_table(TRICKY, path="t.csv")
    outcomes = dict([outcome_of_line(chat_line("zzz", "ok"))])
    with pytest.raises(ValueError, match="custom_id 'zzz', which no row of the table has"):
        join_results(table, row_ids(table, "id"), outcomes=outcomes)


def test_an_upstream_refusal_in_the_error_file_is_the_rows_error() -> None:
    line = {"custom_id": "a", "error": None, "response": {
        "status_code": 400, "body": {"error": {"message": "bad max_tokens",
                                               "code": "invalid_value"}}}}
    assert outcome_of_line(line) == ("a", Outcome(error="invalid_value: bad max_tokens"))


def test_a_relay_jobs_results_join_without_finish_reason_or_tokens() -> None:
    assert outcome_of_result({"custom_id": "a", "content": {"x": 1}}) == (
        "a", Outcome(content='{"x": 1}'))
    assert outcome_of_result({"custom_id": "b", "error": "timeout"}) == (
        "b", Outcome(error="timeout"))


def test_an_added_column_the_input_has_is_renamed() -> None:
    table = parse_csv_table("content,error\nx,y\n", path="t.csv")
    joined = join_results(table, ["row-1"], outcomes={})
    assert joined.columns[:4] == ["content", "error", "result_content", "result_error"]


# -- body parameters -------------------------------------------------------------------


@pytest.mark.parametrize(("text", "pair"), [
    ("temperature=0", ("temperature", 0)),
    ("max_tokens=5", ("max_tokens", 5)),
    ("top_p=0.5", ("top_p", 0.5)),
    ("logprobs=true", ("logprobs", True)),
    ("user=null", ("user", None)),
    ("stop=END", ("stop", "END")),
    ('stop=["a"]', ("stop", '["a"]')),
    ("user=a=b", ("user", "a=b")),
    ('user="7"', ("user", "7")),
])
def test_settings_are_json_scalars_where_they_parse(text: str, pair: tuple[str, Any]) -> None:
    assert parse_setting(text) == pair


@pytest.mark.parametrize("text", ["temperature", "=1", "model=x", "messages=[]"])
def test_settings_that_are_not_body_parameters_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_setting(text)


def test_a_schema_file_becomes_a_json_schema_response_format() -> None:
    schema = {"type": "object", "properties": {"label": {"type": "string"}}}
    assert json_schema_format(schema, name="my schema") == {
        "type": "json_schema", "json_schema": {"name": "my_schema", "schema": schema}}
    wrapped = {"name": "label", "schema": schema, "strict": True}
    assert json_schema_format(wrapped, name="x")["json_schema"] == wrapped


# -- writing ---------------------------------------------------------------------------


def test_a_table_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")

    def rows() -> Any:
        yield {"a": 1}
        raise RuntimeError("the results stopped coming")

    with pytest.raises(RuntimeError):
        write_table(target, ["a"], rows=rows())
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == [
        "out.jsonl"]
    with pytest.raises(TableWriteError, match=r"choose a \.csv, \.jsonl or \.parquet"):
        write_table(tmp_path / "out.xlsx", ["a"], rows=[])
    write_table(target, ["a", "b"], rows=[{"a": dt.date(2026, 1, 1), "b": None}])
    assert json.loads(target.read_text()) == {"a": "2026-01-01", "b": None}


def test_a_batch_that_names_a_table_without_its_digest_is_not_trusted(
        tmp_path: Path) -> None:
    """Anyone in the workspace can write a batch's metadata: a table named without the
    digest of what it held is never read for a join."""
    table = tmp_path / "input.csv"
    table.write_text("id,review\n1,fine\n", encoding="utf-8")
    metadata = {table_jobs.TABLE: str(table)}
    with pytest.raises(table_jobs.NoTable, match="does not say what it held"):
        table_jobs.recorded_table({"id": "batch_x", "metadata": metadata})
    metadata[table_jobs.DIGEST] = table_jobs.digest(table)
    assert table_jobs.recorded_table({"id": "batch_x", "metadata": metadata}) == table


def test_an_added_column_never_overwrites_an_input_column() -> None:
    assert table_batch._free("content", ["content", "result_content"]) == \
        "result_result_content"
    assert table_batch._free("error", ["review"]) == "error"
