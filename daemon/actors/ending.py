"""Ending a job: the one place it happens, called by whoever owns the job at that
moment (the validator while it validates, the job's supervisor while it runs, the
scheduler otherwise; never the API, which only records a cancel).

The result files are written first, each under a temporary name and then renamed;
then one store transaction ends the rows that never ran, records the files, sets
the final status and queues the webhook. A crash before that transaction leaves
the job as it was, to be ended again at the next start.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import replace
from typing import Any

from daemon.dialects import Capability, Dialect, dialect_of
from daemon.domain import files as purposes
from daemon.domain import ids
from daemon.domain.files import FileRecord
from daemon.domain.jobs import (
    COMPLETED,
    FAILED,
    FINALIZING,
    ROW_FAILED,
    ROW_PENDING,
    RUNNING,
    Job,
    RowRecord,
    Status,
    ending_for,
)
from daemon.store.files import FileStore, JsonlFile
from daemon.store.interface import Ending, Store

RESULT_FILES = ("output", "errors")
# Writing a big job's results keeps the interpreter lock busy for seconds (a million
# rows: tens of seconds), and the API's loop waits for it at each step of a request, up
# to the switch interval (5 ms) each time. So the ending lets go of it every so many
# rows (about a millisecond of work): status reads polled every 50 ms while a
# 100,000-row OpenAI batch wrote its results went from a p50 of 19.5 ms (p99 30 ms) to
# 3.8 ms (p99 11 ms), its ending taking 2.6 s either way (6.5 s when rows were read as
# Peewee models).
YIELD_ROWS = 64


def end_job(store: Store, files: FileStore, seq: int, wanted: Status, *, now: float,
            error: str | None = None,
            errors: list[dict[str, Any]] | None = None) -> Job | None:
    """End job `seq` as `wanted` (a cancel already recorded wins); None if it had ended
    or the lifecycle does not allow that ending from where it is."""
    job = store.job_by_seq(seq)
    if job is None or job.terminal:
        return None
    target = ending_for(job.status, wanted)
    dialect = dialect_of(job)
    writes_files = Capability.RESULT_FILES in dialect.capabilities
    if target == COMPLETED and writes_files and job.status == RUNNING:
        job = store.transition(seq, FINALIZING, now=now) or job
    unrun = None if target in (COMPLETED, FAILED) else dialect.unrun_error(target)
    ending = Ending(target, unrun=unrun, error=error, errors=errors)
    if writes_files and target != FAILED and not job.is_template and job.total:
        # (a batch never accepted has no rows: what its validation stored goes with it)
        ending = _with_result_files(store, files, job, dialect, ending, now=now)
    return store.end_job(seq, ending, now=now)


def _with_result_files(store: Store, files: FileStore, job: Job, dialect: Dialect,
                       ending: Ending, *, now: float) -> Ending:
    """Write the output and error files (a file with no lines is not created)."""
    with ExitStack() as stack:  # on the way out, discards what was not committed
        written = {name: stack.enter_context(files.open_jsonl(ids.file_id()))
                   for name in RESULT_FILES}
        for n, row in enumerate(store.rows(job.seq), start=1):
            name, line = dialect.result_lines(job, _as_ended(row, ending.unrun))
            written[name].write(line)
            if n % YIELD_ROWS == 0:
                time.sleep(0)  # the interpreter lock, let go: see YIELD_ROWS
        records = {name: _record(job, out, name=name, now=now)
                   for name, out in written.items() if out.count}
    return replace(ending, files=tuple(records.values()),
                   output_file_id=_id(records.get("output")),
                   error_file_id=_id(records.get("errors")))


def _as_ended(row: RowRecord, unrun: tuple[str, str] | None) -> RowRecord:
    """A row that never ran, as it reads once the ending has failed it."""
    if row.status != ROW_PENDING or unrun is None:
        return row
    code, message = unrun
    return replace(row, status=ROW_FAILED, error=message, error_code=code)


def _record(job: Job, out: JsonlFile, *, name: str, now: float) -> FileRecord:
    size = out.commit()
    lifetime = job.output_expires_after_s  # OpenAI's anchor: the file's creation time
    return FileRecord(id=out.path.name, workspace_id=job.workspace_id,
                      filename=f"{job.id}_{name}.jsonl", purpose=purposes.BATCH_OUTPUT,
                      bytes=size, created_at=now, path=str(out.path),
                      expires_at=now + lifetime if lifetime is not None else None)


def _id(record: FileRecord | None) -> str | None:
    return record.id if record is not None else None
