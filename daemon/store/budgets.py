"""Budgets and pauses: a workspace's budget, the spend of each workspace by UTC day
(summed over every node: each node adds to it as it stores outcomes, `add_spend`), and
the two reasons a job is paused (an operator's, its workspace's budget)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from typing import cast

from daemon.domain.budget import Budget, BudgetState, Period, day_of, first_day, state_of
from daemon.domain.jobs import QUEUED, RUNNING, TERMINAL, VALIDATING, Job
from daemon.domain.usage import MAX_STORED
from daemon.store.interface import WorkspaceRecord
from daemon.store.records import job_record, workspace_record
from daemon.store.sql import BUDGETED, SqlBase, chunks, in_list

# What a spend upsert adds: one statement, whichever node stores the outcomes; a day's
# spend saturates at the largest 64-bit integer rather than overflow (as a job's does).
ADD_SPEND = (
    'INSERT INTO "spend" ("workspace_id", "day", "nano_usd") '
    "SELECT workspace_id, {p}, {p} FROM job WHERE seq = {p} "
    'ON CONFLICT ("workspace_id", "day") DO UPDATE '
    'SET nano_usd = CASE WHEN "spend".nano_usd > {most} - excluded.nano_usd THEN {most} '
    'ELSE "spend".nano_usd + excluded.nano_usd END')
# The jobs a budget holds back: those that have not ended and may yet run rows.
HELD = (VALIDATING, QUEUED, RUNNING)


def add_spend(store: SqlBase, job_seq: int, nano_usd: int, *, now: float) -> None:
    """Inside the caller's transaction (the one storing the outcomes that cost it): add
    `nano_usd` to the job's workspace's spend of the UTC day of `now`."""
    if nano_usd > 0:
        store.db.execute_sql(store.sql(ADD_SPEND, most=str(MAX_STORED)),
                             (day_of(now), min(nano_usd, MAX_STORED), job_seq))


class BudgetQueries(SqlBase):
    """Queries over budgets, spend and paused jobs."""

    def set_budget(self, name: str, budget: Budget | None, *, now: float) -> WorkspaceRecord:
        """Set (or with None take away) a workspace's budget, creating the workspace
        if needed."""
        with self.write():
            ws, _ = self.Workspace.get_or_create(name=name, defaults={"created_at": now})
            (self.Workspace.update(budget_nano_usd=budget.nano_usd if budget else None,
                                   budget_period=budget.period if budget else None)
             .where(self.Workspace.id == ws.id).execute())
        return workspace_record(self.Workspace.get(self.Workspace.id == ws.id))

    def budget_states(self, *, now: float,
                      workspace_ids: Collection[int] | None = None) -> list[BudgetState]:
        """Every workspace with a budget (or those of `workspace_ids` that have one), with
        what it spent in its current period as of `now`: two small queries whatever the
        number of rows."""
        ids = None if workspace_ids is None else list(workspace_ids)
        if ids == []:
            return []
        found = self.many(BUDGETED, ids or (),  # raw: the scheduler asks at every tick
                          among="" if ids is None else f" AND id IN ({in_list(ids)})")
        budgets = {ws["id"]: Budget(ws["budget_nano_usd"] or 0,
                                    cast(Period, ws["budget_period"] or "none"))
                   for ws in found}
        if not budgets:
            return []
        firsts = [first_day(b.period, now) for b in budgets.values()]
        since = None if None in firsts else min(d for d in firsts if d is not None)
        days: dict[int, dict[int, int]] = defaultdict(dict)
        for part in chunks(list(budgets)):
            spend = self.SpendModel.select().where(self.SpendModel.workspace_id.in_(list(part)))
            if since is not None:
                spend = spend.where(self.SpendModel.day >= since)
            for row in spend:
                days[row.workspace_id][row.day] = row.nano_usd
        return [state_of(ws, budget, days[ws], now=now) for ws, budget in budgets.items()]

    def budget_state(self, workspace_id: int, *, now: float) -> BudgetState | None:
        """The remaining budget of one workspace at `now` (None: it has no budget)."""
        found = self.budget_states(now=now, workspace_ids=[workspace_id])
        return found[0] if found else None

    def hold_for_budget(self, exhausted: Collection[int], *, now: float
                        ) -> tuple[list[Job], list[Job]]:
        """Mark the jobs that may yet run of the `exhausted` workspaces paused by budget,
        and unmark those of every other workspace, in one transaction; the jobs it
        paused and those it resumed."""
        model = self.JobModel
        live = model.status.in_(list(HELD))
        held = model.budget_paused_at.is_null(False)

        def changes() -> tuple[list[int], list[int], list[int]]:
            pausing = [r.seq for r in model.select(model.seq).where(
                live, model.budget_paused_at.is_null(),
                model.workspace.in_(list(exhausted)))] if exhausted else []
            resuming = [r.seq for r in model.select(model.seq).where(
                held, model.workspace.not_in(list(exhausted)) if exhausted else held)]
            ended = [r.seq for r in model.select(model.seq).where(
                held, model.status.in_(list(TERMINAL)))]  # what ended paused: unmarked
            return pausing, resuming, ended

        if not any(changes()):  # the usual answer, read without a write transaction
            return [], []
        with self.write():
            pausing, resuming, ended = changes()
            for part in chunks(pausing):
                (model.update(budget_paused_at=now)
                 .where(model.seq.in_(list(part)), model.budget_paused_at.is_null())
                 .execute())
            for part in chunks(resuming + ended):
                model.update(budget_paused_at=None).where(model.seq.in_(list(part))).execute()
        return self._jobs(pausing), self._jobs([s for s in resuming if s not in ended])

    def pause_job(self, seq: int, *, now: float) -> Job | None:
        """An operator's pause: recorded on a job that has not ended (None: it has, or
        it is being cancelled). Pausing a paused job keeps its first time."""
        with self.write():
            row = self.lock_job(seq)
            if row is None or row.status not in HELD:
                return None
            if row.paused_at is None:
                self.JobModel.update(paused_at=now).where(self.JobModel.seq == seq).execute()
        return job_record(self.JobModel.get(self.JobModel.seq == seq))

    def resume_job(self, seq: int) -> Job | None:
        """An operator's resume (None: the job has ended or is being cancelled)."""
        with self.write():
            row = self.lock_job(seq)
            if row is None or row.status not in HELD:
                return None
            self.JobModel.update(paused_at=None).where(self.JobModel.seq == seq).execute()
        return job_record(self.JobModel.get(self.JobModel.seq == seq))

    def paused_among(self, seqs: Collection[int]) -> set[int]:
        """Those of the jobs `seqs` that are paused, for either reason."""
        model = self.JobModel
        return {r.seq for part in chunks(list(seqs)) for r in model.select(model.seq).where(
            model.seq.in_(list(part)),
            model.paused_at.is_null(False) | model.budget_paused_at.is_null(False))}

    def _jobs(self, seqs: Sequence[int]) -> list[Job]:
        return [job_record(r) for part in chunks(list(seqs))
                for r in self.JobModel.select().where(self.JobModel.seq.in_(list(part)))]
