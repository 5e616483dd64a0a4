"""Queries over the store, returning domain records. Peewee never leaks out of here.

Every write that changes a job's state is one transaction (`atomic("IMMEDIATE")`,
so WAL readers never turn into failing writers). Rows are inserted and updated
in bulk: there is no per-row commit anywhere.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from peewee import SqliteDatabase, fn

from daemon.domain import ids
from daemon.domain.files import FileRecord
from daemon.domain.jobs import (
    CANCELLING,
    FAILED,
    QUEUED,
    ROW_COMPLETED,
    ROW_FAILED,
    ROW_PENDING,
    RUNNING,
    SCHEDULED,
    TERMINAL,
    VALIDATING,
    Job,
    RowDraft,
    RowRecord,
    RowWork,
)
from daemon.domain.outcome import RowOutcome
from daemon.store.models import ApiKey, AttemptModel, FileModel, JobModel, RowModel, Workspace

INSERT_CHUNK = 500
CANCELLABLE = frozenset({SCHEDULED, VALIDATING, QUEUED, RUNNING, CANCELLING})


@dataclass(frozen=True)
class WorkspaceRecord:
    id: int
    name: str
    batch_access: bool = True
    expedited: bool = True
    webhook_secret: str | None = None


@dataclass(frozen=True)
class KeyRecord:
    id: int
    workspace: str
    prefix: str
    created_at: float
    revoked_at: float | None


@dataclass(frozen=True)
class JobDraft:
    """A job about to be stored; the store assigns `seq` and the counters."""

    id: str
    workspace_id: int
    dialect: str
    name: str
    model: str
    endpoint: str
    status: str
    priority: int
    created_at: float
    webhook_url: str | None = None
    cron: str | None = None
    next_run_at: float | None = None
    template_id: str | None = None
    tier: str = "standard"
    metadata: dict[str, Any] | None = None
    input_file_id: str | None = None
    expires_at: float | None = None


@dataclass(frozen=True)
class Flushed:
    """What one `save_outcomes` call changed."""

    completed: int
    failed: int
    dead_letter: int


def hash_key(plain: str) -> str:
    return hashlib.sha256(plain.encode()).hexdigest()


class Repo:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    # -- workspaces and keys -------------------------------------------------

    def ensure_workspace(self, name: str, *, now: float) -> WorkspaceRecord:
        with self.db.atomic("IMMEDIATE"):
            ws, _ = Workspace.get_or_create(name=name, defaults={"created_at": now})
        return _workspace(ws)

    def workspace(self, name: str) -> WorkspaceRecord | None:
        ws = Workspace.get_or_none(Workspace.name == name)
        return _workspace(ws) if ws else None

    def workspaces(self) -> list[WorkspaceRecord]:
        return [_workspace(ws) for ws in Workspace.select().order_by(Workspace.name)]

    def set_workspace(self, name: str, *, now: float, batch_access: bool | None = None,
                      expedited: bool | None = None) -> WorkspaceRecord:
        """Operator switches: batch API access and the expedited tier."""
        changes = {k: v for k, v in (("batch_access", batch_access), ("expedited", expedited))
                   if v is not None}
        with self.db.atomic("IMMEDIATE"):
            ws, _ = Workspace.get_or_create(name=name, defaults={"created_at": now})
            if changes:
                Workspace.update(**changes).where(Workspace.id == ws.id).execute()
        found = self.workspace(name)
        assert found is not None
        return found

    def create_key(self, workspace_name: str, *, now: float) -> str:
        plain = ids.api_key()
        with self.db.atomic("IMMEDIATE"):
            ws, _ = Workspace.get_or_create(name=workspace_name, defaults={"created_at": now})
            ApiKey.create(workspace=ws, prefix=plain[:10], key_hash=hash_key(plain),
                          created_at=now)
        return plain

    def list_keys(self, workspace_name: str | None = None) -> list[KeyRecord]:
        query = ApiKey.select(ApiKey, Workspace).join(Workspace).order_by(ApiKey.id)
        if workspace_name:
            query = query.where(Workspace.name == workspace_name)
        return [KeyRecord(k.id, k.workspace.name, k.prefix, k.created_at, k.revoked_at)
                for k in query]

    def revoke_key(self, prefix: str, *, now: float) -> int:
        """Revoke every live key starting with `prefix`; returns how many."""
        with self.db.atomic("IMMEDIATE"):
            if len(prefix) < 6:
                return 0
            wanted = prefix[:10]  # keys are case-sensitive; LIKE is not, substr is
            return (ApiKey.update(revoked_at=now)
                    .where(fn.substr(ApiKey.prefix, 1, len(wanted)) == wanted,
                           ApiKey.revoked_at.is_null())
                    .execute())

    def authenticate(self, plain: str) -> WorkspaceRecord | None:
        digest = hash_key(plain)
        key = (ApiKey.select(ApiKey, Workspace).join(Workspace)
               .where(ApiKey.key_hash == digest).first())
        if key is None or key.revoked_at is not None:
            return None
        if not hmac.compare_digest(key.key_hash, digest):
            return None
        return _workspace(key.workspace)

    # -- jobs ----------------------------------------------------------------

    def create_job(self, draft: JobDraft, rows: Sequence[RowDraft]) -> Job:
        """Store a job and all its rows in one transaction: all or nothing."""
        with self.db.atomic("IMMEDIATE"):
            stamps = json.dumps({draft.status: draft.created_at})
            job = JobModel.create(
                **_draft_fields(draft), total=len(rows), stamps=stamps,
                failed=sum(1 for r in rows if r.error),
            )
            self._insert_rows(job.seq, rows, now=draft.created_at)
        return _job(job)

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

    def get_job(self, job_id: str, *, workspace_id: int | None = None) -> Job | None:
        query = JobModel.select().where(JobModel.id == job_id)
        if workspace_id is not None:
            query = query.where(JobModel.workspace == workspace_id)
        row = query.first()
        return _job(row) if row else None

    def job_by_seq(self, seq: int) -> Job | None:
        row = JobModel.get_or_none(JobModel.seq == seq)
        return _job(row) if row else None

    def list_jobs(
        self,
        workspace_id: int,
        *,
        limit: int,
        after: str | None = None,
        statuses: Sequence[str] | None = None,
        template_id: str | None = None,
        dialect: str | None = None,
    ) -> tuple[list[Job], bool]:
        """Newest first; returns the page and whether more follow."""
        query = JobModel.select().where(JobModel.workspace == workspace_id)
        if after:
            cursor = JobModel.get_or_none(JobModel.id == after,
                                          JobModel.workspace == workspace_id)
            if cursor is None:
                return [], False
            query = query.where(JobModel.seq < cursor.seq)
        if statuses is not None:
            query = query.where(JobModel.status.in_(list(statuses)))
        if template_id is not None:
            query = query.where(JobModel.template_id == template_id)
        if dialect is not None:
            query = query.where(JobModel.dialect == dialect)
        rows = list(query.order_by(JobModel.seq.desc()).limit(limit + 1))
        return [_job(r) for r in rows[:limit]], len(rows) > limit

    # -- scheduling ----------------------------------------------------------

    def queued_jobs(self, limit: int) -> list[Job]:
        """The next jobs to admit: the expedited tier ahead of everything waiting, then
        highest priority, then oldest."""
        query = (JobModel.select().where(JobModel.status == QUEUED)
                 .order_by((JobModel.tier == "expedited").desc(), JobModel.priority.desc(),
                           JobModel.seq)
                 .limit(limit))
        return [_job(r) for r in query]

    def transition(self, seq: int, *, source: Iterable[str], target: str, now: float,
                   **fields: Any) -> Job | None:
        """Move a job from one of `source` to `target`; None if it was not in `source`."""
        with self.db.atomic("IMMEDIATE"):
            row = JobModel.get_or_none(JobModel.seq == seq)
            if row is None or row.status not in set(source):
                return None
            stamps = json.loads(row.stamps or "{}")
            stamps.setdefault(target, now)  # when the status was first entered
            JobModel.update(status=target, stamps=json.dumps(stamps), **fields).where(
                JobModel.seq == seq).execute()
        return self.job_by_seq(seq)

    def jobs_in(self, status: str) -> list[Job]:
        return [_job(r) for r in JobModel.select().where(JobModel.status == status)]

    def requeue_running(self, *, now: float) -> list[Job]:
        """At start: jobs a previous process left running go back to the queue."""
        seqs = [r.seq for r in JobModel.select(JobModel.seq).where(JobModel.status == RUNNING)]
        requeued = (self.transition(seq, source={RUNNING}, target=QUEUED, now=now)
                    for seq in seqs)
        return [job for job in requeued if job is not None]

    def retry_dead_letter(self, seq: int, *, new_id: str, custom_ids: Sequence[str] | None,
                          now: float) -> Job | None:
        """A new queued job from a job's dead-lettered rows (optionally only some)."""
        with self.db.atomic("IMMEDIATE"):
            source = JobModel.get_by_id(seq)
            query = RowModel.select().where(RowModel.job == seq, RowModel.dead_letter == 1)
            if custom_ids:
                query = query.where(RowModel.custom_id.in_(list(custom_ids)))
            rows = [RowDraft(custom_id=r.custom_id, body=json.loads(r.body), model=r.model)
                    for r in query.order_by(RowModel.position)]
            if not rows:
                return None
            draft = JobDraft(
                id=new_id, workspace_id=source.workspace_id, dialect=source.dialect,
                name=f"{source.name} (dead-letter retry)", model=source.model,
                endpoint=source.endpoint, status=QUEUED, priority=source.priority,
                created_at=now, webhook_url=source.webhook_url, tier=source.tier,
                metadata=_loads(source.metadata),
            )
            return self.create_job(draft, rows)

    # -- cron templates --------------------------------------------------------

    def due_templates(self, now: float) -> list[Job]:
        query = JobModel.select().where(JobModel.status == SCHEDULED,
                                        JobModel.next_run_at <= now)
        return [_job(r) for r in query.order_by(JobModel.next_run_at)]

    def spawn_run(self, template: Job, *, tick: float, next_run_at: float, run_id: str,
                  now: float) -> Job | None:
        """One queued run of a template, recorded with the tick it was for, in one
        transaction: a tick already taken (another process, a restart) spawns nothing."""
        with self.db.atomic("IMMEDIATE"):
            taken = (JobModel.update(next_run_at=next_run_at, last_run_id=run_id)
                     .where(JobModel.seq == template.seq, JobModel.status == SCHEDULED,
                            JobModel.next_run_at == tick).execute())
            if taken != 1:
                return None
            run = JobModel.create(**_draft_fields(JobDraft(
                id=run_id, workspace_id=template.workspace_id, dialect=template.dialect,
                name=template.name, model=template.model, endpoint=template.endpoint,
                status=QUEUED, priority=template.priority, created_at=now,
                webhook_url=template.webhook_url, template_id=template.id, tier=template.tier,
                metadata=template.metadata,
            )), total=template.total, stamps=json.dumps({QUEUED: now}))
            self.db.execute_sql(
                'INSERT INTO "row" (job_id, position, custom_id, model, body, status, '
                "attempts, dead_letter, prompt_tokens, completion_tokens, cost_nano_usd) "
                "SELECT ?, position, custom_id, model, body, ?, 0, 0, 0, 0, 0 "
                'FROM "row" WHERE job_id = ? ORDER BY position',
                (run.seq, ROW_PENDING, template.seq))
        return _job(run)

    # -- OpenAI dialect: validation and files ---------------------------------

    def accept_validated(self, seq: int, rows: Sequence[RowDraft], *, model: str | None,
                         now: float) -> Job | None:
        """A validated batch's records become its rows and it joins the queue, in one
        transaction; None if it left `validating` meanwhile (cancelled)."""
        with self.db.atomic("IMMEDIATE"):
            job = JobModel.get_or_none(JobModel.seq == seq)
            if job is None or job.status != VALIDATING:
                return None
            self._insert_rows(seq, rows, now=now)
            JobModel.update(total=len(rows), failed=sum(1 for r in rows if r.error),
                            model=model or job.model).where(JobModel.seq == seq).execute()
            return self.transition(seq, source={VALIDATING}, target=QUEUED, now=now)

    def fail_job(self, seq: int, *, error: str, now: float,
                 errors: list[dict[str, Any]] | None = None) -> Job | None:
        """The job could not run at all (validation failed, its model vanished)."""
        return self.transition(seq, source={VALIDATING, QUEUED}, target=FAILED, now=now,
                               finished_at=now, error=error,
                               errors=json.dumps(errors) if errors else None)

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

    def expired_jobs(self, now: float) -> list[Job]:
        query = JobModel.select().where(JobModel.expires_at <= now,
                                        JobModel.status.not_in(list(TERMINAL)))
        return [_job(r) for r in query]

    def add_file(self, record: FileRecord) -> FileRecord:
        with self.db.atomic("IMMEDIATE"):
            FileModel.create(id=record.id, workspace=record.workspace_id,
                             filename=record.filename, purpose=record.purpose,
                             bytes=record.bytes, status=record.status, path=record.path,
                             created_at=record.created_at)
        return record

    def file(self, file_id: str, *, workspace_id: int | None = None) -> FileRecord | None:
        query = FileModel.select().where(FileModel.id == file_id, FileModel.deleted_at.is_null())
        if workspace_id is not None:
            query = query.where(FileModel.workspace == workspace_id)
        row = query.first()
        return _file(row) if row else None

    def list_files(self, workspace_id: int, *, limit: int, after: str | None = None,
                   purpose: str | None = None) -> tuple[list[FileRecord], bool]:
        query = FileModel.select().where(FileModel.workspace == workspace_id,
                                         FileModel.deleted_at.is_null())
        if after:
            cursor = FileModel.get_or_none(FileModel.id == after,
                                           FileModel.workspace == workspace_id)
            if cursor is None:
                return [], False
            query = query.where(FileModel.seq < cursor.seq)
        if purpose:
            query = query.where(FileModel.purpose == purpose)
        rows = list(query.order_by(FileModel.seq.desc()).limit(limit + 1))
        return [_file(r) for r in rows[:limit]], len(rows) > limit

    def delete_file(self, file_id: str, *, workspace_id: int, now: float) -> FileRecord | None:
        with self.db.atomic("IMMEDIATE"):
            found = self.file(file_id, workspace_id=workspace_id)
            if found is not None:
                FileModel.update(deleted_at=now).where(FileModel.id == file_id).execute()
        return found

    # -- webhooks ------------------------------------------------------------

    def webhook_secret(self, workspace_id: int, *, rotate: bool = False) -> str:
        """The workspace's signing secret, created on first use."""
        with self.db.atomic("IMMEDIATE"):
            ws = Workspace.get_by_id(workspace_id)
            if ws.webhook_secret is None or rotate:
                ws.webhook_secret = "whsec_" + secrets.token_hex(24)
                ws.save()
            return ws.webhook_secret

    def claim_webhook(self, seq: int, *, now: float) -> bool:
        """Mark a job's webhook as being sent; False if it was claimed already."""
        claim = json.dumps({"state": "sending", "claimed_at": now})
        with self.db.atomic("IMMEDIATE"):
            return (JobModel.update(webhook=claim)
                    .where(JobModel.seq == seq, JobModel.webhook.is_null()).execute()) == 1

    def save_webhook(self, seq: int, outcome: dict[str, Any]) -> None:
        with self.db.atomic("IMMEDIATE"):
            JobModel.update(webhook=json.dumps(outcome)).where(JobModel.seq == seq).execute()

    def unsent_webhooks(self) -> list[Job]:
        """Ended jobs whose webhook was never claimed (the process stopped first)."""
        query = JobModel.select().where(JobModel.status.in_(list(TERMINAL)),
                                        JobModel.webhook_url.is_null(False),
                                        JobModel.webhook.is_null())
        return [_job(r) for r in query]

    def abandon_claimed_webhooks(self, *, now: float) -> int:
        """A claim that never got its outcome: the process died mid-delivery. Record that
        rather than send again, so a receiver never sees one run twice."""
        outcome = json.dumps({"status_code": None, "attempted_at": None,
                              "error": "delivery interrupted by a daemon restart; not retried"})
        with self.db.atomic("IMMEDIATE"):
            return (JobModel.update(webhook=outcome)
                    .where(JobModel.webhook.contains('"state": "sending"')).execute())

    # -- rows ----------------------------------------------------------------

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
             (o.response_text or _dumps(o.response)) if o.ok else _dumps(o.error_body),
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
            yield _row(r)

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
        return [_row(r, attempt_log=tuple(log[r.id])) for r in rows]


def _workspace(ws: Workspace) -> WorkspaceRecord:
    return WorkspaceRecord(id=ws.id, name=ws.name, batch_access=ws.batch_access,
                           expedited=ws.expedited, webhook_secret=ws.webhook_secret)


def _draft_fields(d: JobDraft) -> dict[str, Any]:
    return {
        "id": d.id, "workspace": d.workspace_id, "dialect": d.dialect, "name": d.name,
        "model": d.model, "endpoint": d.endpoint, "status": d.status, "priority": d.priority,
        "created_at": d.created_at, "webhook_url": d.webhook_url, "cron": d.cron,
        "next_run_at": d.next_run_at, "template_id": d.template_id, "tier": d.tier,
        "metadata": json.dumps(d.metadata) if d.metadata is not None else None,
        "input_file_id": d.input_file_id, "expires_at": d.expires_at,
    }


def _dumps(value: Any) -> str | None:
    return json.dumps(value) if value is not None else None


def _loads(text: str | None) -> Any:
    return json.loads(text) if text else None


def _job(r: JobModel) -> Job:
    return Job(
        id=r.id, seq=r.seq, workspace_id=r.workspace_id, dialect=r.dialect, name=r.name,
        model=r.model, endpoint=r.endpoint, status=r.status, priority=r.priority,
        created_at=r.created_at, total=r.total, completed=r.completed, failed=r.failed,
        dead_letter=r.dead_letter, input_tokens=r.input_tokens, output_tokens=r.output_tokens,
        cost_nano_usd=r.cost_nano_usd, started_at=r.started_at, finished_at=r.finished_at,
        error=r.error, webhook_url=r.webhook_url, webhook=_loads(r.webhook), cron=r.cron,
        next_run_at=r.next_run_at, template_id=r.template_id, last_run_id=r.last_run_id,
        tier=r.tier, metadata=_loads(r.metadata), errors=_loads(r.errors),
        input_file_id=r.input_file_id, output_file_id=r.output_file_id,
        error_file_id=r.error_file_id, expires_at=r.expires_at, stamps=_loads(r.stamps) or {},
    )


def _file(r: FileModel) -> FileRecord:
    return FileRecord(id=r.id, workspace_id=r.workspace_id, filename=r.filename,
                      purpose=r.purpose, bytes=r.bytes, created_at=r.created_at, path=r.path,
                      status=r.status)


def _row(r: RowModel, *, attempt_log: tuple[dict[str, Any], ...] = ()) -> RowRecord:
    return RowRecord(
        id=r.id, position=r.position, custom_id=r.custom_id, status=r.status,
        body=json.loads(r.body), attempts=r.attempts, response=_loads(r.response),
        status_code=r.status_code, error=r.error, error_code=r.error_code,
        dead_letter=bool(r.dead_letter),
        model=r.answered_by or r.model, attempt_log=attempt_log,
    )
