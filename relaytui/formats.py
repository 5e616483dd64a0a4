"""Reading batch input files into Relay rows: `.csv` and `.jsonl` (Relay rows
`{custom_id?, messages}` or OpenAI records). One parser per format, shared by the demo,
the CLI and the TUI. Errors carry the line number and the reason, and every row keeps
the file line it starts on, so relayd's refusal of `requests[3]` is told as a line.

A CSV is one prompt per line (the Relay spec) unless its first row is a header: one of
its cells is `prompt`, `text`, `content` or `custom_id` (any case, spaces around
ignored), or the column asked for. A header's prompt column is the one named `prompt`,
`text` or `content`, the column asked for, or the only one besides `custom_id`; a
`custom_id` column names the rows. Nothing is dropped quietly: a line of several cells
without a header, a header that leaves the prompt open, cells past the header, an empty
prompt beside other cells and an unclosed quote are each refused with their line.

`read_records` reads a `.jsonl` of OpenAI records for one endpoint (`relay submit
--endpoint`): whole records, or request bodies it wraps into records. `openai_records`
tells a `.jsonl` of whole OpenAI records (every line one, `is_openai_record`), which
`relay submit` sends as an OpenAI batch for the endpoint they name (`records_endpoint`)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BATCH_ENDPOINTS = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings",
                   "/v1/responses", "/v1/moderations")  # OpenAI's Batch API endpoints
JSONL = (".jsonl", ".ndjson")
PROMPT_NAMES = ("prompt", "text", "content")
HEADER_NAMES = frozenset({*PROMPT_NAMES, "custom_id"})
_ROW_PARAM = re.compile(r"requests\[(\d+)\]")
CHOOSE = "choose the prompt column with --column NAME (in the upload form: Prompt column)"


class InputFileError(ValueError):
    def __init__(self, path: str, line: int | None, reason: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


@dataclass(frozen=True)
class InputFile:
    """A file's rows, ready for `POST /v1/batches` `requests`, with the line each row
    starts on; for a CSV with a header, the name of its prompt column."""

    rows: list[dict[str, Any]]
    lines: list[int] = field(default_factory=list)
    prompt_column: str | None = None

    def locate(self, param: str | None) -> tuple[int | None, str | None]:
        """The file line and the row's field that relayd's `param` names:
        `requests[3].custom_id` is (the line of the fourth row, `custom_id`); a param
        naming no row is (None, param)."""
        match = _ROW_PARAM.match(param or "")
        line = self._line(int(match.group(1))) if match else None
        if match is None or line is None or param is None:
            return None, param
        return line, param[match.end():].lstrip(".") or None

    def in_file_terms(self, text: str) -> str:
        """relayd's message with each `requests[i]` named by its file line."""
        def name(match: re.Match[str]) -> str:
            line = self._line(int(match.group(1)))
            return match.group(0) if line is None else f"line {line}"
        return _ROW_PARAM.sub(name, text)

    def _line(self, index: int) -> int | None:
        return self.lines[index] if 0 <= index < len(self.lines) else None


def read_input(path: str | Path, *, column: str | None = None) -> InputFile:
    """A `.csv` or `.jsonl` file's rows; `column` names a CSV's prompt column."""
    p = Path(path)
    text = read_text(p)
    suffix = p.suffix.lower()
    if suffix == ".csv":
        found = parse_csv(text, path=str(p), column=column)
    elif suffix in JSONL:
        if column:
            raise InputFileError(str(p), None, "a prompt column is for .csv files; a "
                                 ".jsonl row has its messages")
        found = parse_jsonl(text, path=str(p))
    else:
        raise InputFileError(str(p), None, "expected a .csv or .jsonl file")
    if not found.rows:
        raise InputFileError(str(p), None, "the file has no rows")
    return found


def read_text(p: Path) -> str:
    try:
        return p.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputFileError(str(p), None, f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputFileError(str(p), None, "not UTF-8 text (is it a binary file?)") from exc


def read_records(path: str | Path, *, endpoint: str,
                 model: str | None = None) -> InputFile:
    """A `.jsonl` file of OpenAI records for `endpoint` (`parse_records`)."""
    p = Path(path)
    if p.suffix.lower() not in JSONL:
        raise InputFileError(str(p), None, "a batch for an endpoint takes a .jsonl file")
    return parse_records(read_text(p), endpoint=endpoint, model=model, path=str(p))


def openai_records(path: str | Path) -> list[tuple[int, dict[str, Any]]] | None:
    """The lines of a `.jsonl` file whose every line is an OpenAI record
    (`is_openai_record`), each with its line number; None for any other file (read no
    further than its first line that is not a record). A line that is not JSON is an
    `InputFileError`, as `read_input` would say."""
    p = Path(path)
    if p.suffix.lower() not in JSONL:
        return None
    found: list[tuple[int, dict[str, Any]]] = []
    for number, value in jsonl_values(read_text(p), path=str(p)):
        if not is_openai_record(value):
            return None
        found.append((number, value))
    return found or None


def records_endpoint(records: list[tuple[int, dict[str, Any]]], *, path: str) -> str:
    """The endpoint of a file of whole OpenAI records: the `url` every record names (an
    OpenAI batch has one), which must be one of the Batch API's endpoints."""
    (first_line, first), *rest = records
    url = first["url"]
    for number, record in rest:
        if record["url"] != url:
            raise InputFileError(path, number, f"the record's url {record['url']!r} is not "
                                 f"line {first_line}'s {url!r}: a batch has one endpoint, so "
                                 "split the file by url")
    if url not in BATCH_ENDPOINTS:
        raise InputFileError(path, first_line, f"the record's url {url!r} is not an endpoint "
                             f"of the OpenAI Batch API ({', '.join(BATCH_ENDPOINTS)})")
    return str(url)


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows from a `.csv` or `.jsonl` file, ready for `POST /v1/batches` `requests`."""
    return read_input(path).rows


# -- CSV -------------------------------------------------------------------------------

Record = tuple[int, list[str]]  # the line it starts on, its cells (trailing empty ones cut)


def csv_rows(text: str, *, path: str = "<csv>",
             column: str | None = None) -> list[dict[str, Any]]:
    """The rows of `parse_csv` alone."""
    return parse_csv(text, path=path, column=column).rows


def parse_csv(text: str, *, path: str = "<csv>", column: str | None = None) -> InputFile:
    records = csv_records(text, path)
    if not records:
        return InputFile([])
    line, first = records[0]
    if _is_header(first, column):
        return _table(records, path=path, column=column)
    if column:
        raise InputFileError(path, line, f"no header names a column {column!r}: the first "
                             "row is not a header")
    return _prompts(records, path=path)


def csv_records(text: str, path: str) -> list[Record]:
    """Every record that is not blank. Strict, so an unclosed quote is an error (a
    lenient reader would take the rest of the file as one prompt)."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    found: list[Record] = []
    start = 1
    try:
        for cells in reader:
            while cells and not cells[-1].strip():
                cells.pop()
            if cells:
                found.append((start, cells))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise _malformed(exc, path, start=start, at=reader.line_num) from exc
    return found


def _malformed(exc: csv.Error, path: str, *, start: int, at: int) -> InputFileError:
    problem = str(exc)
    if problem == "unexpected end of data":
        return InputFileError(path, start, "unclosed quote: a quoted cell starts on this "
                              "line and never ends")
    if problem.endswith("expected after '\"'"):
        return InputFileError(path, at, "text after a closing quote: quote the whole cell "
                              'and double the quotes inside it ("")')
    return InputFileError(path, at, f"malformed CSV: {problem}")


def _is_header(cells: list[str], column: str | None) -> bool:
    names = {_name(c) for c in cells}
    return bool(names & HEADER_NAMES) or (bool(column) and _name(column or "") in names)


def _name(cell: str) -> str:
    return cell.strip().casefold()


def _prompts(records: list[Record], *, path: str) -> InputFile:
    """No header: every record is one prompt, of one cell."""
    for line, cells in records:
        if len(cells) > 1:
            raise InputFileError(path, line, f"{len(cells)} cells where one prompt was "
                                 "expected. Quote a prompt that holds a comma; for a table, "
                                 "start it with a header naming the prompt column (prompt, "
                                 f"text or content), or {CHOOSE}")
    return InputFile([_row(cells[0]) for _, cells in records],
                     [line for line, _ in records])


def _table(records: list[Record], *, path: str, column: str | None) -> InputFile:
    (header_line, header), body = records[0], records[1:]
    prompt = _prompt_column(header, path=path, line=header_line, column=column)
    ids = _only(header, "custom_id", path=path, line=header_line)
    rows = []
    for line, cells in body:
        if len(cells) > len(header):
            raise InputFileError(path, line, f"{len(cells)} cells, but the header (line "
                                 f"{header_line}) names {len(header)} columns")
        rows.append(_table_row(cells, header, prompt, ids, path=path, line=line))
    return InputFile(rows, [line for line, _ in body], header[prompt].strip())


def _table_row(cells: list[str], header: list[str], prompt: int, ids: int | None, *,
               path: str, line: int) -> dict[str, Any]:
    cells = cells + [""] * (len(header) - len(cells))
    if not cells[prompt].strip():
        raise InputFileError(path, line, f"the {header[prompt].strip()!r} cell (the prompt) "
                             "is empty")
    if ids is None:
        return _row(cells[prompt])
    custom_id = cells[ids].strip()
    if not custom_id:
        raise InputFileError(path, line, "the custom_id cell is empty")
    return _row(cells[prompt], custom_id=custom_id)


def _prompt_column(header: list[str], *, path: str, line: int, column: str | None) -> int:
    if column:
        found = _only(header, _name(column), path=path, line=line)
        if found is None:
            raise InputFileError(path, line, f"no column named {column!r}; the header has "
                                 f"{_listing(header)}")
        return found
    named = [i for i, cell in enumerate(header) if _name(cell) in PROMPT_NAMES]
    if len(named) > 1:
        raise InputFileError(path, line, f"several columns could be the prompt "
                             f"({_listing([header[i] for i in named])}): {CHOOSE}")
    if named:
        return named[0]
    others = [i for i, cell in enumerate(header) if _name(cell) != "custom_id"]
    if len(others) == 1:
        return others[0]
    raise InputFileError(path, line, f"which column is the prompt? The header has "
                         f"{_listing(header)} and none is named prompt, text or content: "
                         f"rename one, or {CHOOSE}")


def _only(header: list[str], name: str, *, path: str, line: int) -> int | None:
    """The one column called `name`, or None; two of them is an error."""
    found = [i for i, cell in enumerate(header) if _name(cell) == name]
    if len(found) > 1:
        raise InputFileError(path, line, f"{len(found)} columns are named {name!r}")
    return found[0] if found else None


def _listing(cells: list[str]) -> str:
    return ", ".join(repr(c.strip()) for c in cells)


def _row(prompt: str, *, custom_id: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {} if custom_id is None else {"custom_id": custom_id}
    row["messages"] = [{"role": "user", "content": prompt}]
    return row


# -- JSONL -----------------------------------------------------------------------------


def jsonl_rows(text: str, *, path: str = "<jsonl>") -> list[dict[str, Any]]:
    """The rows of `parse_jsonl` alone."""
    return parse_jsonl(text, path=path).rows


def jsonl_values(text: str, *, path: str) -> Iterator[tuple[int, Any]]:
    """Each non-blank line's JSON value, with its line number (as editors count lines);
    a line that is not JSON is an `InputFileError` naming it."""
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFileError(path, number, f"not valid JSON: {exc.msg}") from exc


def parse_jsonl(text: str, *, path: str = "<jsonl>") -> InputFile:
    rows, lines = [], []
    for number, row in jsonl_values(text, path=path):
        rows.append(_jsonl_row(row, path=path, number=number))
        lines.append(number)
    return InputFile(rows, lines)


def _jsonl_row(row: object, *, path: str, number: int) -> dict[str, Any]:
    """A Relay row `{custom_id?, messages}`, or an OpenAI record `{custom_id, method, url,
    body}` passed through whole (relayd reads those with its OpenAI parser)."""
    if isinstance(row, dict) and "body" in row:
        if not isinstance(row.get("custom_id"), str):
            raise InputFileError(path, number, "an OpenAI record needs a 'custom_id' string")
        return row
    if not isinstance(row, dict) or not isinstance(row.get("messages"), list):
        raise InputFileError(path, number, "expected an object with a 'messages' array "
                             "(a Relay row) or an OpenAI record with 'body'; for a table "
                             "of columns, pass --template")
    return {k: row[k] for k in ("custom_id", "messages") if k in row}


# -- OpenAI records of one endpoint ----------------------------------------------------

RECORD_KEYS = frozenset({"custom_id", "method", "url", "body"})


def is_openai_record(value: object) -> bool:
    """The one rule that tells an OpenAI record from a table's row (`relaytui.tables`):
    an object with all of `custom_id`, `method`, `url` and `body`. A `.jsonl` whose lines
    all are records is OpenAI records; any other `.jsonl` of objects is a table."""
    return isinstance(value, dict) and value.keys() >= RECORD_KEYS


def parse_records(text: str, *, endpoint: str, model: str | None = None,
                  path: str = "<jsonl>") -> InputFile:
    """A `.jsonl` of OpenAI records for `endpoint` (`/v1/responses`, `/v1/moderations`,
    …), as `relay submit --endpoint` uploads it. A line is a whole record
    `{custom_id, method, url, body}` (its url must be the endpoint), or the request body
    alone, with an optional `custom_id` (otherwise `row-N`, N its line); `model` fills a
    body without one. relayd checks each body when it validates the batch."""
    return records_of(jsonl_values(text, path=path), endpoint=endpoint, model=model,
                      path=path)


def records_of(values: Iterable[tuple[int, Any]], *, endpoint: str, model: str | None = None,
               path: str = "<jsonl>") -> InputFile:
    """`parse_records` of lines already read (`jsonl_values`, `openai_records`)."""
    rows, lines = [], []
    for number, value in values:
        rows.append(_record(value, endpoint=endpoint, model=model, where=(path, number)))
        lines.append(number)
    if not rows:
        raise InputFileError(path, None, "the file has no records")
    return InputFile(rows, lines)


def _record(value: object, *, endpoint: str, model: str | None,
            where: tuple[str, int]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputFileError(*where, "expected a JSON object (a record or a request body)")
    if is_openai_record(value) or ("body" in value and set(value) <= RECORD_KEYS):
        record = {"method": "POST", "url": endpoint, **value}
        if record["url"] != endpoint:
            raise InputFileError(*where, f"the record's url {record['url']!r} is not the "
                                 f"batch's endpoint {endpoint} (--endpoint)")
    else:
        body = {k: v for k, v in value.items() if k != "custom_id"}
        record = {"custom_id": value.get("custom_id", f"row-{where[1]}"), "method": "POST",
                  "url": endpoint, "body": body}
    if not isinstance(record["custom_id"], str) or not record["custom_id"]:
        raise InputFileError(*where, "'custom_id' must be a non-empty string")
    body = record["body"]
    if isinstance(body, dict) and "model" not in body:
        if model is None:
            raise InputFileError(*where, "the body names no model: add one, or pass --model")
        record["body"] = {**body, "model": model}
    return record
