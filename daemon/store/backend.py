"""`SqlStore`: every query group on one class. Each backend (`sqlite.py`,
`postgres.py`) subclasses it with its database and the few methods where its SQL
differs (`sql.SqlBase`); the queries themselves are written once, on the store's own
models (`models.bind`), so any number of stores can be open in one process.

Every method of the `Store` interface is the store boundary (`faults.guard`): a
driver's storage fault leaves it as the store's own error, on every backend."""

from __future__ import annotations

import inspect

from peewee import Database

from daemon.store.access import AccessQueries
from daemon.store.budgets import BudgetQueries
from daemon.store.faults import guard
from daemon.store.file_records import FileQueries
from daemon.store.health import HealthQueries
from daemon.store.idempotency import IdempotencyQueries
from daemon.store.interface import Store
from daemon.store.jobs import JobQueries
from daemon.store.models import BaseModel, bind
from daemon.store.nodes import NodeQueries
from daemon.store.retention import RetentionQueries
from daemon.store.rows import RowQueries
from daemon.store.schema import version
from daemon.store.stats import StatsQueries
from daemon.store.webhooks import WebhookQueries
from daemon.store.workflows import WorkflowQueries

INTERFACE = tuple(name for name, value in vars(Store).items()
                  if inspect.isfunction(value) and not name.startswith("_"))


class SqlStore(AccessQueries, BudgetQueries, JobQueries, RowQueries, FileQueries, WebhookQueries,
               WorkflowQueries, HealthQueries, StatsQueries, NodeQueries, RetentionQueries,
               IdempotencyQueries):
    """The `Store` on one SQL database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.tables: list[type[BaseModel]] = list(bind(db).values())
        for model in self.tables:  # self.JobModel, self.RowModel, ... (SqlBase)
            setattr(self, model.__name__, model)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        guard(cls, [name for name in INTERFACE if name in vars(cls)])  # a backend's own

    def schema_version(self) -> int:
        return version(self)


guard(SqlStore, INTERFACE)
