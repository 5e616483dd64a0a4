"""Cron expressions for templates: exactly 5 fields, UTC, computed from a given instant."""

from __future__ import annotations

from datetime import UTC, datetime

from croniter import croniter

from daemon.domain.errors import InvalidRequest


def check(expr: str) -> None:
    """Raise `InvalidRequest` (param `cron`) unless `expr` is a 5-field expression that
    can fire. croniter alone accepts 6 and 7 fields, macros and `0 0 31 2 *`."""
    fields = expr.split()
    if len(fields) != 5:
        raise InvalidRequest(
            f"'cron' must have exactly 5 fields (minute hour day month weekday); "
            f"got {len(fields)} in {expr!r}.", param="cron", code="invalid_cron")
    if not croniter.is_valid(_as_croniter_reads_it(expr), strict=True):
        raise InvalidRequest(f"'cron' {expr!r} is not a valid expression or never fires.",
                             param="cron", code="invalid_cron")
    for field in fields:
        for part in field.split(","):
            low, dash, high = part.split("/", 1)[0].partition("-")
            if dash and low.isdigit() and high.isdigit() and int(low) > int(high):
                raise InvalidRequest(f"'cron' range {part!r} runs backwards; write "
                                     f"{high}-{low}.", param="cron", code="invalid_cron")


def next_after(expr: str, now: float) -> float:
    """The first tick strictly after `now` (unix seconds, UTC)."""
    return float(croniter(_as_croniter_reads_it(expr), datetime.fromtimestamp(now, UTC))
                 .get_next(float))


def _as_croniter_reads_it(expr: str) -> str:
    """`expr` with each one-value range (`5-5`, `5-5/2`) written as its value: croniter
    7 reads such a range as `*`, so `0 9 * * 1-1` would fire every day, not Mondays."""
    return " ".join(",".join(_one_value(part) for part in field.split(","))
                    for field in expr.split())


def _one_value(part: str) -> str:
    low, dash, high = part.split("/", 1)[0].partition("-")
    same = low.lower() == high.lower() or (low.isdigit() and high.isdigit()
                                           and int(low) == int(high))
    return low if dash and same else part


def due_tick(expr: str, *, next_run_at: float, now: float) -> tuple[float, float] | None:
    """If the template's tick is due at `now`, return (tick, next_run_at after now).

    Ticks missed while the daemon was down collapse into this one catch-up run:
    the following tick is computed from `now`, not from the missed tick.
    """
    if now < next_run_at:
        return None
    return next_run_at, next_after(expr, now)
