"""`relay submit` of CSV files against a real relayd: a header's prompt and custom_id
columns, `--column`, files refused before anything is sent, and relayd's refusal of a
row told by the file's line rather than the request's index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Run
from tests.e2e.harness import closed_port

pytestmark = pytest.mark.e2e



def results(relay: Callable[..., Run], job_id: str) -> list[tuple[str, str]]:
    """(custom_id, prompt) of each result: the simulator's reply echoes the prompt."""
    return [(r["custom_id"], r["content"].split("): ", 1)[1])
            for r in relay("results", job_id, "--json").json()]


def test_a_header_names_the_prompt_and_the_custom_ids(relay: Callable[..., Run],
                                                      write: Callable[[str, Any], Path]) -> None:
    path = write("reviews.csv", "custom_id,Text,stars\nr-1,good tent,5\n\nr-2,bad zip,1\n")
    run = relay("submit", path, "--model", "gpt-4o-mini", "--wait", "--json")
    assert run.code == 0, run.err
    assert results(relay, run.json()["id"]) == [("r-1", "good tent"),
                                                ("r-2", "bad zip")]
    said = relay("submit", path, "--model", "gpt-4o-mini")
    assert said.out.startswith(f"submitted 2 rows from {path} (prompt column 'Text') as job ")


def test_column_picks_the_prompt_of_a_header_relay_does_not_know(
        relay: Callable[..., Run], write: Callable[[str, Any], Path]) -> None:
    path = write("scores.csv", "id,review,score\n1,good tent,5\n2,bad zip,1\n")
    refused = relay("submit", path, "--model", "gpt-4o-mini")
    assert refused.code == 2
    assert refused.err.startswith(f"relay: {path}:1: 3 cells where one prompt was expected")
    run = relay("submit", path, "--model", "gpt-4o-mini", "--column", "review", "--wait",
                "--json")
    assert run.code == 0, run.err
    assert results(relay, run.json()["id"]) == [("row-1", "good tent"),
                                                ("row-2", "bad zip")]


def test_a_line_that_only_looks_like_a_header_is_a_prompt(
        relay: Callable[..., Run], write: Callable[[str, Any], Path]) -> None:
    path = write("prompts.csv", "prompt me\ntext two\n")
    run = relay("submit", path, "--model", "gpt-4o-mini", "--wait", "--json")
    assert run.code == 0, run.err
    assert [prompt for _, prompt in results(relay, run.json()["id"])] == ["prompt me",
                                                                         "text two"]


@pytest.mark.parametrize(("content", "column", "reason"), [
    ('one\n"two, and\nthree\n', None, ":2: unclosed quote"),
    ("custom_id,question,context\na,b,c\n", None, ":1: which column is the prompt?"),
    ("text,content\na,b\n", None, ":1: several columns could be the prompt"),
    ("prompt,reply\na,b\n", "answer", ":1: no column named 'answer'"),
])
def test_a_csv_relay_cannot_read_exits_2_before_anything_is_sent(cli: Callable[..., Run],
                                                                 write: Callable[[str, Any], Path],
                                                                 content: str, column: str | None,
                                                                 reason: str) -> None:
    path = write("bad.csv", content)
    chosen = ["--column", column] if column else []
    with closed_port() as port:  # exit 3 would mean it tried to connect
        run = cli("submit", path, "--model", "gpt-4o-mini", *chosen,
                  "--url", f"http://127.0.0.1:{port}", "--key", "k")
    assert (run.code, run.out) == (2, "")
    assert run.err.startswith(f"relay: {path}{reason}")


def test_relayds_refusal_of_a_row_names_its_line_in_the_file(
        relay: Callable[..., Run], write: Callable[[str, Any], Path]) -> None:
    path = write("ids.csv", "custom_id,prompt\na,one\n\nb,two\na,three\n")
    run = relay("submit", path, "--model", "gpt-4o-mini")
    assert run.code == 1
    assert run.err == (f"relay: {path}:5: Duplicate custom_id 'a' (first used by line 2). "
                       "(field: custom_id)\n")
    assert relay("ls", "--json").json() == []
