"""Outcomes the store refuses for a reason that is not a storage fault: a value the
database cannot hold (an integer past 64 bits; on PostgreSQL a NUL character in text),
or a bug. One such outcome must fail its own row, never block its group, its job and
the job's slot.

`write_apart` writes a group and, when the write fails so, splits it: each half is
written on its own, down to the outcomes that fail alone. Those are stored through
`stand_ins`: the row failed `internal_error`, first with its answer and attempts, and
if even that is refused, with the error message alone. If the bare stand-in is refused
too, the fault is not in the outcome, and the error goes up: the group is kept and
tried again, like after a storage fault.

Every write is a transaction the store rolls back whole when it fails, and storing an
outcome twice is a no-op (a row's outcome is stored once), so a storage fault in the
middle of a split leaves nothing half done: the group is tried again from the start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from daemon.domain.errors import clipped
from daemon.domain.outcome import RowOutcome

T = TypeVar("T")

INTERNAL = "internal_error"
REASON_CHARS = 200  # of the store's complaint, quoted in the row's error


def write_apart(group: Sequence[T], write: Callable[[Sequence[T]], object], *,
                is_fault: Callable[[Exception], bool]) -> list[tuple[T, Exception]]:
    """Write `group`; on an error that is not a storage fault, write each half on its
    own, recursively. Returns the items that failed alone, each with its error; raises a
    storage fault as soon as one is met (nothing is learned from splitting around it)."""
    if not group:
        return []
    try:
        write(group)
    except Exception as exc:
        if is_fault(exc):
            raise
        if len(group) == 1:
            return [(group[0], exc)]
        middle = len(group) // 2
        return (write_apart(group[:middle], write, is_fault=is_fault)
                + write_apart(group[middle:], write, is_fault=is_fault))
    return []


def save_apart(outcomes: Sequence[tuple[int, RowOutcome]],
               write: Callable[[Sequence[tuple[int, RowOutcome]]], object], *,
               is_fault: Callable[[Exception], bool]) -> list[tuple[int, Exception]]:
    """Store `(row id, outcome)`s with `write_apart`, each refused one through its
    `stand_ins`; the rows refused, with why. Raises if a row's barest stand-in is
    refused too (the fault is elsewhere: keep the group and try again)."""
    refused = write_apart(outcomes, write, is_fault=is_fault)
    for (row_id, outcome), exc in refused:
        full, bare = stand_ins(outcome, exc)
        if write_apart([(row_id, full)], write, is_fault=is_fault):
            left = write_apart([(row_id, bare)], write, is_fault=is_fault)
            if left:
                raise left[0][1]
    return [(row_id, exc) for (row_id, _), exc in refused]


def stand_ins(outcome: RowOutcome, exc: Exception) -> tuple[RowOutcome, RowOutcome]:
    """What to store instead of an outcome the store refused, fullest first: the row
    failed `internal_error` with its answer (the response, or the upstream's error body)
    and its attempts; then the same error with nothing from upstream at all. Neither is
    billed: the refused outcome's usage is not to be trusted."""
    error = f"{INTERNAL}: the store refused this row's outcome ({_reason(exc)})"
    bare = RowOutcome(ok=False, model=outcome.model, error=error, error_code=INTERNAL)
    answer = outcome.response if outcome.ok else outcome.error_body
    full = RowOutcome(ok=False, model=outcome.model, status_code=outcome.status_code,
                      error=error, error_code=INTERNAL, error_body=answer,
                      attempts=outcome.attempts)
    return full, bare


def _reason(exc: Exception) -> str:
    """The store's complaint, printable and short (it may quote the value it refused)."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    return clipped(text, most=REASON_CHARS)
