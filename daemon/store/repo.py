"""The store's one entry point: queries over every table, returning domain records.
Peewee never leaks out of `store/`.

Every write that changes a job's state is one transaction (`atomic("IMMEDIATE")`,
so WAL readers never turn into failing writers). Rows are inserted and updated
in bulk: there is no per-row commit anywhere.
"""

from __future__ import annotations

from peewee import SqliteDatabase

from daemon.store.access import AccessQueries
from daemon.store.file_records import FileQueries
from daemon.store.jobs import JobQueries
from daemon.store.records import Flushed, JobDraft, KeyRecord, WorkspaceRecord, hash_key
from daemon.store.rows import RowQueries
from daemon.store.webhooks import WebhookQueries

__all__ = ["Flushed", "JobDraft", "KeyRecord", "Repo", "WorkspaceRecord", "hash_key"]


class Repo(AccessQueries, JobQueries, RowQueries, FileQueries, WebhookQueries):
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db
