"""The retention scenario: a week of a nightly cron job at `[retention] days = 3`, on a
SQLite store with an injected clock (a week does not fit in a bench run).

Every night the template spawns its run (the store's own `spawn_run`, as the scheduler
does), every row is answered in groups of 1,000 (`save_outcomes`, as supervisors flush),
the run ends, and an hour later the sweeper's `purge_ended` runs as often as it says it
has work left. The figures: the database file after night 7 against night 3 (flat once
retention drops a night as one arrives), its bytes per stored row, and how long a
night's purge takes.
"""

from __future__ import annotations

import time
from pathlib import Path

from bench.harness import Bench
from bench.report import Figure, at_most
from daemon.actors.sweeper import purge_ended
from daemon.domain import ids
from daemon.domain.jobs import Job, JobDraft, RowDraft
from daemon.domain.outcome import Attempt, RowOutcome, Usage
from daemon.domain.retention import DAY_S
from daemon.store.files import FileStore
from daemon.store.interface import Ending
from daemon.store.sqlite import SqliteStore, open_sqlite

DAYS = 3
NIGHTS = 7
GROUP = 1_000  # outcomes stored in one write, as a supervisor flushes them
START = 1_800_000_000.0


def figures() -> list[Figure]:
    return [
        Figure("retention_flat_ratio", "retention",
               f"database bytes after night {NIGHTS} ÷ after night {DAYS}", "",
               at_most(1.05)),
        Figure("retention_bytes_per_row", "retention", "database bytes per stored row", "B"),
        Figure("retention_purge_s", "retention", "one night's purge", "s"),
    ]


def retention(b: Bench) -> None:
    for i in range(b.runs["retention"]):
        home = b.home / f"retention-{i}"
        sizes, purge_s, rows = week(home, b.sizes.retention_rows)
        b.figures["retention_flat_ratio"].add(sizes[-1] / sizes[DAYS - 1])
        b.figures["retention_bytes_per_row"].add(sizes[-1] / rows)
        b.figures["retention_purge_s"].add(max(purge_s))
        b.say(f"[retention] run {i + 1}: {b.sizes.retention_rows:,} rows a night; database "
              f"MB by night {[round(s / 1e6, 1) for s in sizes]}")


def week(home: Path, rows: int) -> tuple[list[int], list[float], int]:
    """The file's size after each night, each night's purge time, and the rows stored
    at the end."""
    repo = open_sqlite(home / "relay.db")
    files = FileStore(home / "files")
    try:
        template = _template(repo, rows)
        sizes: list[int] = []
        purges: list[float] = []
        for night in range(1, NIGHTS + 1):
            at = START + night * DAY_S
            run = repo.spawn_run(template, tick=at, next_run_at=at + DAY_S,
                                 run_id=ids.relay_job_id(), now=at)
            assert run is not None, "the night's run was not spawned"
            repo.transition(run.seq, "running", now=at)
            _answer_all(repo, run.seq, rows, at=at)
            ended = repo.end_job(run.seq, Ending("completed"), now=at + 600)
            assert ended is not None, "the night's run did not end"
            began = time.perf_counter()
            while purge_ended(repo, files, now=at + 3600, days=DAYS).more:
                pass
            purges.append(time.perf_counter() - began)
            repo.db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            sizes.append(Path(repo.db.database).stat().st_size)
        stored = sum(t.rows for t in repo.table_sizes() if t.name == "row")
        return sizes, purges, stored
    finally:
        repo.close()


def _template(repo: SqliteStore, rows: int) -> Job:
    ws = repo.ensure_workspace("nightly", now=START)
    drafts = [RowDraft(custom_id=f"review-{i}", body={"messages": [
        {"role": "user", "content": f"Classify the sentiment of review {i}: it arrived "
                                    "late but works well."}]}) for i in range(rows)]
    return repo.create_job(JobDraft(
        id=ids.relay_job_id(), workspace_id=ws.id, dialect="relay", name="nightly reviews",
        model="gpt-4o-mini", endpoint="/v1/chat/completions", status="scheduled",
        priority=0, created_at=START, cron="0 2 * * *", next_run_at=START + DAY_S), drafts)


def _answer_all(repo: SqliteStore, seq: int, rows: int, *, at: float) -> None:
    run = repo.job_by_seq(seq)
    assert run is not None
    after = 0
    while work := repo.pending_rows(run, after_id=after, limit=GROUP):
        outcomes = [(w.id, RowOutcome(
            ok=True, status_code=200, model="gpt-4o-mini", usage=Usage(31, 2),
            attempts=(Attempt(model="gpt-4o-mini", status_code=200, error=None,
                              duration_ms=180, started_at=at),),
            response={"id": f"chatcmpl-{w.id}", "object": "chat.completion",
                      "choices": [{"index": 0, "finish_reason": "stop", "message": {
                          "role": "assistant", "content": "positive"}}],
                      "usage": {"prompt_tokens": 31, "completion_tokens": 2}}))
            for w in work]
        repo.save_outcomes(seq, outcomes, now=at + 1)
        after = work[-1].id
