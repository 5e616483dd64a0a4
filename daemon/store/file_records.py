"""File records: uploads and result files (their bytes live in `store/files.py`)."""

from __future__ import annotations

from collections.abc import Collection

from peewee import ModelSelect

from daemon.domain.files import FileRecord
from daemon.store.models import FileModel
from daemon.store.records import file_record
from daemon.store.sql import SqlBase, chunks


def insert_file(store: SqlBase, record: FileRecord) -> None:
    """One file record (inside the caller's transaction)."""
    store.FileModel.create(
        id=record.id, workspace=record.workspace_id, filename=record.filename,
        purpose=record.purpose, bytes=record.bytes, status=record.status, path=record.path,
        created_at=record.created_at, expires_at=record.expires_at)


class FileQueries(SqlBase):
    """Queries over file records."""


    def add_file(self, record: FileRecord) -> FileRecord:
        with self.write():
            insert_file(self, record)
        return record

    def file(self, file_id: str, *, workspace_id: int | None = None) -> FileRecord | None:
        row = self._live_file(file_id, workspace_id).first()
        return file_record(row) if row else None

    def list_files(self, workspace_id: int, *, limit: int, after: str | None = None,
                   purpose: str | None = None, ascending: bool = False,
                   now: float | None = None) -> tuple[list[FileRecord], bool]:
        """A page of files, newest first (or oldest first); `after` is the last id seen.
        With `now`, files expired by then are left out."""
        query = self.FileModel.select().where(self.FileModel.workspace == workspace_id,
                                              self.FileModel.deleted_at.is_null())
        if after:
            cursor = self.FileModel.get_or_none(self.FileModel.id == after,
                                                self.FileModel.workspace == workspace_id)
            if cursor is None:
                return [], False
            query = query.where(self.FileModel.seq > cursor.seq if ascending
                                else self.FileModel.seq < cursor.seq)
        if purpose:
            query = query.where(self.FileModel.purpose == purpose)
        if now is not None:
            query = query.where(self.FileModel.expires_at.is_null()
                                | (self.FileModel.expires_at > now))
        order = self.FileModel.seq.asc() if ascending else self.FileModel.seq.desc()
        rows = list(query.order_by(order).limit(limit + 1))
        return [file_record(r) for r in rows[:limit]], len(rows) > limit

    def delete_file(self, file_id: str, *, workspace_id: int, now: float) -> FileRecord | None:
        with self.write():
            row = self.locked(self._live_file(file_id, workspace_id)).first()
            if row is not None:
                (self.FileModel.update(deleted_at=now)
                 .where(self.FileModel.seq == row.seq).execute())
        return file_record(row) if row else None

    def expire_files(self, *, now: float) -> list[FileRecord]:
        """Delete the records of the files whose `expires_at` has passed, and return them
        (their bytes are the caller's to remove)."""
        due = self.FileModel.select().where(self.FileModel.deleted_at.is_null(),
                                            self.FileModel.expires_at <= now)
        with self.write():  # what is read is what is updated, and no other node takes it
            rows = list(self.locked(due.order_by(self.FileModel.seq)))
            for part in chunks([r.seq for r in rows]):
                (self.FileModel.update(deleted_at=now)
                 .where(self.FileModel.seq.in_(list(part))).execute())
        return [file_record(r) for r in rows]

    def recorded_files(self, file_ids: Collection[str]) -> set[str]:
        """The ids among `file_ids` that a live (not deleted) record names."""
        found = set()
        for part in chunks(list(file_ids)):
            found |= {r.id for r in self.FileModel.select(self.FileModel.id).where(
                self.FileModel.id.in_(list(part)), self.FileModel.deleted_at.is_null())}
        return found

    def _live_file(self, file_id: str, workspace_id: int | None) -> ModelSelect[FileModel]:
        """A file not deleted, by id (and workspace, when given)."""
        query = self.FileModel.select().where(self.FileModel.id == file_id,
                                              self.FileModel.deleted_at.is_null())
        if workspace_id is not None:
            query = query.where(self.FileModel.workspace == workspace_id)
        return query
