"""The store's probe write: the smallest write that proves the database takes writes
(one row, rewritten), used by the health probe (actors/health.py)."""

from __future__ import annotations

from daemon.store.sql import SqlBase


class HealthQueries(SqlBase):
    def probe_write(self, *, now: float) -> None:
        with self.write():
            (self.ProbeModel.insert(id=1, at=now)
             .on_conflict(conflict_target=[self.ProbeModel.id],
                          update={self.ProbeModel.at: now})
             .execute())
