"""Saving a job's results (`GET /v1/batches/{id}/results` items) to a `.jsonl` or `.csv`
file, and the one-line text of a result that the results screen shows. No Textual."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import IO, Any

FORMATS = (".jsonl", ".csv")


class ExportError(ValueError):
    """The results could not be written where asked; the message says why."""


def result_text(item: dict[str, Any]) -> str:
    """A result's content (JSON for a non-text answer such as an embedding) or its error."""
    if "error" in item and item.get("content") is None:
        return str(item.get("error") or "")
    content = item.get("content")
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def is_error(item: dict[str, Any]) -> bool:
    return "error" in item and item.get("content") is None


def matches(item: dict[str, Any], needle: str) -> bool:
    """The results screen's search: words in the custom_id, the content or the error."""
    needle = needle.strip().lower()
    return not needle or needle in str(item.get("custom_id", "")).lower() \
        or needle in result_text(item).lower()


def write_results(path: str | Path, items: Iterable[dict[str, Any]]) -> int:
    """Write `items` to `path` by its suffix; returns how many were written. The file
    appears whole or not at all (`write_whole`)."""
    def write(out: IO[str], suffix: str) -> int:
        return (_write_jsonl if suffix == ".jsonl" else _write_csv)(out, items)
    return write_whole(path, FORMATS, ExportError, "a .jsonl or .csv file name", text=write)


def write_whole(path: str | Path, suffixes: Collection[str], error: type[Exception],
                choose: str, *, text: Callable[[IO[str], str], int] | None = None,
                binary: Callable[[Path, str], int] | None = None) -> int:
    """Write a file of one of `suffixes` whole or not at all: into a file beside it,
    renamed onto it once written (`text(out, suffix)` writes UTF-8 text to an open file,
    `binary(path, suffix)` writes the file at `path` itself). A name or directory it
    cannot take (`choose`: what to choose instead), or an OS error, raises `error`
    naming the file; whatever the writer
    raises (a page of results that did not come) leaves no file either."""
    target = Path(path).expanduser()
    suffix = target.suffix.lower()
    if suffix not in suffixes:
        raise error(f"{target.name}: choose {choose}")
    if not target.parent.is_dir():
        raise error(f"{target.parent}: no such directory")
    partial = target.with_name(f".{target.name}.part")
    try:
        if binary is not None:
            count = binary(partial, suffix)
        else:
            assert text is not None
            with open(partial, "w", encoding="utf-8", newline="") as out:
                count = text(out, suffix)
        os.replace(partial, target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise error(f"{target}: {exc.strerror or exc}") from exc
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return count


def _write_jsonl(out: Any, items: Iterable[dict[str, Any]]) -> int:
    count = 0
    for item in items:
        out.write(json.dumps(item, ensure_ascii=False) + "\n")
        count += 1
    return count


def _write_csv(out: Any, items: Iterable[dict[str, Any]]) -> int:
    writer = csv.writer(out)
    writer.writerow(["custom_id", "content", "error"])
    count = 0
    for item in items:
        content = item.get("content")
        if content is not None and not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        writer.writerow([item.get("custom_id", ""), content or "", item.get("error") or ""])
        count += 1
    return count
