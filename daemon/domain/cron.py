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
    if not croniter.is_valid(expr, strict=True):
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
    return float(croniter(expr, datetime.fromtimestamp(now, UTC)).get_next(float))


def due_tick(expr: str, *, next_run_at: float, now: float) -> tuple[float, float] | None:
    """If the template's tick is due at `now`, return (tick, next_run_at after now).

    Ticks missed while the daemon was down collapse into this one catch-up run:
    the following tick is computed from `now`, not from the missed tick.
    """
    if now < next_run_at:
        return None
    return next_run_at, next_after(expr, now)
