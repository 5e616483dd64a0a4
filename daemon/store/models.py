"""Peewee models: the tables of Relay's store. Nothing outside `store/` imports them.

The classes here define the tables and bind to no database. Each store gets its own
copy of them bound to its own database (`bind`), built once when it opens, and its
queries reach them through the store (`self.JobModel`): two stores open in one process
(two SQLite files, SQLite and PostgreSQL) never share a model, so neither re-points
the other's queries.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from peewee import (
    SQL,
    AutoField,
    BlobField,
    BooleanField,
    CompositeKey,
    Database,
    FloatField,
    ForeignKeyField,
    IntegerField,
    Model,
    TextField,
)


class BaseModel(Model):
    """Every table's base, bound to no database: a store binds its own copy (`bind`)."""


class SchemaVersion(BaseModel):
    version = IntegerField()
    applied_at = FloatField()

    class Meta:
        table_name = "schema_version"


class Workspace(BaseModel):
    id = AutoField()
    name = TextField(unique=True)
    created_at = FloatField()
    batch_access = BooleanField(default=True)
    expedited = BooleanField(default=True)
    workflows = BooleanField(default=False)  # may run workflow records (operator's switch)
    webhook_secret = TextField(null=True)
    budget_nano_usd = IntegerField(null=True)  # its budget (v15); None: no budget
    budget_period = TextField(null=True)  # month, day or none (domain/budget.py)

    class Meta:
        table_name = "workspace"


class ApiKey(BaseModel):
    id = AutoField()
    workspace = ForeignKeyField(Workspace, backref="keys", on_delete="CASCADE")
    prefix = TextField()
    key_hash = TextField(unique=True)
    created_at = FloatField()
    revoked_at = FloatField(null=True)

    class Meta:
        table_name = "api_key"


class JobModel(BaseModel):
    workspace_id: int  # the foreign key's column, as Peewee exposes it
    seq = AutoField()
    id = TextField(unique=True)
    workspace = ForeignKeyField(Workspace, backref="jobs", on_delete="CASCADE")
    dialect = TextField()
    name = TextField()
    model = TextField()
    endpoint = TextField()
    status = TextField(index=True)
    priority = IntegerField(default=0)
    tier = TextField(default="standard")
    total = IntegerField(default=0)
    completed = IntegerField(default=0)
    failed = IntegerField(default=0)
    dead_letter = IntegerField(default=0)
    dead_letter_open = IntegerField(default=0)  # neither re-driven nor discarded (v10)
    canceled = IntegerField(default=0)  # failed rows that never ran (v10)
    input_tokens = IntegerField(default=0)
    output_tokens = IntegerField(default=0)
    cached_tokens = IntegerField(default=0)  # of input_tokens (schema version 8)
    reasoning_tokens = IntegerField(default=0)  # of output_tokens (schema version 8)
    cost_nano_usd = IntegerField(default=0)
    outputs_valid = IntegerField(default=0)  # checked answers valid at once (v15)
    outputs_repaired = IntegerField(default=0)  # valid after one or more repairs (v15)
    outputs_invalid = IntegerField(default=0)  # still invalid: ended invalid_output (v15)
    created_at = FloatField()
    started_at = FloatField(null=True)
    finished_at = FloatField(null=True)
    error = TextField(null=True)
    webhook_url = TextField(null=True)
    webhook = TextField(null=True)  # JSON: the delivery outcome
    webhook_state = TextField(null=True)  # queued, sending, done (store/webhooks.py)
    webhook_node = TextField(null=True)  # the node that claimed the delivery (v11)
    validating_node = TextField(null=True)  # the node validating the batch (v11)
    deleted_at = FloatField(null=True)  # a client deleted it (v13): hidden, kept as a cursor
    cron = TextField(null=True)
    next_run_at = FloatField(null=True, index=True)
    template_id = TextField(null=True, index=True)
    last_run_id = TextField(null=True)
    metadata = TextField(null=True)  # JSON
    errors = TextField(null=True)  # JSON
    input_file_id = TextField(null=True)
    output_file_id = TextField(null=True)
    error_file_id = TextField(null=True)
    expires_at = FloatField(null=True)
    stamps = TextField(default="{}")  # JSON: status -> unix seconds
    retry_of = TextField(null=True)  # the job whose dead-lettered rows this one re-drives
    output_expires_after_s = IntegerField(null=True)  # its result files' lifetime
    # The last finish sequence given to one of its rows (v14), moved under the job's lock.
    finished_seq = IntegerField(default=0, constraints=[SQL("DEFAULT 0")])
    # Paused (v15): by an operator (`POST …/pause`), and, apart, because its workspace
    # spent its budget. Either keeps it from taking a running slot.
    paused_at = FloatField(null=True)
    budget_paused_at = FloatField(null=True)
    # A Relay job's deadline (v19), and the running time the estimate gave it at submit.
    deadline_at = FloatField(null=True)
    deadline_drain_s = FloatField(null=True)

    class Meta:
        table_name = "job"
        indexes = ((("workspace", "seq"), False),)


class RowModel(BaseModel):
    job_id: int  # the foreign key's column, as Peewee exposes it
    id = AutoField()
    job = ForeignKeyField(JobModel, backref="rows", on_delete="CASCADE", index=False)
    position = IntegerField()
    custom_id = TextField()
    model = TextField(null=True)
    body = TextField()  # JSON
    status = TextField(default="pending")
    attempts = IntegerField(default=0)
    response = TextField(null=True)  # JSON
    status_code = IntegerField(null=True)
    error = TextField(null=True)
    error_code = TextField(null=True)
    dead_letter = BooleanField(default=False)
    cost_nano_usd = IntegerField(default=0)
    answered_by = TextField(null=True)
    prompt_tokens = IntegerField(default=0)
    completion_tokens = IntegerField(default=0)
    finished_at = FloatField(null=True)
    redriven_to = TextField(null=True)  # the job a dead-letter retry sent this row to
    discarded_at = FloatField(null=True)  # taken off the dead-letter list (v10)
    lease_node = TextField(null=True)  # the node running this pending row (v11)
    # Changes whenever a node leases the row (v12): the fencing token every start and
    # every write of the row's outcome, rounds or workflow state is conditional on.
    lease_token = IntegerField(default=0, constraints=[SQL("DEFAULT 0")])  # bulk inserts omit it
    # Its place in the job's finish order (v14): the partial results' cursor follows it.
    finished_seq = IntegerField(null=True)

    class Meta:
        table_name = "row"
        indexes = ((("job", "status", "id"), False), (("job", "position"), False),
                   (("job", "custom_id"), False), (("job", "finished_seq"), False))


# Only rows leased right now are in it: a node's leases are found without a scan.
LEASED_ROWS_INDEX = ('CREATE INDEX IF NOT EXISTS "row_lease_node" ON "row" ("lease_node") '
                     "WHERE lease_node IS NOT NULL")


class AttemptModel(BaseModel):
    row_id: int
    id = AutoField()
    row = ForeignKeyField(RowModel, backref="attempt_log", on_delete="CASCADE")
    model = TextField()
    status_code = IntegerField(null=True)
    error = TextField(null=True)
    duration_ms = IntegerField()
    started_at = FloatField()
    transient = BooleanField(default=False)

    class Meta:
        table_name = "attempt"


class ExecutorCallModel(BaseModel):
    """One call of a tool-calling row to its tool executor (v15): a round's tool calls
    (`round` from 1) or the discovery of its tools (0), each retry a call of its own."""

    row_id: int
    id = AutoField()
    row = ForeignKeyField(RowModel, backref="executor_calls", on_delete="CASCADE")
    round = IntegerField()
    executor = TextField()  # "http" or "mcp"
    status_code = IntegerField(null=True)
    error = TextField(null=True)
    duration_ms = IntegerField()
    started_at = FloatField()

    class Meta:
        table_name = "executor_call"


class RoundModel(BaseModel):
    """One finished tool round of a row: the model's turn and the tool results."""

    row_id: int
    id = AutoField()
    row = ForeignKeyField(RowModel, backref="rounds", on_delete="CASCADE", index=False)
    number = IntegerField()  # 1-based
    model = TextField()  # the alias that answered
    prompt_tokens = IntegerField(default=0)
    completion_tokens = IntegerField(default=0)
    messages = TextField()  # JSON: the assistant message, then one tool message per call

    class Meta:
        table_name = "round"
        indexes = ((("row", "number"), True),)


class WorkflowModel(BaseModel):
    """Where a workflow record stands: its step, pending event, totals (JSON)."""

    row_id: int
    row = ForeignKeyField(RowModel, primary_key=True, on_delete="CASCADE")
    state = TextField()

    class Meta:
        table_name = "workflow"


class WorkflowResultModel(BaseModel):
    """One finished request of a workflow step, stored as it finishes."""

    row_id: int
    id = AutoField()
    row = ForeignKeyField(RowModel, on_delete="CASCADE", index=False)
    step = IntegerField()
    position = IntegerField()  # the request's index in its step
    result = TextField()  # JSON: {index, status_code, body} or {index, error}

    class Meta:
        table_name = "workflow_result"
        indexes = ((("row", "step", "position"), True),)


class FileModel(BaseModel):
    """An uploaded input file or a written result file; the bytes live under data_dir."""

    workspace_id: int
    seq = AutoField()
    id = TextField(unique=True)
    workspace = ForeignKeyField(Workspace, backref="files", on_delete="CASCADE")
    filename = TextField()
    purpose = TextField()
    bytes = IntegerField(default=0)
    status = TextField(default="uploaded")
    path = TextField()
    created_at = FloatField()
    deleted_at = FloatField(null=True)
    expires_at = FloatField(null=True)  # OpenAI's expires_after; None: kept until deleted

    class Meta:
        table_name = "file"
        indexes = ((("workspace", "seq"), False),)


class ProbeModel(BaseModel):
    """One row the health probe rewrites every few seconds: proof that writes work."""

    id = IntegerField(primary_key=True)
    at = FloatField()

    class Meta:
        table_name = "probe"


class NodeModel(BaseModel):
    """One relayd process on this database: who it is, where, and when it last beat.
    Its leases on rows live while its heartbeat is fresh (docs/deployment.md)."""

    id = TextField(primary_key=True)
    address = TextField()
    version = TextField()
    started_at = FloatField()
    heartbeat_at = FloatField()
    stopping = BooleanField(default=False)  # draining after SIGTERM
    jobs = TextField(default="[]")  # JSON: the seqs of the jobs it runs

    class Meta:
        table_name = "node"


class SpendModel(BaseModel):
    """What a workspace spent on one UTC day (v15), in nano-USD: added to in the
    transaction that stores the outcomes, so every node's spend is summed here."""

    workspace_id = IntegerField()
    day = IntegerField()  # days since 1970-01-01, UTC (domain/budget.py: day_of)
    nano_usd = IntegerField(default=0)

    class Meta:
        table_name = "spend"
        primary_key = CompositeKey("workspace_id", "day")


class IdempotencyKeyModel(BaseModel):
    """An `Idempotency-Key` a workspace sent (v17): reserved by its first request, then
    holding that request's answer (domain/idempotency.py); swept after 24 hours."""

    workspace_id = IntegerField()
    key = TextField()
    route = TextField()  # the method and path it was sent to
    body_sha256 = TextField()
    created_at = FloatField(index=True)
    status = IntegerField(null=True)  # None: the first request is in progress
    content_type = TextField(null=True)
    answer = BlobField(null=True)

    class Meta:
        table_name = "idempotency_key"
        primary_key = CompositeKey("workspace_id", "key")


# Every table, each after the tables it refers to.
TABLES = [SchemaVersion, Workspace, ApiKey, JobModel, RowModel, AttemptModel, RoundModel,
          WorkflowModel, WorkflowResultModel, FileModel, ProbeModel, NodeModel, SpendModel,
          ExecutorCallModel, IdempotencyKeyModel]


def bind(db: Database) -> dict[str, type[BaseModel]]:
    """`db`'s own copy of every table, by model name: a subclass of each model above,
    bound to `db`, whose foreign keys point at the other copies (so joins and the
    schema `create_tables` writes are those of the definitions, on this database)."""
    copies: dict[type[Model], type[BaseModel]] = {}
    for model in TABLES:  # each after the tables it refers to
        meta = model._meta
        attrs: dict[str, Any] = {
            "__module__": __name__,
            "Meta": type("Meta", (), {"database": db, "table_name": meta.table_name})}
        for key in meta.refs:
            attrs[key.name] = _referring_to(key, copies[key.rel_model])
        copies[model] = type(model.__name__, (model,), attrs)
    return {model.__name__: copy for model, copy in copies.items()}


def _referring_to(key: ForeignKeyField[Any], target: type[Model]) -> ForeignKeyField[Any]:
    """Foreign key `key` (its column, index, `ON DELETE`, backref) pointing at `target`."""
    copy = deepcopy(key)
    copy.rel_model, copy.rel_field = target, None  # `target`'s own primary key, on binding
    copy.declared_backref = key.backref
    return copy
