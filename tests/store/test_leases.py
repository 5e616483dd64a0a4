"""Nodes and row leases, on every backend: who runs which rows, what a lost node's
rows become, and who ends a job that several nodes ran."""

from __future__ import annotations

import threading

import pytest

from daemon.actors.scheduler import spawn_due_runs
from daemon.domain.cluster import NodeRecord, Share
from daemon.domain.jobs import RUNNING, Job
from daemon.store.interface import Store
from tests.store.conftest import NOW, MakeJob, MakeOutcome, end

LEASE_S = 15.0
ALIVE = NOW - LEASE_S  # nodes that beat after this are alive at NOW


def join(repo: Store, node_id: str, *, beat: float = NOW, jobs: tuple[int, ...] = ()) -> None:
    repo.register_node(NodeRecord(id=node_id, address=f"http://{node_id}:8080",
                                  version="0.1.0", started_at=beat, heartbeat_at=beat,
                                  jobs=jobs))


def running(repo: Store, make_job: MakeJob, rows: int = 10, **overrides: object) -> Job:
    job = make_job(repo, rows=rows, **overrides)
    started = repo.transition(job.seq, RUNNING, now=NOW)
    assert started is not None
    return started


def lease(repo: Store, job: Job, node: str, limit: int = 4) -> list[str]:
    return [w.custom_id for w in repo.lease_rows(job, node=node, limit=limit,
                                                 alive_after=ALIVE)]


@pytest.mark.parametrize("returning", [True, False], ids=["returning", "in-steps"])
def test_nodes_lease_different_rows_in_order(repo: Store, make_job: MakeJob,
                                             monkeypatch: pytest.MonkeyPatch,
                                             returning: bool) -> None:
    """Also as SQLite before 3.35 leases, which has no `UPDATE … RETURNING`."""
    monkeypatch.setattr(repo, "RETURNING", returning)
    join(repo, "a")
    join(repo, "b")
    job = running(repo, make_job, rows=6)
    assert lease(repo, job, "a") == ["r-1", "r-2", "r-3", "r-4"]
    assert lease(repo, job, "b") == ["r-5", "r-6"]
    assert lease(repo, job, "a") == []


def test_only_a_running_job_is_leased(repo: Store, make_job: MakeJob) -> None:
    join(repo, "a")
    job = make_job(repo, rows=3)  # queued
    assert lease(repo, job, "a") == []


def test_a_lost_nodes_rows_are_leased_again(repo: Store, make_job: MakeJob) -> None:
    join(repo, "a", beat=NOW - LEASE_S - 1)  # its heartbeat is too old: lost
    join(repo, "b")
    job = running(repo, make_job, rows=3)
    assert repo.lease_rows(job, node="a", limit=2, alive_after=ALIVE - 100) != []
    assert lease(repo, job, "b") == ["r-1", "r-2", "r-3"]


def test_a_heartbeat_keeps_the_leases(repo: Store, make_job: MakeJob) -> None:
    join(repo, "a", beat=NOW - LEASE_S - 1)
    join(repo, "b")
    job = running(repo, make_job, rows=2)
    repo.lease_rows(job, node="a", limit=2, alive_after=ALIVE - 100)
    assert repo.beat("a", now=NOW, jobs=[job.seq])
    assert lease(repo, job, "b") == []
    assert not repo.beat("ghost", now=NOW, jobs=[])  # an unknown node must register


def test_a_stored_outcome_ends_the_lease(repo: Store, make_job: MakeJob,
                                         make_outcome: MakeOutcome) -> None:
    join(repo, "a")
    job = running(repo, make_job, rows=2)
    work = repo.lease_rows(job, node="a", limit=2, alive_after=ALIVE)
    repo.save_outcomes(job.seq, [(work[0].id, make_outcome())], now=NOW)
    assert repo.leave("a") == 1  # only the row still pending was leased


def test_leaving_gives_the_leases_back(repo: Store, make_job: MakeJob) -> None:
    join(repo, "a")
    join(repo, "b")
    job = running(repo, make_job, rows=3)
    lease(repo, job, "a")
    assert repo.leave("a") == 3
    assert [n.id for n in repo.nodes()] == ["b"]
    assert lease(repo, job, "b") == ["r-1", "r-2", "r-3"]


def test_a_drain_gives_back_one_jobs_leases(repo: Store, make_job: MakeJob) -> None:
    join(repo, "a")
    one, two = running(repo, make_job, rows=2), running(repo, make_job, rows=2)
    lease(repo, one, "a")
    lease(repo, two, "a")
    assert repo.release_rows(one.seq, node="a") == 2
    assert lease(repo, one, "a") == ["r-1", "r-2"]
    assert lease(repo, two, "a") == []


def test_a_drain_keeps_the_rows_in_flight(repo: Store, make_job: MakeJob) -> None:
    join(repo, "a")
    join(repo, "b")
    job = running(repo, make_job, rows=3)
    flying = repo.lease_rows(job, node="a", limit=3, alive_after=ALIVE)[0]
    assert repo.release_rows(job.seq, node="a", keep={flying.id}) == 2
    assert lease(repo, job, "b") == ["r-2", "r-3"]
    assert repo.leave("a") == 1  # the row in flight goes with the node


def test_the_sole_node_takes_back_what_an_earlier_process_held(
        repo: Store, make_job: MakeJob) -> None:
    join(repo, "before")
    job = running(repo, make_job, rows=2)
    lease(repo, job, "before")
    join(repo, "now")
    assert repo.sole_node("now") == 2
    assert [n.id for n in repo.nodes()] == ["now"]
    assert lease(repo, job, "now") == ["r-1", "r-2"]


def test_long_lost_nodes_are_forgotten(repo: Store) -> None:
    join(repo, "old", beat=NOW - 90_000)
    join(repo, "me")
    assert repo.forget_nodes(before=NOW - 86_400, keep="me") == 1
    assert [n.id for n in repo.nodes()] == ["me"]


def test_a_node_restarting_at_its_address_frees_the_earlier_processes_rows(
        repo: Store, make_job: MakeJob) -> None:
    join(repo, "before")  # registered at http://before:8080, killed a moment ago
    join(repo, "other")
    job = running(repo, make_job, rows=2)
    lease(repo, job, "before")
    assert repo.forget_nodes(keep="after", address="http://before:8080") == 1
    assert [n.id for n in repo.nodes()] == ["other"]
    assert lease(repo, job, "other") == ["r-1", "r-2"]


def test_settling_tells_who_ends_the_job(repo: Store, make_job: MakeJob,
                                         make_outcome: MakeOutcome) -> None:
    job = running(repo, make_job, rows=4)
    join(repo, "a", jobs=(job.seq,))  # both list it, as their last heartbeats said
    join(repo, "b", jobs=(job.seq,))
    mine = repo.lease_rows(job, node="a", limit=2, alive_after=ALIVE)
    theirs = repo.lease_rows(job, node="b", limit=2, alive_after=ALIVE)
    repo.save_outcomes(job.seq, [(w.id, make_outcome()) for w in mine], now=NOW)
    assert repo.settle_share(job.seq, node="a", alive_after=ALIVE) is Share.HELD
    repo.save_outcomes(job.seq, [(w.id, make_outcome()) for w in theirs], now=NOW)
    # "a" took the job off its own list as it settled: "b" need not wait for a heartbeat
    assert repo.settle_share(job.seq, node="b", alive_after=ALIVE) is Share.DONE
    assert [n.jobs for n in repo.nodes()] == [(), (job.seq,)]  # "b" ends it: listed


def test_rows_given_back_leave_the_job_open(repo: Store, make_job: MakeJob) -> None:
    join(repo, "a")
    job = running(repo, make_job, rows=2)
    lease(repo, job, "a")
    assert repo.settle_share(job.seq, node="a", alive_after=ALIVE) is Share.OPEN
    assert lease(repo, job, "a") == ["r-1", "r-2"]


def test_a_node_listing_the_job_holds_it(repo: Store, make_job: MakeJob) -> None:
    job = running(repo, make_job, rows=2)
    join(repo, "a")
    join(repo, "b", jobs=(job.seq,))  # between two leases: it holds no row right now
    assert repo.job_share(job.seq, node="a", alive_after=ALIVE) is Share.HELD
    repo.beat("b", now=NOW - LEASE_S - 1, jobs=[job.seq])  # now lost
    assert repo.job_share(job.seq, node="a", alive_after=ALIVE) is Share.OPEN


def test_joinable_jobs_follow_one_order(repo: Store, make_job: MakeJob) -> None:
    join(repo, "a")
    join(repo, "b")
    low = make_job(repo, priority=0)
    busy = running(repo, make_job, rows=2, priority=5)
    lease(repo, busy, "b")  # every row held by a live node: nothing to join
    open_ = running(repo, make_job, rows=3, priority=5)
    lease(repo, open_, "b", limit=1)  # two rows free
    urgent = make_job(repo, priority=1, tier="expedited")
    found = repo.joinable_jobs(10, exclude=(), alive_after=ALIVE)
    assert [j.seq for j in found] == [urgent.seq, open_.seq, low.seq]
    assert [j.seq for j in repo.joinable_jobs(10, exclude={open_.seq}, alive_after=ALIVE)
            ] == [urgent.seq, low.seq]
    assert len(repo.joinable_jobs(1, exclude=(), alive_after=ALIVE)) == 1


def test_joinable_and_queued_jobs_share_the_admission_order(repo: Store,
                                                            make_job: MakeJob) -> None:
    """One order, `ADMISSION_ORDER`, in the queue's read and the raw joinable one: tier,
    then priority, then the earliest deadline (none last), then oldest."""
    join(repo, "a")
    jobs = [make_job(repo, priority=1), make_job(repo, priority=1, deadline_at=NOW + 50),
            make_job(repo, priority=1, deadline_at=NOW + 10), make_job(repo, priority=3),
            make_job(repo, priority=0, tier="expedited"), make_job(repo, priority=1)]
    queued = [j.seq for j in repo.queued_jobs(10)]
    assert [j.seq for j in repo.joinable_jobs(10, exclude=(), alive_after=ALIVE)] == queued
    assert queued == [jobs[i].seq for i in (4, 3, 2, 1, 0, 5)]


def test_nodes_leasing_at_once_never_share_a_row(repo: Store, make_job: MakeJob) -> None:
    job = running(repo, make_job, rows=400)
    names = [f"n{i}" for i in range(4)]
    for name in names:
        join(repo, name)
    taken: dict[str, list[str]] = {name: [] for name in names}

    def worker(name: str) -> None:
        while rows := lease(repo, job, name, limit=7):
            taken[name].extend(rows)

    threads = [threading.Thread(target=worker, args=(name,)) for name in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    every = [row for rows in taken.values() for row in rows]
    assert sorted(every) == sorted(f"r-{i}" for i in range(1, 401))
    assert len(set(every)) == 400


def test_a_webhook_claimed_by_a_live_node_is_not_abandoned(repo: Store,
                                                           make_job: MakeJob) -> None:
    join(repo, "a")
    seqs = []
    for _ in range(2):
        job = make_job(repo, webhook_url="https://hooks.example.com/x")
        repo.transition(job.seq, "cancelling", now=NOW)
        end(repo, job, "cancelled")
        seqs.append(job.seq)
    assert repo.claim_webhook(seqs[0], now=NOW, node="a")
    assert repo.claim_webhook(seqs[1], now=NOW, node="lost")
    assert repo.abandon_claimed_webhooks(now=NOW, live=["a"]) == 1
    interrupted = repo.job_by_seq(seqs[1])
    assert interrupted is not None and interrupted.webhook is not None
    assert "interrupted" in interrupted.webhook["error"]
    assert repo.abandon_claimed_webhooks(now=NOW, live=["b"]) == 1


def test_each_cron_tick_spawns_one_run_across_nodes(repo: Store, make_job: MakeJob) -> None:
    """Three nodes' schedulers tick at the same instant, each on its own connection (on
    PostgreSQL, transactions side by side), over five ticks; one node is dead for two
    of them. Every tick spawns exactly one run."""
    first = NOW - NOW % 60 + 60
    template = make_job(repo, status="scheduled", cron="* * * * *", next_run_at=first)
    nodes = ["a", "b", "c"]
    dead_during = {1, 2}  # ticks at which node "c" is down
    spawned: dict[str, list[float]] = {node: [] for node in nodes}
    for tick in range(5):
        now = first + 60 * tick + 1
        alive = [n for n in nodes if not (n == "c" and tick in dead_during)]
        barrier = threading.Barrier(len(alive))

        def node_ticks(node: str, now: float = now, barrier: threading.Barrier = barrier
                       ) -> None:
            barrier.wait(timeout=10)
            spawned[node] += [run.created_at for run in spawn_due_runs(repo, now)]

        threads = [threading.Thread(target=node_ticks, args=(n,)) for n in alive]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    runs = sorted(at for ats in spawned.values() for at in ats)
    assert runs == [first + 60 * tick + 1 for tick in range(5)]
    listed, _ = repo.list_jobs(template.workspace_id, limit=100, template_id=template.id)
    assert len(listed) == 5


def test_strays_are_given_back(repo: Store, make_job: MakeJob) -> None:
    join(repo, "a")
    kept, stray = running(repo, make_job, rows=2), running(repo, make_job, rows=2)
    lease(repo, kept, "a")
    lease(repo, stray, "a")
    assert repo.release_strays("a", running={kept.seq}) == 2
    assert lease(repo, stray, "a") == ["r-1", "r-2"]
    assert lease(repo, kept, "a") == []


def test_a_node_staying_to_end_the_job_stays_listed(repo: Store, make_job: MakeJob) -> None:
    job = running(repo, make_job, rows=1)
    join(repo, "a", jobs=(job.seq,))
    lease(repo, job, "a")
    assert repo.settle_share(job.seq, node="a", alive_after=ALIVE,
                             finishing=False) is Share.OPEN  # a cancel: it ends the job
    assert [n.jobs for n in repo.nodes()] == [(job.seq,)]


def test_a_batch_is_validated_by_the_node_that_takes_it(repo: Store,
                                                        make_job: MakeJob) -> None:
    join(repo, "a")
    join(repo, "b")
    batch = make_job(repo, status="validating")
    assert [j.seq for j in repo.unclaimed_validations(node="a", alive_after=ALIVE)] == [
        batch.seq]
    assert repo.claim_validation(batch.seq, node="a", alive_after=ALIVE)
    assert not repo.claim_validation(batch.seq, node="b", alive_after=ALIVE)
    assert repo.unclaimed_validations(node="b", alive_after=ALIVE) == []
    # its own, whose validation failed on the way: it tries again
    assert [j.seq for j in repo.unclaimed_validations(node="a", alive_after=ALIVE)] == [
        batch.seq]
    assert repo.claim_validation(batch.seq, node="a", alive_after=ALIVE)


def test_a_lost_nodes_batch_is_validated_by_another(repo: Store, make_job: MakeJob) -> None:
    join(repo, "lost", beat=NOW - LEASE_S - 1)
    join(repo, "b")
    batch = make_job(repo, status="validating")
    assert repo.claim_validation(batch.seq, node="lost", alive_after=ALIVE - 100)
    assert [j.seq for j in repo.unclaimed_validations(node="b", alive_after=ALIVE)] == [
        batch.seq]
    assert repo.claim_validation(batch.seq, node="b", alive_after=ALIVE)
    queued = make_job(repo)  # not validating: nothing to take
    assert not repo.claim_validation(queued.seq, node="b", alive_after=ALIVE)
