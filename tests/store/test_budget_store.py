"""Budgets, spend and pauses in the store, on every backend: spend is added in the
transaction that stores the outcomes (per workspace and UTC day), a period sums its
days, paused jobs are never joined, and budget pauses follow the spent workspaces."""

from __future__ import annotations

from daemon.domain.budget import DAY_S, Budget, day_of
from daemon.domain.jobs import RUNNING
from daemon.store.backend import SqlStore
from tests.store.conftest import NOW, MakeJob, MakeOutcome

ALIVE = NOW - 60


def pay(repo: SqlStore, make_outcome: MakeOutcome, job_seq: int, row_id: int, nano: int,
        *, now: float = NOW) -> None:
    repo.save_outcomes(job_seq, [(row_id, make_outcome(cost_nano_usd=nano))], now=now)


def test_spend_is_summed_per_period_over_every_job_of_a_workspace(
        repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    first, second = make_job(repo, rows=2), make_job(repo, rows=1)
    other = make_job(repo, rows=1, workspace="other")
    ws = repo.set_budget("acme", Budget(1_000, "day"), now=NOW)
    assert ws.budget == Budget(1_000, "day")
    rows = [w.id for w in repo.pending_rows(first, after_id=0, limit=9)]
    pay(repo, make_outcome, first.seq, rows[0], 300, now=NOW - DAY_S)  # yesterday
    pay(repo, make_outcome, first.seq, rows[1], 400)
    (row,) = repo.pending_rows(second, after_id=0, limit=9)
    pay(repo, make_outcome, second.seq, row.id, 500)
    (theirs,) = repo.pending_rows(other, after_id=0, limit=9)
    pay(repo, make_outcome, other.seq, theirs.id, 9_999)

    state = repo.budget_state(ws.id, now=NOW)
    assert state is not None
    assert (state.spent_nano_usd, state.remaining_nano_usd, state.exhausted) == (900, 100, False)
    repo.set_budget("acme", Budget(1_000, "none"), now=NOW)
    everything = repo.budget_state(ws.id, now=NOW)
    assert everything is not None and everything.spent_nano_usd == 1_200
    assert everything.exhausted
    assert [s.workspace_id for s in repo.budget_states(now=NOW)] == [ws.id]  # only budgets
    assert repo.set_budget("acme", None, now=NOW).budget is None
    assert repo.budget_state(ws.id, now=NOW) is None


def test_an_outcome_stored_twice_is_paid_once(
        repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    job = make_job(repo, rows=1)
    ws = repo.set_budget("acme", Budget(10, "month"), now=NOW)
    (row,) = repo.pending_rows(job, after_id=0, limit=9)
    pay(repo, make_outcome, job.seq, row.id, 7)
    pay(repo, make_outcome, job.seq, row.id, 7)
    state = repo.budget_state(ws.id, now=NOW)
    assert state is not None and state.spent_nano_usd == 7


def test_a_paused_job_is_never_joined_nor_requeued(repo: SqlStore, make_job: MakeJob) -> None:
    queued, running = make_job(repo), make_job(repo)
    assert repo.transition(running.seq, RUNNING, now=NOW) is not None
    assert repo.pause_job(queued.seq, now=NOW) is not None
    assert repo.pause_job(running.seq, now=NOW) is not None
    assert repo.paused_among([queued.seq, running.seq]) == {queued.seq, running.seq}
    assert repo.joinable_jobs(10, exclude=(), alive_after=ALIVE) == []
    assert repo.requeue_running(now=NOW) == []  # it stays running, paused

    resumed = repo.resume_job(running.seq)
    assert resumed is not None and resumed.paused is None
    assert [j.seq for j in repo.joinable_jobs(10, exclude=(), alive_after=ALIVE)] == [
        running.seq]


def test_budget_pauses_follow_the_spent_workspaces(repo: SqlStore, make_job: MakeJob) -> None:
    mine, theirs = make_job(repo), make_job(repo, workspace="other")
    ws = repo.ensure_workspace("acme", now=NOW)
    paused, resumed = repo.hold_for_budget({ws.id}, now=NOW)
    assert ([j.seq for j in paused], resumed) == ([mine.seq], [])
    held = repo.job_by_seq(mine.seq)
    assert held is not None and held.paused == "budget"
    assert [j.seq for j in repo.joinable_jobs(10, exclude=(), alive_after=ALIVE)] == [
        theirs.seq]
    assert repo.hold_for_budget({ws.id}, now=NOW) == ([], [])  # nothing changes twice
    repo.pause_job(mine.seq, now=NOW)
    operator = repo.job_by_seq(mine.seq)
    assert operator is not None and operator.paused == "operator"  # shown first

    paused, resumed = repo.hold_for_budget(set(), now=NOW)
    assert (paused, [j.seq for j in resumed]) == ([], [mine.seq])
    still = repo.job_by_seq(mine.seq)
    assert still is not None and still.paused == "operator"


def test_an_ended_job_cannot_be_paused(repo: SqlStore, make_job: MakeJob) -> None:
    from tests.store.conftest import end

    job = make_job(repo)
    assert end(repo, job, "failed") is not None
    assert repo.pause_job(job.seq, now=NOW) is None
    assert repo.resume_job(job.seq) is None


def test_spend_before_the_migration_is_counted_on_its_day(
        repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    from daemon.store.schema import budgets

    job = make_job(repo, rows=1)
    (row,) = repo.pending_rows(job, after_id=0, limit=9)
    pay(repo, make_outcome, job.seq, row.id, 42)
    repo.db.execute_sql('DELETE FROM "spend"')
    for statement in ('DROP TABLE "spend"', "ALTER TABLE job DROP COLUMN budget_paused_at",
                      "ALTER TABLE job DROP COLUMN paused_at",
                      "ALTER TABLE workspace DROP COLUMN budget_period",
                      "ALTER TABLE workspace DROP COLUMN budget_nano_usd"):
        repo.db.execute_sql(statement)

    budgets(repo.db)

    assert repo.db.execute_sql('SELECT "day", nano_usd FROM "spend"').fetchall() == [
        (day_of(NOW), 42)]
