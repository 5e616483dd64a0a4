"""`relaytui.export`: results written to .jsonl or .csv, whole or not at all."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from relaytui.client import RelayError
from relaytui.export import ExportError, matches, result_text, write_results

ITEMS: list[dict[str, Any]] = [{"custom_id": "r-1", "content": "positive"},
         {"custom_id": "r-2", "error": "upstream_error: 503"},
         {"custom_id": "r-3", "content": [0.1, 0.2]},
         {"custom_id": "r-4", "content": 'line one\nline "two", with a comma'}]


def test_jsonl_keeps_every_item_as_is(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    assert write_results(path, ITEMS) == 4
    assert [json.loads(line) for line in path.read_text().splitlines()] == ITEMS


def test_items_that_fail_midway_leave_no_file(tmp_path: Path) -> None:
    def pages() -> Iterator[dict[str, Any]]:
        yield from ITEMS[:2]
        raise RelayError(None, "cannot reach relayd")  # the next page did not come

    with pytest.raises(RelayError):
        write_results(tmp_path / "out.jsonl", pages())
    assert list(tmp_path.iterdir()) == []


def test_csv_has_one_record_per_result_even_with_newlines(tmp_path: Path) -> None:
    path = tmp_path / "out.CSV"
    assert write_results(str(path), iter(ITEMS)) == 4
    with open(path, newline="") as f:
        records = list(csv.reader(f))
    assert records[0] == ["custom_id", "content", "error"]
    assert records[2] == ["r-2", "", "upstream_error: 503"]
    assert records[3] == ["r-3", "[0.1, 0.2]", ""]
    assert records[4][1] == 'line one\nline "two", with a comma'


def test_refusals_leave_nothing_behind(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"\.jsonl or \.csv"):
        write_results(tmp_path / "out.txt", ITEMS)
    with pytest.raises(ExportError, match="no such directory"):
        write_results(tmp_path / "missing" / "out.csv", ITEMS)
    (tmp_path / "taken.csv").mkdir()
    with pytest.raises(ExportError):
        write_results(tmp_path / "taken.csv", ITEMS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.csv"]


def test_result_text_and_search() -> None:
    assert [result_text(i) for i in ITEMS[:3]] == ["positive", "upstream_error: 503",
                                                   "[0.1, 0.2]"]
    assert matches(ITEMS[1], "503") and matches(ITEMS[0], "R-1") and matches(ITEMS[0], " ")
    assert not matches(ITEMS[0], "negative")


def test_a_non_text_result_reads_as_written_not_as_escapes(tmp_path: Path) -> None:
    """A workflow's output (a JSON object) keeps its characters: `…`, not `\\u2026`."""
    item = {"custom_id": "notes-1", "content": {"summary": "tents … and more", "n": 2}}
    assert result_text(item) == '{"summary": "tents … and more", "n": 2}'
    write_results(tmp_path / "out.csv", [item])
    assert "tents … and more" in (tmp_path / "out.csv").read_text(encoding="utf-8")
