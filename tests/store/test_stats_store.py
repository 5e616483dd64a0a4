"""The aggregates behind `GET /v1/stats` and `GET /metrics`, summed in SQL: the window's
throughput buckets (the whole part of the time since the window opened, never rounded),
attempts by outcome, latency ranks, usage, the queue, the job table's counts and the
attempt log past a mark."""

from __future__ import annotations

from daemon.domain.estimate import History
from daemon.domain.stats import AttemptCount, Latency, QueueDepth, Usage
from daemon.store.interface import Store
from tests.store.conftest import NOW, MakeJob, MakeOutcome, end

SINCE = NOW - 90.0  # the window opens 90 s before NOW


def ran(repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> int:
    """A running job of three rows, stored 100 s into the window (bucket 1 of 60 s, at
    1.67 of them: a rounding backend would say 2): two answered, one dead-lettered after
    two tries."""
    job = make_job(repo, rows=3)
    repo.transition(job.seq, "running", now=NOW)
    ids = [w.id for w in repo.pending_rows(job, after_id=0, limit=10)]
    repo.save_outcomes(job.seq, [
        (ids[0], make_outcome(cost_nano_usd=3_000_000_000)),
        (ids[1], make_outcome(tokens=(7, 3))),
        (ids[2], make_outcome(ok=False, dead_letter=True, tries=2)),
    ], now=NOW + 10)
    return job.seq


def test_the_workspace_window(repo: Store, make_job: MakeJob,
                              make_outcome: MakeOutcome) -> None:
    seq = ran(repo, make_job, make_outcome)
    job = repo.job_by_seq(seq)
    assert job is not None
    make_job(repo, rows=2, priority=5)  # queued
    stats = repo.workspace_stats(job.workspace_id, now=NOW + 20, since=SINCE, bucket_s=60,
                                 recent_since=NOW)
    assert stats.throughput == [(1, 2, 1)]
    assert sorted(stats.attempts, key=lambda c: c.outcome) == [
        AttemptCount("gpt-4o-mini", "5xx", 2), AttemptCount("gpt-4o-mini", "ok", 2)]
    assert stats.latencies == [Latency("gpt-4o-mini", 20, 20, 2)]
    assert stats.jobs[-1].usage == Usage(17, 8, 3_000_000_000)
    assert stats.total == Usage(17, 8, 3_000_000_000)
    assert stats.queue == [QueueDepth(priority=5, jobs=1, rows=2)]


def test_the_daemon_counts(repo: Store, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    seq = ran(repo, make_job, make_outcome)
    hooked = make_job(repo, rows=1, webhook_url="https://example.com/hook")
    end(repo, hooked, "expired")
    failed = make_job(repo, rows=1, webhook_url="https://example.com/hook")
    end(repo, failed, "expired")
    delivered = make_job(repo, rows=1, webhook_url="https://example.com/hook")
    end(repo, delivered, "expired")
    repo.save_webhook(failed.seq, {"status_code": 500, "error": "HTTP 500"})
    repo.save_webhook(delivered.seq, {"status_code": 200, "error": None})
    counts = repo.daemon_counts()
    assert sorted(counts.jobs) == [("acme", "expired", 3), ("acme", "running", 1)]
    assert sorted(counts.rows) == [("acme", "gpt-4o-mini", "completed", 2),
                                   ("acme", "gpt-4o-mini", "dead_letter", 1),
                                   ("acme", "gpt-4o-mini", "failed", 0)]
    assert counts.pending == [("acme", 0)]
    assert sorted(counts.webhooks) == [("acme", "delivered", 1), ("acme", "failed", 1),
                                       ("acme", "pending", 1)]
    assert repo.job_by_seq(seq) is not None


def test_the_attempt_log_past_a_mark(repo: Store, make_job: MakeJob,
                                     make_outcome: MakeOutcome) -> None:
    assert repo.last_attempt_id() == 0
    ran(repo, make_job, make_outcome)
    samples = repo.attempts_after(0, limit=10)
    assert [(s.outcome, s.retry) for s in samples] == [
        ("ok", False), ("ok", False), ("5xx", False), ("5xx", True)]
    assert repo.last_attempt_id() == samples[-1].id
    assert repo.attempts_after(samples[1].id, limit=1) == [samples[2]]


def test_the_model_history_an_estimate_reads(repo: Store, make_job: MakeJob,
                                             make_outcome: MakeOutcome) -> None:
    seq = ran(repo, make_job, make_outcome)
    job = repo.job_by_seq(seq)
    assert job is not None
    history = repo.model_history(job.workspace_id, since=SINCE)
    # completed rows took 5 and 3 completion tokens (the lower middle), calls 20 ms
    assert history == {"gpt-4o-mini": History(median_completion_tokens=3, latency_s=0.02)}
    assert repo.model_history(job.workspace_id, since=NOW + 60) == {}
