"""`relay submit --template` (a table in: CSV, JSONL of objects, Parquet) and `relay
results --join / --failed-only` (the same table out, with the answers) against a real
relayd and simulator: what is sent, what is refused before anything is, and the join."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.cli.conftest import Run

pytestmark = pytest.mark.e2e

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
LABELS = {"positive", "negative", "neutral"}
TEMPLATE = "Classify the sentiment of: {review}"


def sent_records(http: httpx.Client, batch_id: str) -> list[dict[str, Any]]:
    batch = http.get(f"/v1/batches/{batch_id}").json()
    text = http.get(f"/v1/files/{batch['input_file_id']}/content").text
    return [json.loads(line) for line in text.splitlines()]


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def test_the_sample_reviews_go_in_and_come_out_labelled(
        relay: Callable[..., Run], http: httpx.Client, tmp_path: Path) -> None:
    run = relay("submit", SAMPLES / "reviews.csv", "--model", "gpt-4o-mini", "--template",
                TEMPLATE, "--system", "Answer with one word.", "--id-column", "id",
                "--set", "temperature=0", "--set", "max_tokens=5", "--wait", "--json")
    assert run.code == 0, run.err
    batch = run.json()
    assert batch["request_counts"] == {"total": 300, "completed": 300, "failed": 0}
    first = sent_records(http, batch["id"])[0]
    assert first["custom_id"] == "r001" and first["url"] == "/v1/chat/completions"
    assert first["body"] == {
        "model": "gpt-4o-mini", "temperature": 0, "max_tokens": 5,
        "messages": [{"role": "system", "content": "Answer with one word."},
                     {"role": "user", "content": "Classify the sentiment of: Exactly what I "
                      "needed. The sound is fantastic, better than the pricier brands I've "
                      "tried. Happy customer."}]}
    out = tmp_path / "reviews-labelled.csv"
    joined = relay("results", batch["id"], "-o", out, "--join", SAMPLES / "reviews.csv")
    assert joined.code == 0, joined.err
    assert joined.out.startswith(f"wrote 300 rows (0 failed) of {SAMPLES / 'reviews.csv'} "
                                 f"joined with job {batch['id']} to {out}")
    rows = read_csv(out)
    assert list(rows[0]) == ["id", "review", "content", "error", "finish_reason",
                             "prompt_tokens", "completion_tokens", "total_tokens"]
    assert [r["id"] for r in rows] == [f"r{n:03d}" for n in range(1, 301)]
    assert {r["content"] for r in rows} == LABELS and rows[0]["content"] == "positive"
    assert all(r["finish_reason"] == "stop" and int(r["total_tokens"]) > 0 for r in rows)


def test_failed_rows_are_joined_with_their_error_and_written_to_retry(
        relay: Callable[..., Run], write: Callable[[str, Any], Path], tmp_path: Path) -> None:
    path = write("mixed.csv", 'sku,review\na,"fine, really"\nb,"broken [sim:fail=400]"\n'
                 'c,"line one\nline two ✓"\n')
    run = relay("submit", path, "--model", "gpt-4o-mini", "--template", "{review}",
                "--wait", "--json")
    assert run.code == 4, run.err  # completed, with a failed row
    batch_id = run.json()["id"]
    out = tmp_path / "out.jsonl"
    assert relay("results", batch_id, "--join", "-o", out).code == 0  # the table remembered
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["sku"] for r in rows] == ["a", "b", "c"]
    assert rows[1]["content"] is None and "400" in rows[1]["error"]
    assert rows[2]["review"] == "line one\nline two ✓" and rows[2]["error"] is None
    retry = tmp_path / "retry.csv"
    again = relay("results", batch_id, "--failed-only", "-o", retry, "--json")
    assert again.code == 0, again.err
    assert again.json()["rows"] == 1 and again.json()["failed"] == 1
    assert read_csv(retry) == [{"sku": "b", "review": "broken [sim:fail=400]"}]
    resubmit = relay("submit", retry, "--model", "gpt-4o-mini", "--template", "{review}",
                     "--json")
    assert resubmit.code == 0, resubmit.err


def test_a_changed_table_is_not_joined_unless_named(
        relay: Callable[..., Run], write: Callable[[str, Any], Path], tmp_path: Path) -> None:
    path = write("t.csv", "review\ngood\n")
    run = relay("submit", path, "--model", "gpt-4o-mini", "--template", "{review}",
                "--wait", "--json")
    path.write_text("review\ngood\nbad\n")
    refused = relay("results", run.json()["id"], "--join", "-o", tmp_path / "o.csv")
    assert refused.code == 2 and "has changed since job" in refused.err
    wrong = relay("results", run.json()["id"], "--join", path, "-o", tmp_path / "o.csv")
    assert wrong.code == 0, wrong.err  # named: joined; the new row never ran
    assert [r["error"] for r in read_csv(tmp_path / "o.csv")][1].startswith("no result")
    printed = relay("results", run.json()["id"], "--join", path, "--json")
    assert [(r["review"], r["content"] is None) for r in printed.json()] == [
        ("good", False), ("bad", True)]
    lines = relay("results", run.json()["id"], "--join", path).out.splitlines()
    assert [json.loads(line)["review"] for line in lines] == ["good", "bad"]


def test_a_parquet_table_in_and_a_parquet_table_out(
        relay: Callable[..., Run], http: httpx.Client, tmp_path: Path) -> None:
    source = tmp_path / "items.parquet"
    pq.write_table(pa.table({"n": pa.array([10, 20], pa.int32()),
                             "note": pa.array(["ok", None]),
                             "text": pa.array(["alpha", "beta"])}), source)
    schema = tmp_path / "label.json"
    schema.write_text(json.dumps({"type": "object",
                                  "properties": {"label": {"type": "string"}}}))
    run = relay("submit", source, "--model", "gpt-4o-mini", "--template", "#{n}: {text}",
                "--response-format", schema, "--wait", "--json")
    assert run.code == 0, run.err
    body = sent_records(http, run.json()["id"])[1]["body"]
    assert body["messages"] == [{"role": "user", "content": "#20: beta"}]
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "label", "schema": json.loads(schema.read_text())}}
    out = tmp_path / "out.parquet"
    assert relay("results", run.json()["id"], "--join", source, "--expand", "-o",
                 out).code == 0
    back = pq.read_table(out)
    assert back.schema.field("n").type == pa.int32()
    assert back.column("note").to_pylist() == ["ok", None]
    # the simulator answers a json_schema response_format with JSON that fits it
    answer = json.loads(back.column("content").to_pylist()[1])
    assert answer["label"].startswith("Simulated reply")


@pytest.mark.parametrize(("content", "argv", "message"), [
    ("id,review\n1,good\n", ["--template", "{text}"],
     ":1: the template names a column 'text', which the table does not have"),
    ('id,review\n1,good\n2,"\n"\n', ["--template", "{review}"],
     ":3: the 'review' value is empty (the template uses it)"),
    ("id,review\n1,good\n", ["--template", "Classify {review"],
     "--template: malformed template: an unclosed '{' at character 10"),
    ("id,review\n1,good\n1,bad\n", ["--template", "{review}", "--id-column", "id"],
     ":3: custom_id '1' again (first on line 2)"),
    ("id,review\n1,good\n", ["--template", "{review}", "--set", "model=x"],
     "--set 'model' is not a body parameter"),
    ("id,review\n1,good\n", ["--template", "{review}", "--priority", "2"],
     "--priority does not go with --template"),
    ("id,review\n1,good\n", ["--set", "temperature=0"], "--set goes with --template"),
])
def test_a_bad_table_or_template_is_refused_before_anything_is_sent(
        relay: Callable[..., Run], write: Callable[[str, Any], Path], http: httpx.Client,
        content: str, argv: list[str], message: str) -> None:
    path = write("bad.csv", content)
    run = relay("submit", path, "--model", "gpt-4o-mini", *argv)
    assert run.code == 2 and message in run.err, run.err
    assert http.get("/v1/batches", params={"dialect": "all"}).json()["data"] == []
    assert http.get("/v1/files").json()["data"] == []


def test_a_jsonl_of_objects_is_a_table_and_one_of_records_is_refused(
        relay: Callable[..., Run], write: Callable[[str, Any], Path],
        http: httpx.Client) -> None:
    table = write("rows.jsonl", [{"q": "one", "tags": ["a"]}, {"q": "two", "tags": []}])
    run = relay("submit", table, "--model", "gpt-4o-mini", "--template", "{q} {tags}",
                "--json")
    assert run.code == 0, run.err
    assert [r["body"]["messages"][0]["content"] for r in sent_records(
        http, run.json()["id"])] == ['one ["a"]', "two []"]
    record = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": "gpt-4o-mini", "messages": []}}
    records = write("records.jsonl", [record])
    refused = relay("submit", records, "--model", "gpt-4o-mini", "--template", "{body}")
    assert refused.code == 2 and "every line is an OpenAI record" in refused.err
    parquet = relay("submit", write("t.parquet", b"x"), "--model", "gpt-4o-mini")
    assert parquet.code == 2 and "is a table: pass --template" in parquet.err
