"""Workflow records' state: where each stands (one JSON document per row, replaced as it
changes) and every finished request of a step (kept, so a restart runs none again)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from daemon.store.interface import WorkflowWrite
from daemon.store.sql import SAVE_WORKFLOW, SAVE_WORKFLOW_RESULT, SqlBase


class WorkflowQueries(SqlBase):
    def save_workflows(self, writes: Sequence[WorkflowWrite], *,
                       leases: Mapping[int, int] | None = None) -> set[int]:
        """Many records' changes in one transaction; a row's last state wins. Rows whose
        lease `{row id: token}` has moved on store nothing: their ids are returned."""
        if not writes:
            return set()
        states = {row_id: json.dumps(state) for row_id, state, _ in writes}  # encoded
        results = [(row_id, *finished[:2], json.dumps(finished[2]))  # before the lock
                   for row_id, _, finished in writes if finished is not None]
        with self.write():
            lost = self.fenced(leases) if leases else set()
            cursor = self.db.cursor()
            if kept := [r for r in results if r[0] not in lost]:
                cursor.executemany(self.sql(SAVE_WORKFLOW_RESULT), kept)
            if kept_states := [(rid, st) for rid, st in states.items() if rid not in lost]:
                cursor.executemany(self.sql(SAVE_WORKFLOW), kept_states)
        return lost

    def workflow_states(self, job_seq: int) -> list[tuple[str, dict[str, Any]]]:
        """`(row status, state)` of every workflow record of a job that has started."""
        query = (self.WorkflowModel.select(self.RowModel.status, self.WorkflowModel.state)
                 .join(self.RowModel).where(self.RowModel.job == job_seq)
                 .order_by(self.RowModel.id))
        return [(status, json.loads(state)) for status, state in self.db.execute(query)]

    def workflow(self, row_id: int) -> dict[str, Any] | None:
        """Where a workflow record stands, with its current step's finished results."""
        return workflows_of(self, [row_id]).get(row_id)


def workflows_of(store: SqlBase, row_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """`{row id: {"state": ..., "results": {index: result}}}` for the rows that have a
    workflow state; the results are those of the step each one stands in."""
    found = {r.row_id: json.loads(r.state) for r in
             store.WorkflowModel.select().where(store.WorkflowModel.row.in_(list(row_ids)))}
    if not found:
        return {}
    current = {row_id: state.get("step", 0) for row_id, state in found.items()}
    results: dict[int, dict[int, Any]] = {row_id: {} for row_id in found}
    query = (store.WorkflowResultModel.select()
             .where(store.WorkflowResultModel.row.in_(list(found))))
    for r in query:
        if r.step == current[r.row_id]:
            results[r.row_id][r.position] = json.loads(r.result)
    return {row_id: {"state": state, "results": results[row_id]}
            for row_id, state in found.items()}
