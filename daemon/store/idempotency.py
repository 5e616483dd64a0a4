"""Idempotency keys (domain/idempotency.py): reserved insert-first, so of concurrent
requests with one key exactly one reserves it (the primary key decides, on every
backend); answered; released when the request failed; swept after 24 hours."""

from __future__ import annotations

from daemon.domain.idempotency import KEEP_S, StoredKey
from daemon.store.sql import SqlBase

RESERVE = ('INSERT INTO "idempotency_key" ("workspace_id", "key", "route", "body_sha256", '
           '"created_at") VALUES ({p}, {p}, {p}, {p}, {p}) '
           'ON CONFLICT ("workspace_id", "key") DO NOTHING')


class IdempotencyQueries(SqlBase):
    """Queries over the idempotency keys."""

    def reserve_key(self, workspace_id: int, key: str, *, route: str, body_sha256: str,
                    now: float) -> StoredKey | None:
        """Reserve `key` for a request at `now`: None when this request has it (a key
        older than 24 hours is taken over), else the live key another request holds."""
        with self.write():
            model = self.IdempotencyKeyModel
            (model.delete().where((model.workspace_id == workspace_id) & (model.key == key)
                                  & (model.created_at <= now - KEEP_S)).execute())
            cursor = self.db.execute_sql(self.sql(RESERVE),
                                         (workspace_id, key, route, body_sha256, now))
            if cursor.rowcount == 1:
                return None
            found = model.get_or_none((model.workspace_id == workspace_id) & (model.key == key))
        if found is None:  # released by its request since: a retry may reserve it
            return self.reserve_key(workspace_id, key, route=route, body_sha256=body_sha256,
                                    now=now)
        return StoredKey(key=found.key, route=found.route, body_sha256=found.body_sha256,
                         created_at=found.created_at, status=found.status,
                         content_type=found.content_type,
                         answer=bytes(found.answer) if found.answer is not None else None)

    def answer_key(self, workspace_id: int, key: str, *, status: int, content_type: str,
                   answer: bytes) -> None:
        """Store the answer of the request that reserved `key`."""
        model = self.IdempotencyKeyModel
        with self.write():
            (model.update(status=status, content_type=content_type, answer=answer)
             .where((model.workspace_id == workspace_id) & (model.key == key)).execute())

    def release_key(self, workspace_id: int, key: str) -> None:
        """Take back a reservation whose request failed (it created nothing)."""
        model = self.IdempotencyKeyModel
        with self.write():
            (model.delete().where((model.workspace_id == workspace_id) & (model.key == key)
                                  & model.answer.is_null()).execute())

    def sweep_keys(self, *, now: float) -> int:
        """Delete every key older than 24 hours at `now`; returns how many."""
        model = self.IdempotencyKeyModel
        with self.write():
            return int(model.delete().where(model.created_at <= now - KEEP_S).execute())
