"""Reading batch input files into Relay rows: `.csv` (one prompt per line) and `.jsonl`
(Relay rows `{custom_id?, messages}`). One parser per format, shared by the demo,
the CLI and the TUI. Errors carry the line number and the reason."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any


class InputFileError(ValueError):
    def __init__(self, path: str, line: int | None, reason: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows from a `.csv` or `.jsonl` file, ready for `POST /v1/batches` `requests`."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputFileError(str(p), None, f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputFileError(str(p), None, "not UTF-8 text (is it a binary file?)") from exc
    if p.suffix.lower() == ".csv":
        rows = csv_rows(text, path=str(p))
    elif p.suffix.lower() in (".jsonl", ".ndjson"):
        rows = jsonl_rows(text, path=str(p))
    else:
        raise InputFileError(str(p), None, "expected a .csv or .jsonl file")
    if not rows:
        raise InputFileError(str(p), None, "the file has no rows")
    return rows


def csv_rows(text: str, *, path: str = "<csv>") -> list[dict[str, Any]]:
    """One prompt per record (first column); quoted multi-line cells are one prompt."""
    rows = []
    reader = csv.reader(io.StringIO(text))
    try:
        for record in reader:
            if not record or not record[0].strip():
                continue
            rows.append({"messages": [{"role": "user", "content": record[0]}]})
    except csv.Error as exc:
        raise InputFileError(path, reader.line_num, f"malformed CSV: {exc}") from exc
    return rows


def jsonl_rows(text: str, *, path: str = "<jsonl>") -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFileError(path, number, f"not valid JSON: {exc.msg}") from exc
        rows.append(_jsonl_row(row, path=path, number=number))
    return rows


def _jsonl_row(row: object, *, path: str, number: int) -> dict[str, Any]:
    """A Relay row `{custom_id?, messages}`, or an OpenAI record `{custom_id, method, url,
    body}` passed through whole (relayd reads those with its OpenAI parser)."""
    if isinstance(row, dict) and "body" in row:
        if not isinstance(row.get("custom_id"), str):
            raise InputFileError(path, number, "an OpenAI record needs a 'custom_id' string")
        return row
    if not isinstance(row, dict) or not isinstance(row.get("messages"), list):
        raise InputFileError(path, number, "expected an object with a 'messages' array "
                             "(a Relay row) or an OpenAI record with 'body'")
    return {k: row[k] for k in ("custom_id", "messages") if k in row}
