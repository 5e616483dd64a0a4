"""The bytes of files: uploads and result files live under `<data_dir>/files/<id>`.

A file is written under a temporary name, flushed to disk, then renamed into place,
so a file id never names half a file: a crash leaves at most a `.partial` file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any


class JsonlFile:
    """One JSONL file being written: `write` lines, then `commit` (or `discard`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.partial = path.with_name(path.name + ".partial")
        self.count = 0
        self._out = self.partial.open("wb")

    def write(self, line: dict[str, Any]) -> None:
        self._out.write(json.dumps(line).encode() + b"\n")  # ASCII: any text survives
        self.count += 1

    def commit(self) -> int:
        """Flush to disk and move into place; returns the size in bytes."""
        self._out.flush()
        os.fsync(self._out.fileno())
        self._out.close()
        os.replace(self.partial, self.path)
        return self.path.stat().st_size

    def discard(self) -> None:
        self._out.close()
        self.partial.unlink(missing_ok=True)

    def __enter__(self) -> JsonlFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not self._out.closed:
            self.discard()


class FileStore:
    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "files"

    def path_for(self, file_id: str) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root / file_id

    def open_jsonl(self, file_id: str) -> JsonlFile:
        return JsonlFile(self.path_for(file_id))

    def write_jsonl(self, file_id: str, lines: Iterable[dict[str, Any]]) -> tuple[Path, int, int]:
        """Write `lines` as one JSONL file, durably. Returns the path, the size in bytes
        and the number of lines."""
        with self.open_jsonl(file_id) as out:
            for line in lines:
                out.write(line)
            size = out.commit()
        return out.path, size, out.count

    def remove(self, path: str | Path) -> None:
        Path(path).unlink(missing_ok=True)
