"""Store fixtures: a real SQLite database in a temp dir, and factories for jobs and outcomes."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon.domain import ids
from daemon.domain.jobs import QUEUED, RELAY, Job, RowDraft
from daemon.domain.outcome import Attempt, RowOutcome, Usage
from daemon.store.db import open_database
from daemon.store.repo import JobDraft, Repo

NOW = 1_700_000_000.0

MakeJob = Callable[..., Job]
MakeOutcome = Callable[..., RowOutcome]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "relay.db"


@pytest.fixture
def repo(db_path: Path) -> Iterator[Repo]:
    db = open_database(db_path)
    yield Repo(db)
    db.close()


def make_rows(n: int, *, prefix: str = "r") -> list[RowDraft]:
    return [RowDraft(custom_id=f"{prefix}-{i}",
                     body={"messages": [{"role": "user", "content": f"prompt {i}"}]})
            for i in range(1, n + 1)]


@pytest.fixture
def make_job() -> MakeJob:
    """`make_job(repo, rows=3, workspace="acme", **JobDraft overrides)`; each call is one
    second newer than the last unless `created_at` is given."""
    clock = itertools.count()

    def factory(repo: Repo, *, rows: int | list[RowDraft] = 3, workspace: str = "acme",
                **overrides: Any) -> Job:
        ws = repo.ensure_workspace(workspace, now=NOW)
        fields: dict[str, Any] = {
            "id": ids.relay_job_id(), "workspace_id": ws.id, "dialect": RELAY,
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
