"""The budget check every dialect's submit makes: a batch whose input tokens alone (its
least cost, estimated as the rate limiter does) exceed what is left of the workspace's
budget is refused with 429 `budget_exceeded`, in the dialect's envelope. An OpenAI
batch's records are read at submit for it when the workspace has a budget; the
validator, reading them again, makes the same check and fails the batch with the same
code (`budget_problem`) should the budget have shrunk meanwhile."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal

from daemon.dialects.base import Intake
from daemon.domain import codec
from daemon.domain.budget import BUDGET_EXCEEDED, BudgetState, lower_bound_nano_usd, usd
from daemon.domain.errors import TooMany
from daemon.domain.jobs import RowDraft
from daemon.store.interface import Store

PERIOD_WORDS = {"month": "this month", "day": "today", "none": "in all"}


def input_prices(intake: Intake) -> dict[str, float]:
    """Each model alias's input price, USD per million tokens."""
    return {m.alias: m.input_usd_per_mtok for m in intake.config.models}


def budget_problem(repo: Store, workspace_id: int, rows: Sequence[RowDraft], *,
                   prices: Mapping[str, float], model: str | None, discount: Decimal,
                   now: float, param: str) -> TooMany | None:
    """Why the workspace's budget refuses these rows (None: it has no budget, or what is
    left covers their input at least). Rows refused already cost nothing."""
    state = repo.budget_state(workspace_id, now=now)
    if state is None:
        return None
    tokens, least = least_cost(rows, prices=prices, model=model, discount=discount)
    return over_budget(state, tokens=tokens, least=least, now=now, param=param)


def least_cost(rows: Sequence[RowDraft], *, prices: Mapping[str, float], model: str | None,
               discount: Decimal) -> tuple[int, int]:
    """Rows' least cost: (input tokens, nano-USD), to add up a chunk at a time. Rows
    refused already cost nothing."""
    return lower_bound_nano_usd(
        ((len(codec.dumps(row.body)), prices.get(row.model or model or "", 0.0))
         for row in rows if row.error is None), discount=discount)


def over_budget(state: BudgetState, *, tokens: int, least: int, now: float,
                param: str) -> TooMany | None:
    """The refusal of a batch whose input costs at least `least`, if that is more than
    the budget has left."""
    if least <= state.remaining_nano_usd:
        return None
    return TooMany(f"{param}: {refusal(state, tokens=tokens, least=least)}",
                   code=BUDGET_EXCEEDED, param=param, retry_after_s=_until_reset(state, now))


def check_budget(repo: Store, workspace_id: int, rows: Sequence[RowDraft], *,
                 prices: Mapping[str, float], model: str | None, discount: Decimal,
                 now: float, param: str) -> None:
    problem = budget_problem(repo, workspace_id, rows, prices=prices, model=model,
                             discount=discount, now=now, param=param)
    if problem is not None:
        raise problem


def check_not_spent(repo: Store, workspace_id: int, *, now: float,
                    param: str) -> BudgetState | None:
    """For a batch whose rows are read later (an OpenAI batch's file): refused at submit
    once nothing is left of the budget; the validator checks its rows (`budget_problem`).
    The workspace's budget state (None: it has no budget)."""
    state = repo.budget_state(workspace_id, now=now)
    if state is not None and state.exhausted:
        raise TooMany(f"{param}: Nothing is left of the workspace's budget "
                      f"({_spend(state)}); no batch can run until it is raised or the "
                      "period rolls over.", code=BUDGET_EXCEEDED, param=param,
                      retry_after_s=_until_reset(state, now))
    return state


def _spend(state: BudgetState) -> str:
    budget, resets = state.budget, state.resets_at
    when = ("" if resets is None else
            f"; it resets at {datetime.fromtimestamp(resets, UTC):%Y-%m-%dT%H:%M:%SZ}")
    return (f"{usd(state.spent_nano_usd)} of {usd(budget.nano_usd)} spent "
            f"{PERIOD_WORDS[budget.period]}{when}")


def refusal(state: BudgetState, *, tokens: int, least: int) -> str:
    return (f"The batch's input alone, an estimated {tokens:,} tokens, costs at least "
            f"{usd(least)} at the batch rate, more than the {usd(state.remaining_nano_usd)} "
            f"left of the workspace's budget ({_spend(state)}).")


def _until_reset(state: BudgetState, now: float) -> int | None:
    resets = state.resets_at
    return None if resets is None else max(1, int(resets - now) + 1)
