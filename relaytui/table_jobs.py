"""A table's batch on relayd: submitted through the OpenAI dialect (its records uploaded,
then a batch of them, so body parameters go through), and its results read back for the
join. The batch's metadata remembers the table (`TABLE`, its digest, `ID_COLUMN`), so
`relay results ID --join` and `--failed-only` find it again and refuse a table that has
changed since. All HTTP goes through `RelayClient`; the rules are `table_batch`'s."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from relaytui.table_batch import (
    CHAT,
    Outcome,
    Request,
    Template,
    outcome_of_line,
    outcome_of_result,
    table_records,
)
from relaytui.tables import Table

TABLE, DIGEST, ID_COLUMN = "relay_table", "relay_table_sha256", "relay_id_column"
METADATA_VALUE = 512  # OpenAI's longest metadata value


class Batches(Protocol):
    """What of `RelayClient` a table's batch uses."""

    def upload(self, filename: str, data: bytes, *,
               idempotency_key: str | None = None) -> dict[str, Any]: ...

    def create_batch(self, input_file_id: str, *, endpoint: str = ...,
                     metadata: dict[str, str] | None = None,
                     idempotency_key: str | None = None) -> dict[str, Any]: ...


class Results(Protocol):
    def file_content(self, file_id: str) -> bytes: ...

    def result_pages(self, job_id: str, *, page: int = ...) -> Any: ...


@dataclass(frozen=True)
class TableBatch:
    """What is sent for a table: its records and the batch's metadata."""

    records: list[dict[str, Any]]
    metadata: dict[str, str]

    def jsonl(self) -> bytes:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n"
                       for r in self.records).encode()


def table_batch(table: Table, template: Template, *, request: Request,
                id_column: str | None = None, name: str | None = None) -> TableBatch:
    """The records of every row (refused whole before anything is sent) and metadata."""
    records = table_records(table, template, request=request, id_column=id_column)
    path = Path(table.path).resolve()
    metadata = {"name": (name or path.name)[:METADATA_VALUE]}  # relayd's bound on a value
    if len(str(path)) <= METADATA_VALUE:
        metadata |= {TABLE: str(path), DIGEST: digest(path)}
    if id_column:
        metadata[ID_COLUMN] = id_column
    return TableBatch(records, metadata)


def submit(client: Batches, batch: TableBatch, *, filename: str,
           keys: tuple[str | None, str | None] = (None, None)) -> dict[str, Any]:
    """Upload the records, then make the batch; `keys`: the two creates' idempotency
    keys."""
    upload = client.upload(filename, batch.jsonl(), idempotency_key=keys[0])
    return client.create_batch(upload["id"], endpoint=CHAT, metadata=batch.metadata,
                               idempotency_key=keys[1])


def digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()


class NoTable(ValueError):
    """The batch's table cannot be found (or has changed): pass --join FILE."""


def recorded_table(job: dict[str, Any]) -> Path:
    """The table the batch was made from, by its metadata, checked unchanged."""
    metadata = job.get("metadata") or {}
    if TABLE not in metadata:
        raise NoTable(f"job {job.get('id')} was not submitted from a table with "
                      "--template (or its path was too long to remember): pass --join FILE")
    path = Path(metadata[TABLE])
    if not path.is_file():
        raise NoTable(f"{path}, the table job {job.get('id')} was made from, is gone: pass "
                      "--join FILE")
    if not metadata.get(DIGEST) or digest(path) != metadata[DIGEST]:
        raise NoTable(f"{path} has changed since job {job.get('id')} was submitted from it "
                      "(or the batch does not say what it held): pass --join FILE to join "
                      "it anyway")
    return path


def id_column(job: dict[str, Any]) -> str | None:
    """The --id-column the batch was submitted with, if any."""
    return (job.get("metadata") or {}).get(ID_COLUMN)


def outcomes(client: Results, job: dict[str, Any]) -> dict[str, Outcome]:
    """Each row's outcome by custom_id: from an OpenAI batch's output and error files
    (they carry finish_reason and usage), else from Relay's results pages."""
    if "output_file_id" not in job and "error_file_id" not in job:
        items = (item for page in client.result_pages(job["id"]) for item in page["data"])
        return dict(outcome_of_result(item) for item in items)
    found: dict[str, Outcome] = {}
    for key in ("output_file_id", "error_file_id"):
        if job.get(key):
            found.update(outcome_of_line(line) for line in _lines(
                client.file_content(job[key])))
    return found


def _lines(data: bytes) -> Iterable[dict[str, Any]]:
    return (json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip())
