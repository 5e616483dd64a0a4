"""Fencing, on every backend: each lease moves a row's token on, and whatever a node
stores of a row (its outcome, tool rounds, workflow state) is stored only under the
token it leased the row with. A node whose lease was taken over writes nothing more of
that row; the new owner's outcome wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.domain.jobs import Job, RowWork
from daemon.domain.outcome import Turn, Usage
from daemon.store import open_store
from daemon.store.backend import SqlStore
from daemon.store.interface import Store
from daemon.store.schema import SCHEMA_VERSION
from tests.store import postgres
from tests.store.conftest import NOW, MakeJob, MakeOutcome
from tests.store.older import undo_version_12
from tests.store.test_leases import ALIVE, LEASE_S, join, running


def take_over(repo: Store, job_rows: int, make_job: MakeJob
              ) -> tuple[Job, list[RowWork], list[RowWork]]:
    """Node `a` leases every row, goes silent past its lease, and `b` takes them over."""
    join(repo, "a")
    job = running(repo, make_job, rows=job_rows)
    old = repo.lease_rows(job, node="a", limit=job_rows, alive_after=ALIVE)
    join(repo, "b", beat=NOW + 2 * LEASE_S)  # `a` last beat at NOW: lost by then
    new = repo.lease_rows(job, node="b", limit=job_rows, alive_after=NOW + LEASE_S)
    return job, old, new


def test_every_lease_moves_the_token_on(repo: Store, make_job: MakeJob) -> None:
    job, old, new = take_over(repo, 2, make_job)
    assert [w.id for w in old] == [w.id for w in new]
    assert all(n.token == o.token + 1 for o, n in zip(old, new, strict=True))
    repo.release_rows(job.seq, node="b")  # given back: the token stays until leased again
    again = repo.lease_rows(job, node="b", limit=2, alive_after=NOW + LEASE_S)
    assert [w.token for w in again] == [n.token + 1 for n in new]


def test_an_outcome_under_a_lease_taken_over_is_not_stored(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    job, old, new = take_over(repo, 2, make_job)
    first, second = old
    woken = repo.save_outcomes(job.seq, [(first.id, make_outcome()),
                                         (second.id, make_outcome(tokens=(7, 7)))],
                               now=NOW, leases={w.id: w.token for w in old})
    assert (woken.completed, woken.fenced) == (0, 2)
    owner = repo.save_outcomes(job.seq, [(first.id, make_outcome(tokens=(3, 4)))],
                               now=NOW, leases={w.id: w.token for w in new})
    assert (owner.completed, owner.fenced) == (1, 0)
    current = repo.job_by_seq(job.seq)
    assert current is not None
    assert (current.completed, current.input_tokens, current.output_tokens) == (1, 3, 4)
    assert repo.row_counts(job.seq)["completed"] == 1


def test_an_outcome_under_its_own_lease_is_stored(
        repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    join(repo, "a")
    job = running(repo, make_job, rows=1)
    (work,) = repo.lease_rows(job, node="a", limit=1, alive_after=ALIVE)
    done = repo.save_outcomes(job.seq, [(work.id, make_outcome())], now=NOW,
                              leases={work.id: work.token})
    assert (done.completed, done.fenced) == (1, 0)


def test_rounds_and_workflow_state_under_a_lease_taken_over_are_not_stored(
        repo: Store, make_job: MakeJob) -> None:
    _, old, new = take_over(repo, 2, make_job)
    turn = Turn(model="m", usage=Usage(1, 1), messages=({"role": "assistant"},))
    rounds = [(w.id, 1, turn) for w in old]
    assert repo.save_rounds(rounds, leases={w.id: w.token for w in old}) == {
        w.id for w in old}
    assert all(repo.rounds(w.id) == [] for w in old)
    assert repo.save_rounds(rounds[:1], leases={new[0].id: new[0].token}) == set()
    assert len(repo.rounds(new[0].id)) == 1

    writes = [(w.id, {"step": 1}, (1, 0, {"ok": True})) for w in old]
    assert repo.save_workflows(writes, leases={w.id: w.token for w in old}) == {
        w.id for w in old}
    assert all(repo.workflow(w.id) is None for w in old)
    assert repo.save_workflows(writes[1:], leases={new[1].id: new[1].token}) == set()
    stored = repo.workflow(new[1].id)
    assert stored is not None and stored["state"] == {"step": 1}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_version_12_adds_the_lease_token(backend: str, tmp_path: Path) -> None:
    def migrated(url: str) -> None:
        store = open_store(url)
        assert isinstance(store, SqlStore)
        undo_version_12(store.db)
        store.db.execute_sql("UPDATE schema_version SET version = 11")
        store.close()
        again = open_store(url)
        assert isinstance(again, SqlStore)
        assert again.schema_version() == SCHEMA_VERSION  # 12, then every later step
        again.db.execute_sql('SELECT lease_token FROM "row"')
        again.close()

    if backend == "sqlite":
        migrated(f"sqlite:///{tmp_path / 'relay.db'}")
    else:
        with postgres.fresh_schema() as url:
            migrated(url)
