"""Workspace budgets, as pure rules: a budget's period and when it resets, what is left
of it, and the lower bound of a batch's cost that a submit is refused on.

Spend is kept per workspace and UTC day (the store's `spend` table, in nano-USD, added
to in the transaction that stores each row's outcome), so any period is a sum of days:
`day` is today's, `month` the days since the first of this UTC month, `none` every day
there is. A period rolls over at 00:00 UTC (of the day, of the first of the month).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Any, Literal, get_args

from daemon.domain.ratelimit import TokenEstimate
from daemon.domain.stamps import iso

Period = Literal["month", "day", "none"]
PERIODS: tuple[Period, ...] = get_args(Period)
DAY_S = 86_400
NANO_PER_USD = 1_000_000_000
BUDGET_EXCEEDED = "budget_exceeded"


def day_of(ts: float) -> int:
    """The UTC day `ts` falls on, as days since 1970-01-01: the spend table's key."""
    return math.floor(ts / DAY_S)


def first_day(period: Period, now: float) -> int | None:
    """The first UTC day of the period `now` is in (None: `none`, every day counts)."""
    if period == "none":
        return None
    if period == "day":
        return day_of(now)
    at = datetime.fromtimestamp(now, UTC)
    return day_of(at.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp())


def resets_at(period: Period, now: float) -> float | None:
    """When the period `now` is in ends and its spend starts again from 0 (None: never)."""
    if period == "none":
        return None
    if period == "day":
        return float((day_of(now) + 1) * DAY_S)
    at = datetime.fromtimestamp(now, UTC)
    first = at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (first + timedelta(days=32)).replace(day=1)
    return following.timestamp()


def period_spend(days: Mapping[int, int], period: Period, now: float) -> int:
    """The nano-USD spent in the period `now` is in, from the spend of each day."""
    first = first_day(period, now)
    return sum(nano for day, nano in days.items() if first is None or day >= first)


@dataclass(frozen=True)
class Budget:
    """A workspace's budget: `nano_usd` per `period`."""

    nano_usd: int
    period: Period


@dataclass(frozen=True)
class BudgetState:
    """A workspace's budget and what it has spent in the current period, at `now`."""

    workspace_id: int
    budget: Budget
    spent_nano_usd: int
    now: float

    @property
    def remaining_nano_usd(self) -> int:
        return max(0, self.budget.nano_usd - self.spent_nano_usd)

    @property
    def exhausted(self) -> bool:
        """Spent: its running batches pause, and no new one starts."""
        return self.spent_nano_usd >= self.budget.nano_usd

    @property
    def resets_at(self) -> float | None:
        return resets_at(self.budget.period, self.now)

    def covers(self, nano_usd: int) -> bool:
        return nano_usd <= self.remaining_nano_usd


def state_of(workspace_id: int, budget: Budget, days: Mapping[int, int], *,
             now: float) -> BudgetState:
    return BudgetState(workspace_id, budget, period_spend(days, budget.period, now), now)


def budget_view(state: BudgetState | None) -> dict[str, Any] | None:
    """A workspace's budget against its spend, as `/v1/stats` shows it (None: none)."""
    if state is None:
        return None
    budget = state.budget
    return {"usd": budget.nano_usd / NANO_PER_USD, "nano_usd": budget.nano_usd,
            "period": budget.period, "spent_nano_usd": state.spent_nano_usd,
            "spent_usd": state.spent_nano_usd / NANO_PER_USD,
            "remaining_nano_usd": state.remaining_nano_usd,
            "resets_at": iso(state.resets_at), "spent": state.exhausted}


def parse_usd(text: str) -> int:
    """A budget's amount in USD (`500`, `12.50`) as nano-USD; ValueError if it is not a
    finite amount of at least 0."""
    try:
        amount = Decimal(text.strip())
    except InvalidOperation as exc:
        raise ValueError(f"{text!r} is not an amount of USD") from exc
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"{text!r} is not an amount of USD of at least 0")
    return int((amount * NANO_PER_USD).to_integral_value(rounding=ROUND_CEILING))


def parse_period(text: str) -> Period:
    if text not in PERIODS:
        raise ValueError(f"the period must be one of {', '.join(PERIODS)}; got {text!r}")
    return text  # narrowed to a Period by the test above


def usd(nano_usd: int) -> str:
    """Nano-USD as a person reads USD: `$12.50`, `$0.000042`."""
    value = Decimal(nano_usd) / NANO_PER_USD
    if value == 0 or abs(value) >= Decimal("0.01"):
        return f"${value:,.2f}"
    return f"${value.normalize():f}"


def input_tokens(body_bytes: int) -> int:
    """A request's input tokens as the rate limiter estimates them before it is sent
    (`TokenEstimate`, with nothing learned yet and no answer counted)."""
    return TokenEstimate().estimate(body_bytes, 0)


def input_cost_nano_usd(tokens: int, *, input_usd_per_mtok: float,
                        discount: Decimal | float) -> int:
    """What `tokens` input tokens cost at the batch rate, in nano-USD (as `pricing`
    prices them, rounded down: a lower bound)."""
    rate = Decimal(str(input_usd_per_mtok)) * 1000 * (1 - Decimal(str(discount)))
    return int(rate * tokens)


def lower_bound_nano_usd(rows: Iterable[tuple[int, float]], *,
                         discount: Decimal | float) -> tuple[int, int]:
    """A batch's least cost: each row's input tokens alone (from its body's size in
    bytes) at its model's input price (`(bytes, input_usd_per_mtok)` per row), at the
    batch rate. (input tokens, nano-USD)"""
    tokens = nano = 0
    for size, price in rows:
        count = input_tokens(size)
        tokens += count
        nano += input_cost_nano_usd(count, input_usd_per_mtok=price, discount=discount)
    return tokens, nano
