"""A validating batch's rows are stored a chunk at a time while its node still holds
the validation, and they become the batch's only when it is accepted: a batch that
fails, is cancelled or is taken over leaves none of them behind."""

from __future__ import annotations

from daemon.domain.jobs import CANCELLED, CANCELLING, FAILED, QUEUED, RowDraft, Staged
from daemon.store.interface import Store
from tests.store.conftest import NOW, MakeJob, end, make_rows
from tests.store.test_leases import ALIVE, LEASE_S, join


def validating(repo: Store, make_job: MakeJob, node: str = "a") -> int:
    batch = make_job(repo, status="validating", dialect="openai", rows=[])
    assert repo.claim_validation(batch.seq, node=node, alive_after=ALIVE)
    return batch.seq


def refused(custom_id: str) -> RowDraft:
    return RowDraft(custom_id=custom_id, body={}, error="no model", error_code="invalid_body")


def test_chunks_staged_in_turn_become_the_batchs_rows(repo: Store, make_job: MakeJob) -> None:
    join(repo, "a")
    seq = validating(repo, make_job)
    assert repo.stage_rows(seq, make_rows(3), after=0, node="a", now=NOW)
    assert repo.stage_rows(seq, [refused("bad"), *make_rows(1, prefix="s")], after=3,
                           node="a", now=NOW)
    assert repo.staged_positions(seq, ["r-2", "bad", "s-1", "nowhere"]) == {
        "r-2": 2, "bad": 4, "s-1": 5}
    assert repo.job_by_seq(seq).total == 0  # type: ignore[union-attr]  # not accepted yet
    assert repo.finished_rows(seq, after_seq=0, limit=10) == []  # no reader meets them yet
    job = repo.accept_validated(seq, Staged(total=5, failed=1, refused_last=4,
                                            model="gpt-4o-mini"), node="a", now=NOW)
    assert job is not None and job.status == QUEUED
    assert (job.total, job.failed, job.model) == (5, 1, "gpt-4o-mini")
    assert repo.row_counts(seq) == {"completed": 0, "failed": 1, "dead_letter": 0,
                                    "pending": 4}
    assert [r.custom_id for r in repo.rows(seq)] == ["r-1", "r-2", "r-3", "bad", "s-1"]
    assert [(r.custom_id, r.finished_seq) for r in repo.finished_rows(
        seq, after_seq=0, limit=10)] == [("bad", 4)]  # the refused one, in its place


def test_a_node_that_lost_the_validation_stores_nothing_more(repo: Store,
                                                             make_job: MakeJob) -> None:
    join(repo, "lost", beat=NOW - LEASE_S - 1)
    join(repo, "b")
    batch = make_job(repo, status="validating", dialect="openai", rows=[])
    assert repo.claim_validation(batch.seq, node="lost", alive_after=ALIVE - 100)
    assert repo.stage_rows(batch.seq, make_rows(2), after=0, node="lost", now=NOW)
    assert repo.claim_validation(batch.seq, node="b", alive_after=ALIVE)
    assert not repo.stage_rows(batch.seq, make_rows(2), after=2, node="lost", now=NOW)
    assert repo.accept_validated(batch.seq, Staged(total=2), node="lost", now=NOW) is None
    assert repo.row_counts(batch.seq)["pending"] == 2  # the new node clears them first


def test_a_batch_that_ends_before_it_is_accepted_keeps_no_staged_rows(
        repo: Store, make_job: MakeJob) -> None:
    join(repo, "a")
    failing = validating(repo, make_job)
    assert repo.stage_rows(failing, make_rows(3), after=0, node="a", now=NOW)
    assert end(repo, repo.job_by_seq(failing), FAILED, error="bad line") is not None  # type: ignore[arg-type]
    assert repo.row_counts(failing) == {"completed": 0, "failed": 0, "dead_letter": 0,
                                        "pending": 0}

    cancelled = validating(repo, make_job)
    assert repo.stage_rows(cancelled, make_rows(3), after=0, node="a", now=NOW)
    assert repo.transition(cancelled, CANCELLING, now=NOW) is not None
    assert not repo.stage_rows(cancelled, make_rows(1, prefix="late"), after=3, node="a",
                               now=NOW)
    job = end(repo, repo.job_by_seq(cancelled), CANCELLED)  # type: ignore[arg-type]
    assert job is not None and (job.total, job.failed, job.canceled) == (0, 0, 0)
    assert repo.row_counts(cancelled)["pending"] == 0
