"""The reads a busy workspace makes all the time (the list of its jobs with each filter
the API and the TUI use, its stats, the scheduler's queue) stay off full scans of the
big tables, on every backend: each statement they send is `EXPLAIN`ed, and a plan that
scans `job`, `row` or `attempt` whole fails the test. So a change that drops an index
or writes a query no index serves shows here, before 10,000 jobs show it in production
(the figures: README, Performance)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from daemon.store.backend import SqlStore
from daemon.store.postgres import PostgresStore
from tests.store.conftest import NOW, MakeJob, MakeOutcome, end

BIG = ("job", "row", "attempt")


@contextmanager
def statements(kinds: tuple[str, ...] = ("SELECT",)) -> Iterator[list[tuple[str, Any]]]:
    """The statements of `kinds` Peewee sends meanwhile, with their parameters."""
    sent: list[tuple[str, Any]] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if isinstance(record.msg, tuple) and str(record.msg[0]).lstrip().upper(
                    ).startswith(kinds):
                sent.append((record.msg[0], record.msg[1]))

    logger, catch = logging.getLogger("peewee"), Catch()
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(catch)
    try:
        yield sent
    finally:
        logger.removeHandler(catch)
        logger.setLevel(level)


def full_scans(repo: SqlStore, sql: str, params: Any) -> list[str]:
    """The plan's lines that read one of the big tables whole."""
    if isinstance(repo, PostgresStore):
        with repo.db.atomic():
            repo.db.execute_sql("SET LOCAL enable_seqscan = off")  # a tiny table still
            plan = [line for (line,) in repo.db.execute_sql(f"EXPLAIN {sql}", params)]
        return [line for line in plan
                if any(f"Seq Scan on {table} " in f"{line} " or f'Seq Scan on "{table}"' in line
                       for table in BIG)]
    plan = [row[-1] for row in repo.db.execute_sql(f"EXPLAIN QUERY PLAN {sql}", params)]
    aliases = _aliases(sql)
    return [line for line in plan if line.startswith("SCAN ")  # SEARCH is a lookup
            and aliases.get(line.split()[1]) in BIG]


def _aliases(sql: str) -> dict[str, str]:
    """Table names by the names a plan calls them (themselves, or their alias)."""
    words = sql.replace('"', " ").replace(",", " ").split()
    found = {t: t for t in BIG}
    for i, word in enumerate(words[:-1]):
        if word.upper() in ("FROM", "JOIN") and words[i + 1] in BIG:
            alias = words[i + 2] if i + 2 < len(words) else words[i + 1]
            if alias.upper() in ("AS",) and i + 3 < len(words):
                alias = words[i + 3]
            found[alias] = words[i + 1]
    return found


READS: dict[str, Callable[[SqlStore, int], object]] = {
    "list": lambda repo, ws: repo.list_jobs(ws, limit=100),
    "list one dialect": lambda repo, ws: repo.list_jobs(ws, limit=100, dialects=["relay"]),
    "list by status": lambda repo, ws: repo.list_jobs(ws, limit=100, statuses=["failed"]),
    "list a template's runs": lambda repo, ws: repo.list_jobs(ws, limit=20, template_id="x"),
    "stats": lambda repo, ws: repo.workspace_stats(ws, now=NOW, since=NOW - 3600,
                                                   bucket_s=60, recent_since=NOW - 60),
    "queue": lambda repo, ws: repo.queued_jobs(16),
    "due templates": lambda repo, ws: repo.due_templates(NOW),
    # the scheduler's other reads at every tick
    "expired": lambda repo, ws: repo.expired_jobs(NOW),
    "joinable": lambda repo, ws: repo.joinable_jobs(4, exclude={1, 2}, alive_after=NOW - 30,
                                                    held_workspaces={ws + 1}),
}


def test_busy_reads_never_scan_a_big_table_whole(repo: SqlStore, make_job: MakeJob) -> None:
    jobs = [make_job(repo, rows=3) for _ in range(6)]
    for job in jobs[:4]:
        repo.transition(job.seq, "running", now=NOW)
        end(repo, job, "completed")
    scans: dict[str, dict[str, list[str]]] = {}
    for name, read in READS.items():
        with statements() as sent:
            read(repo, jobs[0].workspace_id)
        assert sent, f"{name} sent no SELECT"
        if found := {sql: lines for sql, params in sent
                     if (lines := full_scans(repo, sql, params))}:
            scans[name] = found
    assert not scans, scans


def test_the_hot_paths_statements_never_scan_a_big_table_whole(
        repo: SqlStore, make_job: MakeJob, make_outcome: MakeOutcome) -> None:
    """Every statement a running job sends a group of rows (the lease, the group write,
    the partial read, the status and key reads), as each backend writes it."""
    for _ in range(3):
        make_job(repo, rows=20)
    job = make_job(repo, rows=40)
    running = repo.transition(job.seq, "running", now=NOW)
    assert running is not None
    key = repo.create_key("acme", now=NOW)
    with statements(("SELECT", "UPDATE", "INSERT")) as sent:
        works = repo.lease_rows(running, node="n", limit=16, alive_after=NOW - 60)
        repo.save_outcomes(job.seq, [(w.id, make_outcome()) for w in works[:5]], now=NOW,
                           leases={w.id: w.token for w in works})
        repo.finished_rows(job.seq, after_seq=0, limit=10)
        repo.pending_rows(running, after_id=0, limit=10)
        repo.get_job(job.id, workspace_id=job.workspace_id)
        assert repo.authenticate(key) is not None
    assert len(works) == 16 and sent
    scans = {sql: lines for sql, params in sent if (lines := full_scans(repo, sql, params))}
    assert not scans, scans


def test_the_check_sees_a_full_scan(repo: SqlStore, make_job: MakeJob) -> None:
    make_job(repo, rows=2)
    assert full_scans(repo, 'SELECT id FROM job WHERE name = %s'.replace("%s", repo.db.param),
                      ("x",))
    assert full_scans(repo, 'SELECT r.id FROM "row" r WHERE r.error = '
                      + repo.db.param, ("x",))
