"""Jobs: creation, reads, lists, status transitions, scheduling, cron templates and
validation results."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from peewee import SQL

from daemon.domain.files import FileRecord
from daemon.domain.jobs import (
    EXPIRED,
    QUEUED,
    ROW_FAILED,
    ROW_PENDING,
    RUNNING,
    SCHEDULED,
    TERMINAL,
    VALIDATING,
    Job,
    JobDraft,
    RowDraft,
    RowRecord,
    Staged,
    Status,
    can_transition,
    draft_from,
    sources_of,
)
from daemon.store.file_records import insert_file
from daemon.store.interface import Ending
from daemon.store.models import JobModel, RowModel
from daemon.store.records import draft_fields, job_of, job_record, row_record
from daemon.store.rows import insert_rows, open_dead_letter, refused_last
from daemon.store.sql import (
    ADMISSION_ORDER,
    COPY_ROWS,
    DUE_TEMPLATES,
    EXPIRED_JOBS,
    JOB_BY_ID,
    JOB_BY_SEQ,
    SqlBase,
    chunks,
    in_list,
    padded,
)
from daemon.store.webhooks import WEBHOOK_QUEUED


class JobQueries(SqlBase):
    """Queries over jobs."""

    def create_job(self, draft: JobDraft, rows: Sequence[RowDraft]) -> Job:
        """Store a job and all its rows in one transaction: all or nothing."""
        with self.write():
            stamps = json.dumps({draft.status: draft.created_at})
            job = self.JobModel.create(
                **draft_fields(draft), total=len(rows), stamps=stamps,
                failed=sum(1 for r in rows if r.error), finished_seq=refused_last(rows),
            )
            insert_rows(self, job.seq, rows, now=draft.created_at)
        return job_record(job)

    def get_job(self, job_id: str, *, workspace_id: int | None = None) -> Job | None:
        """A job by its public id (a deleted one is not found)."""
        if workspace_id is None:
            found = self.one(JOB_BY_ID, (job_id,), in_workspace="")
        else:
            found = self.one(JOB_BY_ID, (job_id, workspace_id),
                             in_workspace=" AND workspace_id = {p}")
        return job_of(found) if found else None

    def job_by_seq(self, seq: int) -> Job | None:
        found = self.one(JOB_BY_SEQ, (seq,))
        return job_of(found) if found else None

    def list_jobs(
        self,
        workspace_id: int,
        *,
        limit: int,
        after: str | None = None,
        before: str | None = None,
        statuses: Sequence[str] | None = None,
        template_id: str | None = None,
        dialects: Sequence[str] | None = None,
    ) -> tuple[list[Job], bool]:
        """Newest first; returns the page and whether more follow. Every filter is part
        of the query, so a page is always full when more jobs match. `after`: the jobs
        older than that one; `before`: the newest `limit` of the jobs newer than it
        (still newest first; "more" then means newer ones)."""
        model = self.JobModel
        query = model.select().where(model.workspace == workspace_id,
                                     model.deleted_at.is_null())
        if dialects is not None:
            query = query.where(model.dialect.in_(list(dialects)))
        for cursor_id, older in ((after, True), (before, False)):
            if cursor_id:
                cursor = model.get_or_none(model.id == cursor_id,
                                           model.workspace == workspace_id)
                if cursor is None:
                    return [], False
                query = query.where(model.seq < cursor.seq if older else model.seq > cursor.seq)
        if statuses is not None:
            query = query.where(model.status.in_(list(statuses)))
        if template_id is not None:
            query = query.where(model.template_id == template_id)
        backwards = bool(before) and not after  # the newer side of the cursor
        order = model.seq.asc() if backwards else model.seq.desc()
        rows = list(query.order_by(order).limit(limit + 1))
        page = rows[:limit][::-1] if backwards else rows[:limit]
        return [job_record(r) for r in page], len(rows) > limit

    def delete_job(self, seq: int, *, now: float) -> bool:
        """Delete an ended job: from then on no read finds it (by id, in a listing, in
        the dead letter), but it stays, so its id still pages a listing (a client
        deleting as it lists) and a re-drive pointing at it still resolves; False if it
        has not ended or is deleted already."""
        with self.write():
            deleted = (self.JobModel.update(deleted_at=now)
                       .where(self.JobModel.seq == seq,
                              self.JobModel.status.in_(list(TERMINAL)),
                              self.JobModel.deleted_at.is_null())
                       .execute())
        return deleted > 0


    def queued_jobs(self, limit: int) -> list[Job]:
        """The next jobs to admit, in the cluster's order (`ADMISSION_ORDER`)."""
        query = (self.JobModel.select().where(self.JobModel.status == QUEUED)
                 .order_by(SQL(ADMISSION_ORDER)).limit(limit))
        return [job_record(r) for r in query]

    def transition(self, seq: int, target: Status, *, now: float, **fields: Any) -> Job | None:
        """Move a job to `target` if the lifecycle table allows it from its current
        status; None otherwise. Ending a job is `end_job`'s."""
        if target in TERMINAL:
            raise ValueError(f"a job ends through end_job, not transition (to {target})")
        with self.write():
            row = self.lock_job(seq)
            if row is None or not can_transition(row.status, target):
                return None
            self._move(row, target, now=now, **fields)
        return self.job_by_seq(seq)

    def end_job(self, seq: int, ending: Ending, *, now: float) -> Job | None:
        """End a job in one transaction: rows that never ran fail with `ending.unrun`,
        the result files are recorded, the status is set and the webhook (if any) is
        queued. None if the table does not allow the ending from the current status."""
        with self.write():
            row = self.lock_job(seq)
            if row is None or not can_transition(row.status, ending.status):
                return None
            if not row.total:  # never accepted: a validation's rows staged so far go
                self.db.execute_sql(self.sql('DELETE FROM "row" WHERE job_id = {p}'), (seq,))
            unrun, numbered = self._end_unrun_rows(seq, ending.unrun, now=now,
                                                   after_seq=row.finished_seq)
            for record in ending.files:
                insert_file(self, record)
            self._move(row, ending.status, now=now, finished_at=now,
                       failed=self.JobModel.failed + unrun,
                       canceled=self.JobModel.canceled + unrun,
                       finished_seq=row.finished_seq + (row.total if numbered else 0),
                       output_file_id=ending.output_file_id,
                       error_file_id=ending.error_file_id, error=ending.error,
                       errors=json.dumps(ending.errors) if ending.errors else None,
                       webhook_state=WEBHOOK_QUEUED if row.webhook_url else None)
        return self.job_by_seq(seq)

    def _move(self, row: JobModel, target: str, *, now: float, **fields: Any) -> None:
        stamps = json.loads(row.stamps or "{}")
        stamps.setdefault(target, now)  # when the status was first entered
        (self.JobModel.update(status=target, stamps=json.dumps(stamps), **fields)
         .where(self.JobModel.seq == row.seq).execute())

    def _end_unrun_rows(self, seq: int, unrun: tuple[str, str] | None, *, now: float,
                        after_seq: int) -> tuple[int, int]:
        """Rows that never ran finish after every row finished before: each takes
        `after_seq` plus its position (unique, in input order). With `unrun` they fail
        with its (code, message); without (a job failed as a whole), they keep their
        status, which the job's error explains, and are numbered all the same, so the
        results read while it ran go on to them. (rows failed, rows numbered)"""
        pending = (self.RowModel.job == seq) & (self.RowModel.status == ROW_PENDING)
        numbered = {"finished_seq": self.RowModel.position + after_seq}
        if unrun is None:
            count = (self.RowModel.update(lease_node=None, **numbered)
                     .where(pending & self.RowModel.finished_seq.is_null()).execute())
            return 0, count
        code, message = unrun
        count = (self.RowModel.update(status=ROW_FAILED, error=message, error_code=code,
                                      finished_at=now, lease_node=None, **numbered)
                 .where(pending).execute())
        return count, count

    def jobs_in(self, status: str) -> list[Job]:
        query = (self.JobModel.select().where(self.JobModel.status == status)
                 .order_by(self.JobModel.seq))
        return [job_record(r) for r in query]

    def requeue_running(self, *, now: float) -> list[Job]:
        """At start: jobs a previous process left running go back to the queue; a paused
        one stays running (and paused), taken again once it resumes."""
        seqs = [r.seq for r in self.JobModel.select(self.JobModel.seq)
                .where(self.JobModel.status == RUNNING, self.JobModel.paused_at.is_null(),
                       self.JobModel.budget_paused_at.is_null())
                .order_by(self.JobModel.seq)]
        requeued = (self.transition(seq, QUEUED, now=now) for seq in seqs)
        return [job for job in requeued if job is not None]

    def redrivable_rows(self, seq: int, *, custom_ids: Sequence[str] | None = None,
                        force: bool = False) -> list[RowRecord]:
        """The rows `retry_dead_letter` would take now, in input order."""
        return [row_record(r) for r in self._redrivable(seq, custom_ids, force=force)]

    def retry_dead_letter(self, seq: int, *, new_id: str, custom_ids: Sequence[str] | None,
                          now: float, force: bool = False, input_file: FileRecord | None = None,
                          input_rows: Collection[int] = (),
                          expires_at: float | None = None) -> Job | None:
        """A new queued job from a job's dead-lettered rows (optionally only some), in
        one transaction. A row re-driven already is not taken again unless `force`, so
        retries sent at once make one job. The new job records `retry_of`; each row
        taken records where it went.

        `input_file`, written by the caller from the rows `redrivable_rows` gave (ids
        `input_rows`), is recorded as the new job's input file; the retry then takes
        exactly those rows or nothing, so the file and the job hold the same rows."""
        with self.write():
            source = self.lock_job(seq)  # retries sent at once take turns
            taken = self._redrivable(seq, custom_ids, force=force) if source else []
            if source is None or not taken or (
                    input_file is not None and {r.id for r in taken} != set(input_rows)):
                return None
            if input_file is not None:
                insert_file(self, input_file)
            draft = draft_from(job_record(source), id=new_id, status=QUEUED, created_at=now,
                               name=f"{source.name} (dead-letter retry)", cron=None,
                               next_run_at=None, template_id=None,
                               input_file_id=input_file.id if input_file else None,
                               expires_at=expires_at, retry_of=source.id,
                               deadline_at=None, deadline_drain_s=None)  # its own time
            job = self.create_job(draft, [RowDraft(custom_id=r.custom_id,
                                                   body=json.loads(r.body), model=r.model)
                                          for r in taken])
            opened = sum(1 for r in taken if r.redriven_to is None and r.discarded_at is None)
            self._mark([r.id for r in taken], redriven_to=new_id)
            self._resolved(seq, opened)
            return job

    def discard_dead_letter(self, seq: int, *, custom_ids: Sequence[str] | None,
                            now: float) -> int:
        """Take a job's open dead-lettered rows (those of `custom_ids` when given) off
        its list; how many were taken. The `dead_letter` counter keeps them."""
        with self.write():
            self.hold_job(seq)  # as retry_dead_letter does: one of them takes a row
            taken = [r.id for r in self._redrivable(seq, custom_ids, force=False)]
            if taken:
                self._mark(taken, discarded_at=now)
                self._resolved(seq, len(taken))
        return len(taken)

    def _redrivable(self, seq: int, custom_ids: Sequence[str] | None, *,
                    force: bool) -> list[RowModel]:
        """A job's dead-lettered rows (those of `custom_ids` when given), less the ones
        re-driven already unless `force`."""
        query = self.RowModel.select().where(self.RowModel.job == seq,
                                             self.RowModel.dead_letter == 1)
        if not force:
            query = query.where(open_dead_letter(self))
        if not custom_ids:
            return list(query.order_by(self.RowModel.position))
        found = [r for part in chunks(list(dict.fromkeys(custom_ids)))
                 for r in query.where(self.RowModel.custom_id.in_(list(part)))]
        return sorted(found, key=lambda r: r.position)

    def _mark(self, row_ids: list[int], **values: Any) -> None:
        for part in chunks(row_ids):
            self.RowModel.update(**values).where(self.RowModel.id.in_(list(part))).execute()

    def _resolved(self, seq: int, count: int) -> None:
        if count:
            (self.JobModel.update(dead_letter_open=self.JobModel.dead_letter_open - count)
             .where(self.JobModel.seq == seq).execute())


    def due_templates(self, now: float) -> list[Job]:
        return [job_of(found) for found in self.many(DUE_TEMPLATES, (SCHEDULED, now))]

    def spawn_run(self, template: Job, *, tick: float, next_run_at: float, run_id: str,
                  now: float) -> Job | None:
        """One queued run of a template, recorded with the tick it was for, in one
        transaction: a tick already taken (another process, a restart) spawns nothing."""
        with self.write():
            taken = (self.JobModel.update(next_run_at=next_run_at, last_run_id=run_id)
                     .where(self.JobModel.seq == template.seq,
                            self.JobModel.status == SCHEDULED,
                            self.JobModel.next_run_at == tick).execute())
            if taken != 1:
                return None
            run = self.JobModel.create(**draft_fields(draft_from(
                template, id=run_id, status=QUEUED, created_at=now, template_id=template.id,
                cron=None, next_run_at=None,
            )), total=template.total, stamps=json.dumps({QUEUED: now}))
            self.db.execute_sql(self.sql(COPY_ROWS), (run.seq, ROW_PENDING, template.seq))
        return job_record(run)


    def stage_rows(self, seq: int, rows: Sequence[RowDraft], *, after: int, node: str,
                   now: float) -> bool:
        """A chunk of a validating batch's rows, stored at positions after `after` while
        it is still `node`'s to validate (False, storing nothing, once it is not: it was
        cancelled, or another node took it over). They are its rows once
        `accept_validated`; a batch that ends before has them deleted (the validator
        deletes them a write at a time; `end_job` deletes what is left)."""
        with self.write():
            job = self.lock_job(seq)
            if job is None or job.status != VALIDATING or job.validating_node != node:
                return False
            insert_rows(self, seq, rows, now=now, after=after, numbered=False)
            return True

    def staged_positions(self, seq: int, custom_ids: Collection[str]) -> dict[str, int]:
        """Where rows with these custom_ids are among a job's rows (the first of each)."""
        found: dict[str, int] = {}
        for part in chunks(sorted(custom_ids)):
            values = padded(part)
            statement = self.sql('SELECT custom_id, position FROM "row" WHERE job_id = {p} '
                                 "AND custom_id IN ({ids})", ids=in_list(values))
            for custom_id, position in self.db.execute_sql(statement,
                                                           (seq, *values)).fetchall():
                found[custom_id] = min(position, found.get(custom_id, position))
        return found

    def accept_validated(self, seq: int, counts: Staged, *, node: str,
                         now: float) -> Job | None:
        """A validated batch, its rows staged, joins the queue; None if it left
        `validating` meanwhile (cancelled) or another node took it over."""
        with self.write():
            job = self.lock_job(seq)
            if job is None or job.status != VALIDATING or job.validating_node != node:
                return None
            (self.JobModel.update(total=counts.total, failed=counts.failed,
                                  model=counts.model or job.model,
                                  finished_seq=counts.refused_last)
             .where(self.JobModel.seq == seq).execute())
            if counts.failed:  # the refused rows take their places in the finish order
                (self.RowModel.update(finished_seq=self.RowModel.position)
                 .where(self.RowModel.job == seq, self.RowModel.status == ROW_FAILED,
                        self.RowModel.finished_seq.is_null()).execute())
            return self.transition(seq, QUEUED, now=now)

    def expired_jobs(self, now: float) -> list[Job]:
        """Jobs past their completion window, or past their deadline (a Relay job's,
        which it reads as `completed`: `domain/deadline.py`)."""
        statuses = sorted(sources_of(EXPIRED))
        return [job_of(found) for found in self.many(
            EXPIRED_JOBS, (now, now, *statuses), statuses=in_list(statuses))]
