"""Retention's queries (`domain/retention.py`): the jobs past it, their purge in small
writes, and the sizes `relayd db stats` prints.

A job goes rows first, a chunk a transaction (each row with its attempts, rounds and
workflow state), then the job itself with its file records in one last write; the files'
bytes are the caller's to remove after that, as with expired files. A crash in between
leaves a job with fewer rows, still ended and still past retention: the next pass goes on
where this one stopped.
"""

from __future__ import annotations

from peewee import ModelSelect

from daemon.domain.jobs import TERMINAL
from daemon.domain.retention import (
    JOBS_PER_LOOK,
    ROWS_PER_WRITE,
    Purgeable,
    Purged,
    TableSize,
)
from daemon.store.models import JobModel
from daemon.store.sql import SqlBase

_ROW_CHILDREN = ("attempt", "executor_call", "round", "workflow_result", "workflow")


class RetentionQueries(SqlBase):
    """Queries of retention."""

    def purgeable_jobs(self, before: float, *, limit: int = JOBS_PER_LOOK) -> list[Purgeable]:
        """Ended jobs that ended before `before`, oldest first: never a cron template,
        nor a template's latest run."""
        job = self.JobModel
        query = (self._past_retention(before)
                 .select(job.seq, job.id, job.input_file_id, job.output_file_id,
                         job.error_file_id)
                 .order_by(job.seq).limit(limit))
        return [Purgeable(seq=r.seq, id=r.id, files=tuple(
            f for f in (r.input_file_id, r.output_file_id, r.error_file_id) if f))
            for r in query]

    def purge_rows(self, job_seq: int, *, limit: int = ROWS_PER_WRITE) -> int:
        """Delete up to `limit` of a job's rows, with what hangs off them, in one write;
        returns how many went (0: none are left)."""
        p = self.db.param
        with self.write():
            ids = [i for (i,) in self.db.execute_sql(
                f'SELECT id FROM "row" WHERE job_id = {p} ORDER BY id LIMIT {p}',
                (job_seq, limit)).fetchall()]
            if not ids:
                return 0
            marks = ", ".join([p] * len(ids))
            for table in _ROW_CHILDREN:
                self.db.execute_sql(f'DELETE FROM "{table}" WHERE row_id IN ({marks})', ids)
            self.db.execute_sql(f'DELETE FROM "row" WHERE id IN ({marks})', ids)
        return len(ids)

    def purge_job(self, target: Purgeable) -> list[str] | None:
        """Delete an ended job whose rows are gone, with its file records: its result
        files, and its input file where no other job names it. Returns the deleted files'
        paths, whose bytes are the caller's to remove; None while the job has rows."""
        job, file = self.JobModel, self.FileModel
        with self.write():
            if self.RowModel.select().where(self.RowModel.job == target.seq).exists():
                return None
            job.delete().where(job.seq == target.seq,
                               job.status.in_(sorted(TERMINAL))).execute()
            named = {r.input_file_id for r in job.select(job.input_file_id).where(
                job.input_file_id.in_(list(target.files)))}
            doomed = [f for f in target.files if f not in named]
            if not doomed:
                return []
            rows = list(file.select(file.seq, file.path, file.deleted_at)
                        .where(file.id.in_(doomed)))
            file.delete().where(file.seq.in_([r.seq for r in rows])).execute()
        return [r.path for r in rows if r.deleted_at is None]  # a deleted one's bytes are gone

    def purge_deleted_files(self, before: float) -> int:
        """Forget the records of files deleted (or expired) before `before` that no job
        names: their bytes went when they were deleted."""
        job, file = self.JobModel, self.FileModel
        named = (job.select(job.input_file_id.alias("id")).where(job.input_file_id.is_null(False))
                 | job.select(job.output_file_id).where(job.output_file_id.is_null(False))
                 | job.select(job.error_file_id).where(job.error_file_id.is_null(False)))
        with self.write():
            return int(file.delete().where(file.deleted_at.is_null(False),
                                           file.deleted_at < before,
                                           file.id.not_in(named)).execute())

    def purge_counts(self, before: float) -> Purged:
        """What a purge at `before` would delete now (`relayd db stats`): its jobs, their
        rows, and the files they name."""
        job = self.JobModel
        past = self._past_retention(before)
        jobs = past.count()
        rows = self.RowModel.select().where(
            self.RowModel.job.in_(past.select(job.seq))).count()
        named = past.select(job.input_file_id, job.output_file_id, job.error_file_id)
        files = sum(bool(r.input_file_id) + bool(r.output_file_id) + bool(r.error_file_id)
                    for r in named)
        return Purged(jobs=jobs, rows=rows, files=files)

    def table_sizes(self) -> list[TableSize]:
        """Every table's rows, and its bytes where the backend tells them."""
        sizes = self.table_bytes()
        return [TableSize(name=m._meta.table_name, rows=m.select().count(),
                          bytes=sizes.get(m._meta.table_name))
                for m in self.tables]

    def _past_retention(self, before: float) -> ModelSelect[JobModel]:
        job = self.JobModel
        latest_runs = job.select(job.last_run_id).where(job.cron.is_null(False),
                                                        job.last_run_id.is_null(False))
        ended = job.finished_at.is_null(False) & (job.finished_at < before)
        never_started = job.finished_at.is_null() & (job.created_at < before)
        return job.select().where(job.status.in_(sorted(TERMINAL)), ended | never_started,
                                  job.cron.is_null(), job.id.not_in(latest_runs))
