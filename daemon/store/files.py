"""The bytes of files: uploads and result files live under `<data_dir>/files/<id>`."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class FileStore:
    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "files"

    def path_for(self, file_id: str) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root / file_id

    def write_jsonl(self, file_id: str, lines: Iterable[dict[str, Any]]) -> tuple[Path, int, int]:
        """Write `lines` as JSONL, durably (fsync before the store points at it).
        Returns the path, the size in bytes and the number of lines."""
        path = self.path_for(file_id)
        count = 0
        with open(path, "wb") as out:
            for line in lines:
                out.write(json.dumps(line).encode() + b"\n")  # ASCII: any text survives
                count += 1
            out.flush()
            os.fsync(out.fileno())
        return path, path.stat().st_size, count

    def remove(self, path: str | Path) -> None:
        Path(path).unlink(missing_ok=True)
