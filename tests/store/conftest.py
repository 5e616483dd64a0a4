"""Store fixtures: a real database of every backend, and factories for jobs and outcomes.

The `repo` fixture is parametrized over `BACKENDS`, so every test in this folder is
part of the store's contract suite and runs against each backend (in the style of
huey's storage tests). A new backend adds one opener here: a context manager that
yields an empty store of its own and cleans up afterwards. The PostgreSQL one takes a
schema of the test's own on the test server (tests/store/postgres.py), and skips where
there is none.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from daemon.domain import ids
from daemon.domain.jobs import QUEUED, Job, JobDraft, RowDraft, Status
from daemon.domain.outcome import Attempt, RowOutcome, Usage
from daemon.store.backend import SqlStore
from daemon.store.interface import Ending, Store
from daemon.store.postgres import open_postgres
from daemon.store.sqlite import open_sqlite
from tests.store import postgres

NOW = 1_700_000_000.0

MakeJob = Callable[..., Job]
MakeOutcome = Callable[..., RowOutcome]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "relay.db"


@contextmanager
def sqlite_store(tmp: Path) -> Iterator[SqlStore]:
    store = open_sqlite(tmp / "relay.db")
    try:
        yield store
    finally:
        store.close()


@contextmanager
def postgres_store(tmp: Path) -> Iterator[SqlStore]:
    with postgres.clean_schema() as url:
        store = open_postgres(url)
        try:
            yield store
        finally:
            store.close()


BACKENDS: dict[str, Callable[[Path], AbstractContextManager[SqlStore]]] = {
    "sqlite": sqlite_store,
    "postgres": postgres_store,
}


@pytest.fixture(params=sorted(BACKENDS))
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    with BACKENDS[request.param](tmp_path) as store:
        yield store


def pytest_sessionfinish() -> None:
    postgres.finish()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say it at the end of every run that skipped the PostgreSQL tests, and why."""
    reason = postgres.unreachable() if postgres.asked() else None
    if reason:
        terminalreporter.write_line(f"PostgreSQL tests skipped: {reason}", yellow=True)


def end(repo: Store, job: Job, status: Status, *, now: float = NOW, **ending: Any) -> Job | None:
    """End `job` as `status` the way the actors do (`Store.end_job`)."""
    return repo.end_job(job.seq, Ending(status, **ending), now=now)


def make_rows(n: int, *, prefix: str = "r") -> list[RowDraft]:
    return [RowDraft(custom_id=f"{prefix}-{i}",
                     body={"messages": [{"role": "user", "content": f"prompt {i}"}]})
            for i in range(1, n + 1)]


@pytest.fixture
def make_job() -> MakeJob:
    """`make_job(repo, rows=3, workspace="acme", **JobDraft overrides)`; each call is one
    second newer than the last unless `created_at` is given."""
    clock = itertools.count()

    def factory(repo: Store, *, rows: int | list[RowDraft] = 3, workspace: str = "acme",
                **overrides: Any) -> Job:
        ws = repo.ensure_workspace(workspace, now=NOW)
        fields: dict[str, Any] = {
            "id": ids.relay_job_id(), "workspace_id": ws.id, "dialect": "relay",
            "name": "Review sentiment", "model": "gpt-4o-mini",
            "endpoint": "/v1/chat/completions", "status": QUEUED, "priority": 0,
            "created_at": NOW + next(clock),
        }
        drafts = make_rows(rows) if isinstance(rows, int) else rows
        return repo.create_job(JobDraft(**(fields | overrides)), drafts)

    return factory


@pytest.fixture
def make_outcome() -> MakeOutcome:
    """`make_outcome(ok=True, dead_letter=False, tokens=(10, 5), tries=1, **overrides)`."""

    def factory(ok: bool = True, *, dead_letter: bool = False, tokens: tuple[int, int] = (10, 5),
                tries: int = 1, model: str = "gpt-4o-mini", **overrides: Any) -> RowOutcome:
        code = 200 if ok else (503 if dead_letter else 400)
        attempts = tuple(
            Attempt(model=model, status_code=code if i == tries - 1 or not ok else 503,
                    error=None if ok and i == tries - 1 else f"upstream {code}",
                    duration_ms=20 + i, started_at=NOW + i, transient=dead_letter)
            for i in range(tries))
        fields: dict[str, Any] = {
            "ok": ok, "status_code": code, "model": model, "attempts": attempts,
            "response": ({"choices": [{"message": {"role": "assistant", "content": "positive"}}]}
                         if ok else None),
            "error": None if ok else f"upstream_error: {code}",
            "dead_letter": dead_letter and not ok,
            "usage": Usage(*tokens) if ok else Usage(),
        }
        return RowOutcome(**(fields | overrides))

    return factory
