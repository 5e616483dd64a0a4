"""The bytes of files: uploads and result files live under `<data_dir>/files/<id>`.

A file is written under a temporary name, flushed to disk, then renamed into place,
so a file id never names half a file: a crash leaves at most a `.partial` file (what a
start sweeps is decided in `domain/leftovers.py`).

Both are the store boundary (store/faults.py): a full disk or a failing one leaves each
`FileStore` method, and a `PartialFile`'s `with` block, as the store's own error.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from daemon.domain.leftovers import TEMP_SUFFIX, DiskFile
from daemon.store.faults import guard, raise_fault, translated


class PartialFile:
    """One file being written under `<name>.partial`: `append`, then `commit` (or
    `discard`); leaving a `with` block uncommitted discards it, and a storage fault met
    in the block leaves it as the store's error."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.partial = path.with_name(path.name + TEMP_SUFFIX)
        self._out = self.partial.open("wb")

    def append(self, data: bytes) -> None:
        self._out.write(data)

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

    def __enter__(self) -> PartialFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        with translated():  # closing on a full disk fails too
            if not self._out.closed:
                self.discard()
            if isinstance(exc, Exception):
                raise_fault(exc)


class JsonlFile(PartialFile):
    """One JSONL file being written: `write` lines, then `commit` (or `discard`)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.count = 0

    def write(self, line: Mapping[str, Any]) -> None:
        self.append(json.dumps(line).encode() + b"\n")  # ASCII: any text survives
        self.count += 1

    def __enter__(self) -> JsonlFile:
        return self


PROBE_NAME = ".probe"  # and the host and process: nodes may share the directory
PROBE_BYTES = 4096


class FileStore:
    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "files"

    def probe(self) -> None:
        """Write a small file to disk and remove it: proof the data directory takes
        writes (beside the files folder, so no listing of files ever sees it)."""
        path = self.root.parent / f"{PROBE_NAME}-{socket.gethostname()}-{os.getpid()}"
        try:
            with path.open("wb") as out:
                out.write(b"\0" * PROBE_BYTES)
                out.flush()
                os.fsync(out.fileno())
        finally:
            path.unlink(missing_ok=True)

    def path_for(self, file_id: str) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root / file_id

    def open_partial(self, file_id: str) -> PartialFile:
        return PartialFile(self.path_for(file_id))

    def open_jsonl(self, file_id: str) -> JsonlFile:
        return JsonlFile(self.path_for(file_id))

    def write_jsonl(self, file_id: str, lines: Iterable[Mapping[str, Any]]
                    ) -> tuple[Path, int, int]:
        """Write `lines` as one JSONL file, durably. Returns the path, the size in bytes
        and the number of lines."""
        with self.open_jsonl(file_id) as out:
            for line in lines:
                out.write(line)
            size = out.commit()
        return out.path, size, out.count

    def listing(self) -> list[DiskFile]:
        """Every regular file in the folder, with its last write time (a file that
        vanishes while listed is left out)."""
        found = []
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return []
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False):
                    found.append(DiskFile(entry.name, entry.stat(follow_symlinks=False).st_mtime))
            except FileNotFoundError:
                continue
        return found

    def remove(self, path: str | Path) -> None:
        Path(path).unlink(missing_ok=True)


guard(FileStore, ("probe", "path_for", "open_partial", "open_jsonl", "write_jsonl", "listing",
                  "remove"))
