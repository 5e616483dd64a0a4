"""Store fixtures: a real database of every backend, and factories for jobs and outcomes.

The `repo` fixture is parametrized over `BACKENDS`, so every test in this folder is
part of the store's contract suite and runs against each backend (in the style of
huey's storage tests). A new backend adds one opener here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon.domain import ids
from daemon.domain.jobs import QUEUED, Job, JobDraft, RowDraft
from daemon.domain.outcome import Attempt, RowOutcome, Usage
from daemon.store.interface import Ending, Store
from daemon.store.sqlite import open_sqlite

NOW = 1_700_000_000.0

MakeJob = Callable[..., Job]
MakeOutcome = Callable[..., RowOutcome]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "relay.db"


BACKENDS: dict[str, Callable[[Path], Store]] = {
    "sqlite": lambda tmp: open_sqlite(tmp / "relay.db"),
}


@pytest.fixture(params=sorted(BACKENDS))
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    store = BACKENDS[request.param](tmp_path)
    yield store
    store.close()


def end(repo: Store, job: Job, status: str, *, now: float = NOW, **ending: Any) -> Job | None:
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
