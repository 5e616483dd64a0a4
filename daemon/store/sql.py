"""What every query group stands on: the database handle, and the few places where the
backends' SQL differs, each behind one small method a backend implements (`write`,
`schema_change`, `locked`, `whole`, `json_text`); plus the bulk statements written as
raw SQL for speed.

The raw statements use `{p}` for a parameter and are formatted with the backend's
own marker (`db.param`: `?` for SQLite, `%s` for PostgreSQL), so they are the
same text on every backend. Booleans are written `FALSE` and bound as `bool`
(PostgreSQL's `boolean` takes no 0/1); every other word in them means the same on both.
Rows and attempts go in through `insert_many` (SQLite: `executemany`; PostgreSQL:
`COPY`, a few times faster than one `INSERT` per row even when pipelined).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from peewee import Database, ModelSelect

import daemon.store.models as models
from daemon.domain.jobs import ROW_PENDING

ROW_COLUMNS = ("job_id", "position", "custom_id", "model", "body", "status", "error",
               "error_code", "finished_at", "attempts", "dead_letter", "prompt_tokens",
               "completion_tokens", "cost_nano_usd", "finished_seq")
ATTEMPT_COLUMNS = ("row_id", "model", "status_code", "error", "duration_ms", "started_at",
                   "transient")
EXECUTOR_CALL_COLUMNS = ("row_id", "round", "executor", "status_code", "error", "duration_ms",
                         "started_at")
COPY_ROWS = (
    'INSERT INTO "row" (job_id, position, custom_id, model, body, status, attempts, '
    "dead_letter, prompt_tokens, completion_tokens, cost_nano_usd) "
    "SELECT {p}, position, custom_id, model, body, {p}, 0, FALSE, 0, 0, 0 "
    'FROM "row" WHERE job_id = {p} ORDER BY position')
WORK_COLUMNS = "id, custom_id, model, body, lease_token"  # what a worker runs (`works`)
PENDING_ROWS = (
    f'SELECT {WORK_COLUMNS} FROM "row" WHERE job_id = {{p}} '
    "AND status = {p} AND id > {p} ORDER BY id LIMIT {p}")
# A row's result, without its request: `finished_record` reads it.
FINISHED_COLUMNS = ("id, position, custom_id, status, attempts, response, status_code, error, "
                    "error_code, dead_letter, answered_by, model, finished_seq")
FINISHED_ROWS = (
    f'SELECT {FINISHED_COLUMNS} FROM "row" '
    "WHERE job_id = {p} AND finished_seq > {p} ORDER BY finished_seq LIMIT {p}")
# A row whole, as `records.row_of` reads it (a job's rows in order: result files, pages).
ROW_RECORD_FIELDS = ("id", "position", "custom_id", "status", "body", "attempts", "response",
                     "status_code", "error", "error_code", "dead_letter", "answered_by",
                     "model", "redriven_to", "discarded_at", "finished_seq")
ROW_RECORD_COLUMNS = ", ".join(ROW_RECORD_FIELDS)
ROWS_BY_POSITION = (
    f'SELECT {ROW_RECORD_COLUMNS} FROM "row" WHERE job_id = {{p}} AND position > {{p}} '
    "ORDER BY position LIMIT {p}")
# What a row's outcome sets, in this order (then the row's id): `store_outcomes`.
OUTCOME_COLUMNS = ("status", "attempts", "response", "status_code", "error", "error_code",
                   "dead_letter", "answered_by", "prompt_tokens", "completion_tokens",
                   "cost_nano_usd", "finished_at", "finished_seq")
UPDATE_ROWS = ('UPDATE "row" SET ' + ", ".join(f"{column} = {{p}}" for column in OUTCOME_COLUMNS)
               + ", lease_node = NULL WHERE id = {p} AND status = {p}")
FINISH_COUNTER = "SELECT finished_seq FROM job WHERE seq = {p}{for_update}"
PENDING_TOKENS = ('SELECT id, lease_token FROM "row" WHERE status = {p} AND id IN ({ids})'
                  "{for_update}")
# The reads every API request and every status poll makes, written out: Peewee spends
# about a millisecond building a select of the job's forty columns, the database a
# few dozen microseconds answering it.
JOB_BY_ID = "SELECT * FROM job WHERE id = {p} AND deleted_at IS NULL{in_workspace}"
JOB_BY_SEQ = "SELECT * FROM job WHERE seq = {p}"
# The scheduler's reads at every tick (four a second), raw: Peewee took about a
# millisecond to build each, most of an idle daemon's CPU.
DUE_TEMPLATES = ("SELECT * FROM job WHERE status = {p} AND next_run_at <= {p} "
                 "ORDER BY next_run_at")
EXPIRED_JOBS = ("SELECT * FROM job WHERE (expires_at <= {p} OR deadline_at <= {p}) "
                "AND status IN ({statuses}) ORDER BY seq")
BUDGETED = ("SELECT id, budget_nano_usd, budget_period FROM workspace "
            "WHERE budget_nano_usd IS NOT NULL{among}")
# The cluster's one order of jobs waiting for a slot (`queued_jobs`, `joinable_jobs`):
# the expedited tier ahead of everything, then highest priority, then the earliest
# deadline (jobs without one after), then oldest.
ADMISSION_ORDER = ("(tier = 'expedited') DESC, priority DESC, (deadline_at IS NULL), "
                   "deadline_at, seq")
KEY_OWNER = ("SELECT k.key_hash, k.revoked_at AS key_revoked_at, w.* FROM api_key k "
             "JOIN workspace w ON w.id = k.workspace_id WHERE k.key_hash = {p}")
SAVE_ROUNDS = (  # a round already stored (its model turn alone) becomes the whole round
    'INSERT INTO "round" (row_id, number, model, prompt_tokens, completion_tokens, messages) '
    "VALUES ({p}, {p}, {p}, {p}, {p}, {p}) ON CONFLICT (row_id, number) DO UPDATE SET "
    "model = excluded.model, prompt_tokens = excluded.prompt_tokens, "
    "completion_tokens = excluded.completion_tokens, messages = excluded.messages")
SAVE_WORKFLOW = (
    'INSERT INTO "workflow" (row_id, state) VALUES ({p}, {p}) '
    "ON CONFLICT (row_id) DO UPDATE SET state = excluded.state")
SAVE_WORKFLOW_RESULT = (
    'INSERT INTO "workflow_result" (row_id, step, position, result) VALUES ({p}, {p}, {p}, {p}) '
    "ON CONFLICT (row_id, step, position) DO NOTHING")

IN_CHUNK = 500  # values in one `IN (...)`: far below SQLite's and PostgreSQL's limits

T = TypeVar("T")
Query = TypeVar("Query", bound="ModelSelect[Any]")


def chunks(values: Sequence[T]) -> list[Sequence[T]]:
    """`values` in pieces of at most `IN_CHUNK`, for `IN (...)` lists of any length."""
    return [values[i:i + IN_CHUNK] for i in range(0, len(values), IN_CHUNK)]


def padded(values: Sequence[T]) -> list[T | None]:
    """`values`, then NULLs up to a power of two: an `IN (...)` list of one of a few
    lengths, so its statement has a few texts, each prepared once and kept (a NULL
    matches nothing)."""
    size = 1 << max(0, len(values) - 1).bit_length()
    return [*values, *[None] * (size - len(values))]


def in_list(values: Sequence[Any]) -> str:
    """The parameter marks of an `IN (...)` list of `values`."""
    return ", ".join(["{p}"] * len(values))


class SqlBase:
    """The handle every query group (access, jobs, rows, files, webhooks) shares: the
    database and its own models (`models.bind`, one attribute per table), and the
    methods where a backend's SQL differs."""

    db: Database
    tables: list[type[models.BaseModel]]  # every table, each after those it refers to
    SchemaVersion: type[models.SchemaVersion]
    Workspace: type[models.Workspace]
    ApiKey: type[models.ApiKey]
    JobModel: type[models.JobModel]
    RowModel: type[models.RowModel]
    AttemptModel: type[models.AttemptModel]
    RoundModel: type[models.RoundModel]
    WorkflowModel: type[models.WorkflowModel]
    WorkflowResultModel: type[models.WorkflowResultModel]
    FileModel: type[models.FileModel]
    ProbeModel: type[models.ProbeModel]
    NodeModel: type[models.NodeModel]
    SpendModel: type[models.SpendModel]
    IdempotencyKeyModel: type[models.IdempotencyKeyModel]
    ExecutorCallModel: type[models.ExecutorCallModel]
    # Appended to a subquery choosing rows to lease: nodes leasing at once skip each
    # other's rows rather than wait (PostgreSQL); nothing where a write holds the
    # whole database (SQLite).
    SKIP_LOCKED = ""
    # Appended to a raw read that decides a write (what `locked` does to a query), and
    # to one many writers may make at once (what `shared` does).
    FOR_UPDATE = ""
    FOR_SHARE = ""
    SHARED = False  # whether other relayd processes may use the same database
    QUICK_READS = False  # whether a read of one row by its key may run on the caller's loop
    RETURNING = True  # whether the database has `UPDATE … RETURNING`

    def write(self) -> AbstractContextManager[Any]:
        """A write transaction, taken the way this backend needs it."""
        raise NotImplementedError

    def insert_many(self, table: str, columns: Sequence[str],
                    values: Iterable[Sequence[Any]]) -> None:
        """Many rows into `table` (inside the caller's transaction), the fastest way
        this backend has."""
        raise NotImplementedError

    def schema_change(self) -> AbstractContextManager[Any]:
        """The transaction that creates or migrates the schema, held by one process at a
        time (nodes sharing a database may start at once)."""
        raise NotImplementedError

    def locked(self, query: Query) -> Query:
        """`query` for a read that decides a write in the same transaction: on a backend
        whose write transactions run side by side, its rows stay locked until the
        transaction ends (`FOR UPDATE`)."""
        raise NotImplementedError

    def shared(self, query: Query) -> Query:
        """`query` for a read that many writers may make at once, while a `locked` one
        waits for them (PostgreSQL `FOR SHARE`): nodes leasing one job's rows at once
        lease side by side, and a job's ending waits for them."""
        return self.locked(query)

    def whole(self, expr: str) -> str:
        """SQL for the whole part (the floor) of a non-negative number."""
        raise NotImplementedError

    def json_text(self, column: str, key: str) -> str:
        """SQL for the text at `key` of the JSON object in `column` (NULL when absent)."""
        raise NotImplementedError

    def table_bytes(self) -> dict[str, int]:
        """Bytes by table, its indexes included (`relayd db stats`)."""
        raise NotImplementedError

    def reclaim(self, *, pages: int) -> bool:
        """Give up to `pages` free pages back to the file system, where the backend does
        that itself rather than by its own vacuum; True while free pages are left."""
        raise NotImplementedError

    def lock_job(self, seq: int) -> models.JobModel | None:
        """A job read for a write that depends on it. Whoever writes a job and its rows
        locks the job first, so two writers of one job wait rather than deadlock."""
        return self.locked(self.JobModel.select().where(self.JobModel.seq == seq)).first()

    def hold_job(self, seq: int) -> None:
        """`lock_job` for a write that needs only the lock, not the job (a backend whose
        write transactions hold the whole database skips the read)."""
        self.lock_job(seq)

    def fetch_all(self, statement: str, params: Sequence[Any], *,
                  columns: str) -> list[tuple[Any, ...]]:
        """Every row a raw read finds (`statement` in this backend's style, selecting
        `columns`, by name; no REAL among them: see the SQLite backend's)."""
        return list(self.db.execute_sql(statement, params).fetchall())

    def store_outcomes(self, values: Sequence[Sequence[Any]]) -> None:
        """Each of `values` (a row's `OUTCOME_COLUMNS`, then its id) onto its row, if the
        row is still pending; the row's lease goes."""
        self.db.cursor().executemany(self.sql(UPDATE_ROWS),
                                     [(*value, ROW_PENDING) for value in values])

    def pending_tokens(self, ids: Sequence[int]) -> dict[int, int]:
        """`{row id: lease token}` of those of `ids` still pending, locked for the
        caller's write."""
        tokens: dict[int, int] = {}
        for part in chunks(ids):
            values = padded(part)
            statement = self.sql(PENDING_TOKENS, ids=in_list(values),
                                 for_update=self.FOR_UPDATE)
            tokens.update(self.fetch_all(statement, (ROW_PENDING, *values),
                                         columns="id, lease_token"))
        return tokens

    def fenced(self, leases: Mapping[int, int]) -> set[int]:
        """Of rows leased as `{row id: lease token}`, those whose lease has moved on
        (another node leased them since) or that are no longer pending: nothing of
        theirs may be stored under this lease any more."""
        current = self.pending_tokens(list(leases))
        return {rid for rid, token in leases.items() if current.get(rid) != token}

    def sql(self, statement: str, **fragments: str) -> str:
        """A raw statement in this backend's parameter style; `fragments` fill its other
        `{name}`s and may hold `{p}` themselves."""
        if fragments:
            statement = statement.format(p="{p}", **fragments)
        return statement.format(p=self.db.param)

    def one(self, statement: str, params: Sequence[Any],
            **fragments: str) -> dict[str, Any] | None:
        """The first row a raw read finds, keyed by column name (None: no row)."""
        cursor = self.db.execute_sql(self.sql(statement, **fragments), params)
        row = cursor.fetchone()
        if row is None:
            return None
        return dict(zip([column[0] for column in cursor.description], row, strict=True))

    def many(self, statement: str, params: Sequence[Any],
             **fragments: str) -> list[dict[str, Any]]:
        """Every row a raw read finds, each keyed by column name (for reads of a few
        rows: SQLite steps each one)."""
        cursor = self.db.execute_sql(self.sql(statement, **fragments), params)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def close(self) -> None:
        self.db.close()
