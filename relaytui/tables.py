"""Tables: a `.csv` (RFC 4180, a header row), a `.jsonl` of objects or a `.parquet` file
read as named columns and rows, and written back whole or not at all. What a batch makes
of a table (a prompt template, the results joined on) is `relaytui.table_batch`'s. No
Textual, no HTTP; pyarrow is imported only for a Parquet file.

A `.jsonl` whose lines all are OpenAI records (`formats.is_openai_record`) is not a
table: it is refused here, so `relay submit` tells the two apart by one rule. Every row
keeps the file line it starts on (a Parquet row has none: it is named by its number), so
a refusal names the line."""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from relaytui.export import write_whole
from relaytui.formats import (
    InputFileError,
    csv_records,
    is_openai_record,
    jsonl_values,
    read_text,
)

SUFFIXES = (".csv", ".jsonl", ".ndjson", ".parquet")
Row = dict[str, Any]


@dataclass(frozen=True)
class Table:
    """Columns in the file's order and each row's values by column: strings from a CSV,
    JSON values from a JSONL (a key a line lacks is absent), Arrow's Python values
    (None for null) from Parquet. `lines[i]` is the file line row i starts on;
    `header_line` the CSV header's; `types` a Parquet file's Arrow type of each column,
    so a table written back keeps them."""

    path: str
    columns: list[str]
    rows: list[Row]
    lines: list[int | None]
    header_line: int | None = None
    types: Mapping[str, Any] = field(default_factory=dict)

    def where(self, index: int) -> tuple[int | None, str]:
        """The line of row `index` for an InputFileError, and how to name the row in
        its reason when there is no line (a Parquet row: `row 3: `)."""
        line = self.lines[index]
        return line, "" if line is not None else f"row {index + 1}: "

    def refuse(self, index: int, reason: str) -> InputFileError:
        line, prefix = self.where(index)
        return InputFileError(self.path, line, prefix + reason)


def is_table_file(path: str | Path) -> bool:
    return Path(path).suffix.lower() in SUFFIXES


def read_table(path: str | Path) -> Table:
    """The table in `path`, by its suffix; a file with no rows is refused."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        table = read_parquet(p)
    elif suffix == ".csv":
        table = parse_csv_table(read_text(p), path=str(p))
    elif suffix in (".jsonl", ".ndjson"):
        table = parse_jsonl_table(read_text(p), path=str(p))
    else:
        raise InputFileError(str(p), None, "a table is a .csv, .jsonl or .parquet file")
    if not table.rows:
        raise InputFileError(str(p), None, "the table has no rows")
    return table


def parse_csv_table(text: str, *, path: str = "<csv>") -> Table:
    """RFC 4180 with a header row: quoted cells hold commas, quotes and newlines; blank
    lines are skipped; a row shorter than the header has empty cells; a longer one is
    refused."""
    records = csv_records(text, path)
    if not records:
        return Table(path, [], [], [])
    (header_line, header), body = records[0], records[1:]
    columns = _columns([c.strip() for c in header], path=path, line=header_line)
    rows: list[Row] = []
    for line, cells in body:
        if len(cells) > len(columns):
            raise InputFileError(path, line, f"{len(cells)} cells, but the header (line "
                                 f"{header_line}) names {len(columns)} columns")
        rows.append(dict(zip(columns, cells + [""] * (len(columns) - len(cells)),
                             strict=True)))
    return Table(path, columns, rows, [line for line, _ in body], header_line)


def _columns(names: list[str], *, path: str, line: int | None) -> list[str]:
    for i, name in enumerate(names):
        if not name:
            raise InputFileError(path, line, f"column {i + 1} of the header has no name")
        if name in names[:i]:
            raise InputFileError(path, line, f"two columns are named {name!r}")
    return names


def parse_jsonl_table(text: str, *, path: str = "<jsonl>") -> Table:
    """One object per line; the columns are every key, in the order first seen."""
    rows: list[Row] = []
    lines: list[int | None] = []
    for number, value in jsonl_values(text, path=path):
        if not isinstance(value, dict):
            raise InputFileError(path, number, "expected a JSON object (a row of the table)")
        rows.append(value)
        lines.append(number)
    if rows and all(is_openai_record(row) for row in rows):
        raise InputFileError(path, None, "every line is an OpenAI record (custom_id, "
                             "method, url, body), not a row of a table: submit it without "
                             "--template (with --endpoint for an OpenAI batch)")
    columns = list(dict.fromkeys(key for row in rows for key in row))
    return Table(path, columns, rows, lines)


def read_parquet(path: Path) -> Table:
    import pyarrow as pa  # a second or so of imports: only for Parquet
    import pyarrow.parquet as pq

    try:
        arrow = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise InputFileError(str(path), None, f"cannot read as Parquet: {exc}") from exc
    columns = _columns([str(n) for n in arrow.column_names], path=str(path), line=None)
    rows: list[Row] = arrow.to_pylist()
    types = {f.name: f.type for f in arrow.schema}
    return Table(str(path), columns, rows, [None] * len(rows), types=types)


# -- cells ---------------------------------------------------------------------------


def cell_text(value: Any) -> str:
    """A value as a template and a CSV cell show it: null is empty, booleans are
    true/false, dates ISO 8601, lists and objects JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, default=cell_text)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


# -- writing -------------------------------------------------------------------------


class TableWriteError(ValueError):
    """A table could not be written where asked; the message says why."""


def write_table(path: str | Path, columns: Sequence[str], *, rows: Iterable[Row],
                types: Mapping[str, Any] | None = None) -> int:
    """Write `rows` (values by column) to `path` as CSV, JSONL or Parquet by its suffix;
    returns how many. The file appears whole or not at all (written beside it, then
    renamed). `types`: a Parquet column's Arrow type (or its alias, "int64"), where
    known; the others are inferred."""
    def text(out: IO[str], suffix: str) -> int:
        return (_write_csv if suffix == ".csv" else _write_jsonl)(out, columns, rows)

    def parquet(partial: Path, suffix: str) -> int:
        return _write_parquet(partial, columns, list(rows), types or {})

    return write_whole(path, SUFFIXES, TableWriteError, "a .csv, .jsonl or .parquet file name",
                       text=text, binary=parquet if Path(path).suffix.lower() == ".parquet"
                       else None)


def _write_csv(out: IO[str], columns: Sequence[str], rows: Iterable[Row]) -> int:
    writer = csv.writer(out)
    writer.writerow(columns)
    count = 0
    for row in rows:
        writer.writerow([cell_text(row.get(c)) for c in columns])
        count += 1
    return count


def _write_jsonl(out: IO[str], columns: Sequence[str], rows: Iterable[Row]) -> int:
    count = 0
    for row in rows:
        line = {c: row[c] for c in columns if c in row}
        out.write(json.dumps(line, ensure_ascii=False, default=cell_text) + "\n")
        count += 1
    return count


def _write_parquet(path: Path, columns: Sequence[str], rows: list[Row],
                   types: Mapping[str, Any]) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = [_arrow_column([row.get(c) for row in rows], types.get(c)) for c in columns]
    pq.write_table(pa.Table.from_arrays(arrays, names=list(columns)), path)
    return len(rows)


def _arrow_column(values: list[Any], kind: Any) -> Any:
    """The column of its type, else as Arrow infers it (nullable ints stay ints), or as
    text when its values are of several kinds (a JSON column of strings and numbers)."""
    import pyarrow as pa

    with contextlib.suppress(pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        if kind is not None:
            return pa.array(values, type=pa.type_for_alias(kind) if isinstance(kind, str)
                            else kind)
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array([None if v is None else cell_text(v) for v in values],
                        type=pa.string())
