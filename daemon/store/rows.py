"""Rows: inserting them with their job, handing pending ones out, storing outcomes in
groups with the job's counters, and reading results and the dead-letter list."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from peewee import SqliteDatabase, fn

from daemon.domain.jobs import (
    ROW_COMPLETED,
    ROW_FAILED,
    ROW_PENDING,
    TERMINAL,
    Job,
    RowDraft,
    RowRecord,
    RowWork,
)
from daemon.domain.outcome import RowOutcome
from daemon.store.models import AttemptModel, JobModel, RowModel
from daemon.store.records import (
    Flushed,
    dumps,
    row_record,
)

INSERT_CHUNK = 500


class RowQueries:
    """Queries over rows and their attempts."""

    db: SqliteDatabase

    def _insert_rows(self, job_seq: int, rows: Sequence[RowDraft], *, now: float) -> None:
        sql = ('INSERT INTO "row" (job_id, position, custom_id, model, body, status, error, '
               "error_code, finished_at, attempts, dead_letter, prompt_tokens, "
               "completion_tokens, cost_nano_usd) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0, 0)")
        cursor = self.db.cursor()
        for start in range(0, len(rows), INSERT_CHUNK):
            chunk = rows[start:start + INSERT_CHUNK]
            cursor.executemany(sql, [
                (job_seq, start + i + 1, r.custom_id, r.model, json.dumps(r.body),
                 ROW_FAILED if r.error else ROW_PENDING, r.error, r.error_code,
                 now if r.error else None)
                for i, r in enumerate(chunk)
            ])

    def end_pending_rows(self, seq: int, *, error: str, error_code: str, now: float) -> int:
        """Rows that never ran fail with `error` (cancel, expiry); counters follow. Does
        nothing once the job has ended."""
        with self.db.atomic("IMMEDIATE"):
            current = JobModel.get_or_none(JobModel.seq == seq)
            if current is None or current.status in TERMINAL:
                return 0
            n = (RowModel.update(status=ROW_FAILED, error=error, error_code=error_code,
                                 finished_at=now)
                 .where(RowModel.job == seq, RowModel.status == ROW_PENDING).execute())
            JobModel.update(failed=JobModel.failed + n).where(JobModel.seq == seq).execute()
        return n


    def pending_rows(self, job: Job, *, after_id: int, limit: int) -> list[RowWork]:
        cursor = self.db.execute_sql(
            'SELECT id, custom_id, model, body FROM "row" WHERE job_id = ? AND status = ? '
            "AND id > ? ORDER BY id LIMIT ?", (job.seq, ROW_PENDING, after_id, limit))
        return [RowWork(id=rid, job_seq=job.seq, custom_id=custom_id,
                        model=model or job.model, endpoint=job.endpoint, body=json.loads(body))
                for rid, custom_id, model, body in cursor.fetchall()]

    def save_outcomes(
        self, job_seq: int, outcomes: Sequence[tuple[int, RowOutcome]], *, now: float
    ) -> Flushed:
        """Store a group of row outcomes and bump the job's counters, in one transaction.
        A row whose outcome is already stored is skipped whole (counters, tokens, cost,
        attempts), so the job's totals always equal what its rows say."""
        if not outcomes:
            return Flushed(0, 0, 0)
        with self.db.atomic("IMMEDIATE"):
            done = self._still_pending(outcomes)
            completed = sum(1 for _, o in done if o.ok)
            flushed = Flushed(completed, len(done) - completed,
                              sum(1 for _, o in done if not o.ok and o.dead_letter))
            self._update_rows(done, now=now)
            self._insert_attempts(done)
            JobModel.update(
                completed=JobModel.completed + flushed.completed,
                failed=JobModel.failed + flushed.failed,
                dead_letter=JobModel.dead_letter + flushed.dead_letter,
                input_tokens=JobModel.input_tokens + sum(o.usage.prompt_tokens for _, o in done),
                output_tokens=JobModel.output_tokens
                + sum(o.usage.completion_tokens for _, o in done),
                cost_nano_usd=JobModel.cost_nano_usd + sum(o.cost_nano_usd for _, o in done),
            ).where(JobModel.seq == job_seq).execute()
        return flushed

    def _still_pending(
        self, outcomes: Sequence[tuple[int, RowOutcome]]
    ) -> list[tuple[int, RowOutcome]]:
        ids = list(dict(outcomes))
        pending = {r.id for r in RowModel.select(RowModel.id)
                   .where(RowModel.id.in_(ids), RowModel.status == ROW_PENDING)}
        first: dict[int, RowOutcome] = {}
        for rid, outcome in outcomes:
            if rid in pending:
                first.setdefault(rid, outcome)
        return list(first.items())

    def _update_rows(self, done: Sequence[tuple[int, RowOutcome]], *, now: float) -> None:
        sql = ('UPDATE "row" SET status = ?, attempts = ?, response = ?, status_code = ?, '
               "error = ?, error_code = ?, dead_letter = ?, answered_by = ?, "
               "prompt_tokens = ?, completion_tokens = ?, cost_nano_usd = ?, finished_at = ? "
               "WHERE id = ? AND status = ?")
        self.db.cursor().executemany(sql, [
            (ROW_COMPLETED if o.ok else ROW_FAILED, len(o.attempts),
             (o.response_text or dumps(o.response)) if o.ok else dumps(o.error_body),
             o.status_code,
             o.error, o.error_code, int(o.dead_letter), o.model, o.usage.prompt_tokens,
             o.usage.completion_tokens, o.cost_nano_usd, now, rid, ROW_PENDING)
            for rid, o in done
        ])

    def _insert_attempts(self, done: Sequence[tuple[int, RowOutcome]]) -> None:
        sql = ("INSERT INTO attempt (row_id, model, status_code, error, duration_ms, "
               "started_at, transient) VALUES (?, ?, ?, ?, ?, ?, ?)")
        self.db.cursor().executemany(sql, [
            (rid, a.model, a.status_code, a.error, a.duration_ms, a.started_at, int(a.transient))
            for rid, o in done for a in o.attempts
        ])

    def row_counts(self, job_seq: int) -> dict[str, int]:
        """Counters computed from the row table (the truth the job's counters must equal)."""
        query = (RowModel.select(RowModel.status, RowModel.dead_letter,
                                 fn.COUNT(RowModel.id).alias("n"))
                 .where(RowModel.job == job_seq)
                 .group_by(RowModel.status, RowModel.dead_letter))
        counts = {"completed": 0, "failed": 0, "dead_letter": 0, "pending": 0}
        for r in query:
            counts[r.status] += r.n
            if r.dead_letter:
                counts["dead_letter"] += r.n
        return counts

    def rows(self, job_seq: int, *, after_position: int = 0,
             limit: int | None = None) -> Iterator[RowRecord]:
        query = (RowModel.select().where(RowModel.job == job_seq,
                                         RowModel.position > after_position)
                 .order_by(RowModel.position))
        if limit is not None:
            query = query.limit(limit)
        for r in query.iterator():
            yield row_record(r)

    def dead_letter_rows(self, job_seq: int) -> list[RowRecord]:
        rows = list(RowModel.select().where(RowModel.job == job_seq, RowModel.dead_letter == 1)
                    .order_by(RowModel.position))
        log: dict[int, list[dict[str, Any]]] = {r.id: [] for r in rows}
        if rows:
            attempts = (AttemptModel.select()
                        .where(AttemptModel.row.in_(list(log)))
                        .order_by(AttemptModel.id))
            for a in attempts:
                log[a.row_id].append({
                    "model": a.model, "status_code": a.status_code, "error": a.error,
                    "duration_ms": a.duration_ms, "started_at": a.started_at,
                })
        return [row_record(r, attempt_log=tuple(log[r.id])) for r in rows]
