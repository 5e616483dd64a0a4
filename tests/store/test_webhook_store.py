"""Webhook bookkeeping: the signing secret, at-most-once claims, recovery after a restart."""

from __future__ import annotations

from typing import Any

from daemon.store.interface import Store
from tests.store import conftest
from tests.store.conftest import NOW, MakeJob

URL = "https://hooks.example.com/relay"


def webhook_of(repo: Store, seq: int) -> dict[str, Any]:
    """What the store holds of the webhook of the job at `seq` (which has one)."""
    job = repo.job_by_seq(seq)
    assert job is not None and job.webhook is not None
    return job.webhook


def test_webhook_secret_is_created_once(repo: Store) -> None:
    ws = repo.ensure_workspace("acme", now=NOW)
    secret = repo.webhook_secret(ws.id)
    assert secret.startswith("whsec_")
    assert len(secret) > 30
    assert repo.webhook_secret(ws.id) == secret
    assert repo.workspace("acme").webhook_secret == secret  # type: ignore[union-attr]


def test_webhook_secret_rotates(repo: Store) -> None:
    ws = repo.ensure_workspace("acme", now=NOW)
    old = repo.webhook_secret(ws.id)
    new = repo.webhook_secret(ws.id, rotate=True)
    assert new != old
    assert repo.webhook_secret(ws.id) == new


def test_webhook_secrets_differ_per_workspace(repo: Store) -> None:
    a = repo.ensure_workspace("acme", now=NOW)
    b = repo.ensure_workspace("globex", now=NOW)
    assert repo.webhook_secret(a.id) != repo.webhook_secret(b.id)


def end(repo: Store, make_job: MakeJob, **overrides: object) -> int:
    """A job ended (cancelled) the way the actors end one: its webhook is queued."""
    job = make_job(repo, **overrides)
    repo.transition(job.seq, "cancelling", now=NOW)
    conftest.end(repo, job, "cancelled")
    return job.seq


def test_a_job_that_has_not_ended_has_no_webhook_to_claim(repo: Store,
                                                          make_job: MakeJob) -> None:
    job = make_job(repo, webhook_url=URL)
    assert not repo.claim_webhook(job.seq, now=NOW)


def test_claim_webhook_once(repo: Store, make_job: MakeJob) -> None:
    seq = end(repo, make_job, webhook_url=URL)
    assert repo.claim_webhook(seq, now=NOW)
    assert not repo.claim_webhook(seq, now=NOW + 1)
    assert repo.unsent_webhooks() == []


def test_saved_outcome_cannot_be_claimed_again(repo: Store, make_job: MakeJob) -> None:
    seq = end(repo, make_job, webhook_url=URL)
    repo.claim_webhook(seq, now=NOW)
    repo.save_webhook(seq, {"url": URL, "status_code": 200, "error": None})
    assert not repo.claim_webhook(seq, now=NOW + 1)
    assert webhook_of(repo, seq)["status_code"] == 200


def test_unsent_webhooks(repo: Store, make_job: MakeJob) -> None:
    unsent = end(repo, make_job, webhook_url=URL)
    claimed = end(repo, make_job, webhook_url=URL)
    repo.claim_webhook(claimed, now=NOW)
    end(repo, make_job)  # no webhook wanted
    make_job(repo, webhook_url=URL)  # still queued: not ended yet
    assert [j.seq for j in repo.unsent_webhooks()] == [unsent]


def test_abandon_claimed_webhooks(repo: Store, make_job: MakeJob) -> None:
    claimed = end(repo, make_job, webhook_url=URL)
    delivered = end(repo, make_job, webhook_url=URL)
    untouched = end(repo, make_job, webhook_url=URL)
    repo.claim_webhook(claimed, now=NOW)
    repo.claim_webhook(delivered, now=NOW)
    repo.save_webhook(delivered, {"url": URL, "status_code": 200, "error": None})
    assert repo.abandon_claimed_webhooks(now=NOW + 60) == 1
    abandoned = repo.job_by_seq(claimed)
    assert abandoned is not None and abandoned.webhook is not None
    assert abandoned.webhook["status_code"] is None
    assert "restart" in abandoned.webhook["error"]
    assert webhook_of(repo, delivered)["status_code"] == 200
    assert repo.job_by_seq(untouched).webhook is None  # type: ignore[union-attr]
    assert [j.seq for j in repo.unsent_webhooks()] == [untouched]  # never claimed: sent later
    assert repo.abandon_claimed_webhooks(now=NOW + 61) == 0
    assert not repo.claim_webhook(claimed, now=NOW + 62)  # never sent twice
