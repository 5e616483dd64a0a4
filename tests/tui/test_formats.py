"""`relaytui.formats`: the CSV parser the TUI's upload form and `relay submit` share (a
header only when it names a column Relay knows, the prompt column, custom_ids, and every
way a file is refused with its line), and relayd's row refusals told by file line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from relaytui.formats import InputFile, InputFileError, parse_csv, parse_jsonl, read_input


def prompts(found: InputFile) -> list[str]:
    return [row["messages"][0]["content"] for row in found.rows]


def ids(found: InputFile) -> list[str | None]:
    return [row.get("custom_id") for row in found.rows]


# (text, column) -> (prompts, custom_ids, the line of each row, prompt column)
READ = {
    "one prompt per line": (
        ("Classify: great\nClassify: awful\n", None),
        (["Classify: great", "Classify: awful"], [None, None], [1, 2], None)),
    "a first line that only starts with a header name is a prompt": (
        ("prompt one\ntext me\n", None),
        (["prompt one", "text me"], [None, None], [1, 2], None)),
    "quoted commas and a cell over three lines": (
        ('"a, b"\n"x\ny\nz"\nlast\n', None),
        (["a, b", "x\ny\nz", "last"], [None, None, None], [1, 2, 5], None)),
    "blank lines and trailing empty cells are no rows": (
        ("\none,\n\n , \ntwo\n", None),
        (["one", "two"], [None, None], [2, 5], None)),
    "a header named prompt, in any case": (
        ("PROMPT\nhello\nbye\n", None),
        (["hello", "bye"], [None, None], [2, 3], "PROMPT")),
    "a text column beside others, with custom_id": (
        ("custom_id,Text,score\nr-1,hello,5\nr-2,bye,1\n", None),
        (["hello", "bye"], ["r-1", "r-2"], [2, 3], "Text")),
    "a content column, spaces around the names": (
        (" id , content \n1,hi\n", None),
        (["hi"], [None], [2], "content")),
    "custom_id and one other column: that one is the prompt": (
        ("custom_id,question\n q1 ,why?\n", None),
        (["why?"], ["q1"], [2], "question")),
    "--column picks a column of a header Relay would not know": (
        ("id,review,score\n1,good,5\n2,bad,1\n", "Review"),
        (["good", "bad"], [None, None], [2, 3], "review")),
    "--column over a prompt column": (
        ("custom_id,prompt,reply\na,p,r\n", "reply"),
        (["r"], ["a"], [2], "reply")),
    "a short row reads as empty cells past its end": (
        ("prompt,notes\nhello\n", None),
        (["hello"], [None], [2], "prompt")),
}


@pytest.mark.parametrize(("given", "expected"), READ.values(), ids=READ.keys())
def test_a_csv_reads_as(given: tuple[str, str | None], expected: tuple[Any, ...]) -> None:
    found = parse_csv(given[0], column=given[1])
    assert (prompts(found), ids(found), found.lines, found.prompt_column) == expected


# (text, column) -> (line, words of the reason)
REFUSED = {
    "an unclosed quote, at the line it opens": (
        ('one\n"two\nthree\nfour\n', None), (2, "unclosed quote")),
    "text after a closing quote": (('"a" b\n', None), (1, "text after a closing quote")),
    "several cells without a header": (
        ("one\nr-1,hello\n", None), (2, "2 cells where one prompt was expected")),
    "a table whose header Relay does not know": (
        ("id,review\n1,good\n", None), (1, "2 cells where one prompt was expected")),
    "several columns, none named as a prompt": (
        ("custom_id,question,context\na,b,c\n", None), (1, "which column is the prompt?")),
    "two columns that could be the prompt": (
        ("text,content\na,b\n", None), (1, "several columns could be the prompt")),
    "a header of custom_id alone": (("custom_id\na\n", None), (1, "which column")),
    "two custom_id columns": (("custom_id,prompt,CUSTOM_ID\n", None), (1, "2 columns are")),
    "cells past the header": (("prompt\nhi\nsay, hi\n", None), (3, "2 cells, but the header")),
    "an empty prompt beside an id": (("custom_id,prompt\nr-1,\n", None), (2, "is empty")),
    "an empty custom_id": (("custom_id,prompt\n,hello\n", None), (2, "custom_id cell")),
    "--column that no header names": (
        ("prompt,reply\na,b\n", "answer"), (1, "no column named 'answer'")),
    "--column on a file without a header": (
        ("hello\n", "review"), (1, "no header names a column 'review'")),
}


@pytest.mark.parametrize(("given", "expected"), REFUSED.values(), ids=REFUSED.keys())
def test_a_csv_is_refused_at_its_line(given: tuple[str, str | None],
                                      expected: tuple[int, str]) -> None:
    with pytest.raises(InputFileError) as refused:
        parse_csv(given[0], path="in.csv", column=given[1])
    line, words = expected
    assert refused.value.line == line
    assert words in refused.value.reason
    assert str(refused.value).startswith(f"in.csv:{line}: ")


def test_a_file_of_only_a_header_has_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("custom_id,prompt\n")
    with pytest.raises(InputFileError, match="the file has no rows"):
        read_input(path)


def test_a_prompt_column_is_for_csv_files(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    with pytest.raises(InputFileError, match=r"a prompt column is for \.csv files"):
        read_input(path, column="prompt")


def test_a_row_refusal_is_told_by_its_file_line() -> None:
    found = parse_csv("custom_id,prompt\na,one\n\nb,two\na,three\n")
    assert found.lines == [2, 4, 5]
    assert found.locate("requests[2].custom_id") == (5, "custom_id")
    assert found.locate("requests[0]") == (2, None)
    assert found.locate("model") == (None, "model")
    assert found.locate("requests[9].custom_id") == (None, "requests[9].custom_id")
    assert (found.in_file_terms("Duplicate custom_id 'a' (first used by requests[0]).")
            == "Duplicate custom_id 'a' (first used by line 2).")


def test_jsonl_rows_keep_their_lines_past_blank_ones() -> None:
    row = '{"messages": [{"role": "user", "content": "hi\u2028there"}]}'
    found = parse_jsonl(f"{row}\n\n{row}\r\n")
    assert found.lines == [1, 3] and found.locate("requests[1]") == (3, None)
