"""`?dry_run=true` on a submit route: the batch's estimate (`domain/estimate.py`), its
budget and the problems the real submit would refuse, with nothing stored. Blocking:
runs in a worker thread."""

from __future__ import annotations

from typing import Any

from daemon.api.context import Services
from daemon.api.middleware import status_of
from daemon.dialects import Dialect
from daemon.domain.errors import InvalidRequest, RelayError
from daemon.domain.stamps import iso
from daemon.store.interface import WorkspaceRecord

DRY_RUN = "dry_run"


def dry_run(query: Any) -> bool:
    """`?dry_run=`: true or false (the default)."""
    raw = query.get(DRY_RUN, "false")
    if raw not in ("true", "false"):
        raise InvalidRequest(f"'dry_run' must be true or false; got {raw!r}.", param=DRY_RUN)
    return bool(raw == "true")


def answer(services: Services, workspace: WorkspaceRecord, dialect: Dialect,
           body: Any) -> dict[str, Any]:
    """The estimate of `body` as `dialect` would take it."""
    proposed = dialect.propose(services, workspace, body)
    found = services.estimate(proposed.rows, workspace_id=workspace.id,
                              discount=proposed.discount)
    problems: list[RelayError] = list(proposed.problems)
    problems += [InvalidRequest(f"model: {m.model!r} is not configured here.",
                                param="model", code="model_not_found")
                 for m in found.models if not m.known]
    view = found.view()
    return {"object": "batch.estimate", "dry_run": True, **view,
            "budget": budget_cover(services, workspace, int(view["cost_nano_usd"])),
            "problems": [dialect.error_body(p, dialect.error_status(status_of(p)))
                         for p in problems]}


def budget_cover(services: Services, workspace: WorkspaceRecord,
                 cost_nano_usd: int) -> dict[str, Any] | None:
    """What the workspace's budget has left and whether it covers the estimated cost;
    None when the workspace has no budget."""
    state = services.repo.budget_state(workspace.id, now=services.clock())
    if state is None:
        return None
    resets = state.resets_at
    return {"remaining_nano_usd": state.remaining_nano_usd,
            "remaining_usd": state.remaining_nano_usd / 1e9,
            "covers": state.covers(cost_nano_usd),
            "period": state.budget.period,
            "resets_at": iso(resets) if resets is not None else None}
