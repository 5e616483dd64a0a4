"""A Relay job's deadline (a Relay extension): when it is given (an RFC 3339 time, or a
duration from the submit such as "6h" or "1h30m"), whether the estimate says it can be
met, and what its passing does to the rows that have not run.

Among queued jobs of equal priority the earlier deadline runs first (the store's
queue order). When it passes, the job ends `completed`: the rows that ran keep their
results, and the rest fail with `deadline_passed` (the Relay Batches API has no
`expired` status, and failing rows never fail a job)."""

from __future__ import annotations

import re
from datetime import datetime

from daemon.domain.errors import InvalidRequest

DEADLINE = "deadline"
STRICT = "strict_deadline"
PASSED = "deadline_passed"  # the error code of a row its job's deadline left unrun
PASSED_MESSAGE = "deadline_passed: the job's deadline passed before this row ran"
CANNOT_MEET = "cannot_meet_deadline"  # a strict deadline the estimate says is missed
MAX_AHEAD_S = 366 * 24 * 3600.0  # a deadline further off than a year is a mistake

_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_UNIT_S = (86400, 3600, 60, 1)  # each group's seconds: days, hours, minutes, seconds


def duration_s(text: str) -> float | None:
    """"90s", "30m", "6h", "2d" or a run of them in that order ("1h30m"), in seconds;
    None for text that is not one."""
    found = _DURATION.fullmatch(text.strip().lower())
    if found is None or not any(found.groups()):
        return None
    return float(sum(int(n) * unit for n, unit in zip(found.groups(), _UNIT_S, strict=True)
                     if n))


def parse_deadline(value: object, *, now: float) -> float | None:
    """The deadline `value` names, as a Unix time after `now`; None when not given.
    Raises InvalidRequest naming `deadline` for anything else."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest("'deadline' must be an RFC 3339 time such as "
                             "'2026-12-06T18:00:00Z' or a duration such as '6h' or '1h30m'.",
                             param=DEADLINE)
    ahead = duration_s(value)
    at = now + ahead if ahead is not None else _instant(value)
    if at <= now:
        raise InvalidRequest(f"'deadline' {value!r} has passed already.", param=DEADLINE)
    if at - now > MAX_AHEAD_S:
        raise InvalidRequest(f"'deadline' {value!r} is more than a year away.",
                             param=DEADLINE)
    return at


def _instant(value: str) -> float:
    try:
        parsed = datetime.fromisoformat(value.strip().replace("z", "Z"))
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise InvalidRequest(f"'deadline' {value!r} is neither an RFC 3339 time with its "
                             "offset (e.g. '2026-12-06T18:00:00Z') nor a duration (e.g. "
                             "'6h', '1h30m', '90s').", param=DEADLINE)
    return parsed.timestamp()


def parse_strict(value: object) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidRequest("'strict_deadline' must be true or false.", param=STRICT)
    return value


def at_risk(deadline_at: float, *, drain_s: float, now: float) -> bool:
    """Whether a job that needs `drain_s` to run, starting `now`, misses `deadline_at`."""
    return now + drain_s > deadline_at


def refusal(deadline_at: float, *, drain_s: float, now: float) -> InvalidRequest:
    """A strict deadline the estimate says cannot be met."""
    return InvalidRequest(
        f"'deadline' cannot be met: the estimate at the model's limits is {drain_s:.0f} s "
        f"of running, and the deadline is {max(0.0, deadline_at - now):.0f} s away "
        "(without strict_deadline the job is accepted and flagged deadline_at_risk).",
        param=DEADLINE, code=CANNOT_MEET)
