"""Workspaces, API keys and the per-workspace webhook secret."""

from __future__ import annotations

import hmac
import secrets

from peewee import fn

from daemon.domain import ids
from daemon.store.interface import KeyRecord, WorkspaceRecord
from daemon.store.records import hash_key, workspace_of, workspace_record
from daemon.store.sql import KEY_OWNER, SqlBase


class AccessQueries(SqlBase):
    """Queries over workspaces and keys."""


    def ensure_workspace(self, name: str, *, now: float) -> WorkspaceRecord:
        with self.write():
            ws, _ = self.Workspace.get_or_create(name=name, defaults={"created_at": now})
        return workspace_record(ws)

    def workspace(self, name: str) -> WorkspaceRecord | None:
        ws = self.Workspace.get_or_none(self.Workspace.name == name)
        return workspace_record(ws) if ws else None

    def workspace_by_id(self, workspace_id: int) -> WorkspaceRecord | None:
        ws = self.Workspace.get_or_none(self.Workspace.id == workspace_id)
        return workspace_record(ws) if ws else None

    def workspaces(self) -> list[WorkspaceRecord]:
        return [workspace_record(ws)
                for ws in self.Workspace.select().order_by(self.Workspace.name)]

    def set_workspace(self, name: str, *, now: float, batch_access: bool | None = None,
                      expedited: bool | None = None,
                      workflows: bool | None = None) -> WorkspaceRecord:
        """Operator switches: batch API access, the expedited tier, workflow records."""
        changes = {k: v for k, v in (("batch_access", batch_access), ("expedited", expedited),
                                     ("workflows", workflows)) if v is not None}
        with self.write():
            ws, _ = self.Workspace.get_or_create(name=name, defaults={"created_at": now})
            if changes:
                self.Workspace.update(**changes).where(self.Workspace.id == ws.id).execute()
        found = self.workspace(name)
        assert found is not None
        return found

    def create_key(self, workspace_name: str, *, now: float) -> str:
        plain = ids.api_key()
        with self.write():
            ws, _ = self.Workspace.get_or_create(name=workspace_name,
                                                 defaults={"created_at": now})
            self.ApiKey.create(workspace=ws, prefix=plain[:10], key_hash=hash_key(plain),
                               created_at=now)
        return plain

    def list_keys(self, workspace_name: str | None = None) -> list[KeyRecord]:
        query = (self.ApiKey.select(self.ApiKey, self.Workspace).join(self.Workspace)
                 .order_by(self.ApiKey.id))
        if workspace_name:
            query = query.where(self.Workspace.name == workspace_name)
        return [KeyRecord(k.id, k.workspace.name, k.prefix, k.created_at, k.revoked_at)
                for k in query]

    def revoke_key(self, prefix: str, *, now: float) -> int:
        """Revoke every live key starting with `prefix`; returns how many."""
        with self.write():
            if len(prefix) < 6:
                return 0
            wanted = prefix[:10]  # keys are case-sensitive; LIKE is not, substr is
            return (self.ApiKey.update(revoked_at=now)
                    .where(fn.substr(self.ApiKey.prefix, 1, len(wanted)) == wanted,
                           self.ApiKey.revoked_at.is_null())
                    .execute())

    def authenticate(self, plain: str) -> WorkspaceRecord | None:
        digest = hash_key(plain)
        found = self.one(KEY_OWNER, (digest,))
        if found is None or found["key_revoked_at"] is not None:
            return None
        if not hmac.compare_digest(found["key_hash"], digest):
            return None
        return workspace_of(found)

    def webhook_secret(self, workspace_id: int, *, rotate: bool = False) -> str:
        """The workspace's signing secret, created on first use."""
        with self.write():
            ws = self.locked(
                self.Workspace.select().where(self.Workspace.id == workspace_id)).get()
            if ws.webhook_secret is None or rotate:
                ws.webhook_secret = "whsec_" + secrets.token_hex(24)
                ws.save()
            return ws.webhook_secret
