"""Splitting a refused group write down to the outcomes the store refuses (`write_apart`),
and what is stored instead (`stand_ins`, `save_apart`), against a scripted store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.domain.outcome import Attempt, RowOutcome, Usage
from daemon.domain.unstorable import save_apart, stand_ins, write_apart


class Fault(Exception):
    """A storage fault, as `store_fault` would classify one."""


def is_fault(exc: Exception) -> bool:
    return isinstance(exc, Fault)


T = TypeVar("T")
Saved = tuple[int, RowOutcome]  # what `save_apart` writes


class Store(Generic[T]):
    """Stores groups whole or not at all, refusing any group that holds a poison item
    (the way a transaction rolls back on one bad value)."""

    def __init__(self, refuses: Callable[[T], bool]) -> None:
        self.refuses = refuses
        self.stored: list[T] = []
        self.writes = 0

    def write(self, group: Sequence[T]) -> None:
        self.writes += 1
        poison = [item for item in group if self.refuses(item)]
        if poison:
            raise OverflowError(f"Python int too large to convert to SQLite INTEGER: {poison[0]}")
        self.stored.extend(group)


def test_a_group_the_store_takes_is_one_write() -> None:
    store = Store[int](lambda item: False)
    assert write_apart(list(range(64)), store.write, is_fault=is_fault) == []
    assert (store.stored, store.writes) == (list(range(64)), 1)


def test_one_poison_outcome_is_found_and_the_rest_stored() -> None:
    store = Store[int](lambda item: item == 37)
    refused = write_apart(list(range(64)), store.write, is_fault=is_fault)
    assert [item for item, _ in refused] == [37]
    assert isinstance(refused[0][1], OverflowError)
    assert sorted(store.stored) == [i for i in range(64) if i != 37]
    assert store.writes == 1 + 2 * 6  # the group, then both halves at each of 6 levels


@settings(max_examples=200, derandomize=True, deadline=None, database=None)
@given(st.integers(1, 200).flatmap(
    lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1)))))
def test_exactly_the_poison_outcomes_are_refused_and_every_other_is_stored_once(
        case: tuple[int, set[int]]) -> None:
    n, poison = case
    store = Store[int](lambda item: item in poison)
    refused = write_apart(list(range(n)), store.write, is_fault=is_fault)
    assert {item for item, _ in refused} == poison
    assert sorted(store.stored) == sorted(set(range(n)) - poison)  # each once
    assert store.writes <= 1 + 2 * max(1, len(poison)) * n.bit_length()


def test_a_storage_fault_is_raised_at_once_not_split_around() -> None:
    calls: list[int] = []

    def write(group: Sequence[int]) -> None:
        calls.append(len(group))
        if len(group) == 8:
            raise ValueError("not the storage's fault")
        raise Fault("disk I/O error")

    with pytest.raises(Fault):
        write_apart(list(range(8)), write, is_fault=is_fault)
    assert calls == [8, 4]  # split once (not a fault), then the fault ends it


def outcome(**fields: object) -> RowOutcome:
    attempt = Attempt("m", 200, None, 5, 1.0)
    base: dict[str, object] = {"ok": True, "response": {"usage": {"prompt_tokens": 2**63 + 5}},
                               "response_text": "{...}", "status_code": 200, "model": "m",
                               "attempts": (attempt,), "usage": Usage(2**63 + 5),
                               "cost_nano_usd": 7}
    return RowOutcome(**(base | fields))  # type: ignore[arg-type]


def test_a_refused_outcome_fails_internal_error_keeping_its_answer_then_bare() -> None:
    refused = outcome()
    full, bare = stand_ins(refused, OverflowError("Python int too large to convert to SQLite "
                                                  "INTEGER"))
    error = ("internal_error: the store refused this row's outcome (OverflowError: Python "
             "int too large to convert to SQLite INTEGER)")
    assert full == RowOutcome(ok=False, model="m", status_code=200, error=error,
                              error_code="internal_error", error_body=refused.response,
                              attempts=refused.attempts)
    assert bare == RowOutcome(ok=False, model="m", error=error, error_code="internal_error")


def test_the_stores_complaint_is_quoted_printable_and_short() -> None:
    _, bare = stand_ins(outcome(), ValueError("bad\x00value\n" + "x" * 500))
    assert bare.error is not None and "\x00" not in bare.error and "\n" not in bare.error
    assert "ValueError: bad\\x00value x" in bare.error and len(bare.error) < 300


def test_save_apart_stores_the_fullest_stand_in_the_store_takes() -> None:
    """The poison is the usage: the stand-in with the answer and attempts is taken."""
    store = Store[Saved](lambda item: item[1].usage.prompt_tokens > 2**63 - 1)
    good = outcome(usage=Usage(3), response={"ok": 1})
    refused = save_apart([(1, good), (2, outcome()), (3, good)], store.write,
                         is_fault=is_fault)
    assert [row_id for row_id, _ in refused] == [2]
    stored = dict(store.stored)
    assert stored[1] == good and stored[3] == good
    assert (stored[2].error_code, stored[2].error_body) == ("internal_error",
                                                            outcome().response)
    assert stored[2].attempts == outcome().attempts


def test_save_apart_falls_back_to_the_bare_stand_in() -> None:
    """The poison is in the answer (a NUL in the upstream's error message, which
    PostgreSQL text refuses): only the bare stand-in, without it, is taken."""
    poisoned = outcome(ok=False, error="upstream_error: 400 bad\x00", error_body={"e": 1},
                       attempts=(Attempt("m", 400, "400 bad\x00", 5, 1.0),))

    def refuses(item: Saved) -> bool:
        _, o = item
        return "\x00" in (o.error or "") or any("\x00" in (a.error or "") for a in o.attempts)

    store = Store(refuses)
    assert [r for r, _ in save_apart([(9, poisoned)], store.write, is_fault=is_fault)] == [9]
    [(row_id, stored)] = store.stored
    assert row_id == 9 and stored.attempts == () and stored.error_body is None
    assert stored.error_code == "internal_error"


def test_save_apart_raises_when_the_fault_is_not_in_the_outcome() -> None:
    """A store that refuses every write is not fixed by failing rows: the error goes up
    (the group is kept and tried again) and nothing is marked failed."""
    store = Store[Saved](lambda item: True)
    with pytest.raises(OverflowError):
        save_apart([(1, outcome()), (2, outcome())], store.write, is_fault=is_fault)
    assert store.stored == []
