"""Counting the attempt log for `/metrics` when ids become visible out of order (on
PostgreSQL, writes commit side by side): each attempt is counted once, a late one is
not lost, and an id rolled back is given up after `GAP_S`."""

from __future__ import annotations

from daemon.domain.stats import AttemptSample
from daemon.metering import GAP_S, AttemptMark


def attempts(*ids: int) -> list[AttemptSample]:
    return [AttemptSample(i, "ws", "m", "ok", 10, False) for i in ids]


def ids(samples: list[AttemptSample]) -> list[int]:
    return [s.id for s in samples]


def test_in_order_the_mark_follows() -> None:
    mark = AttemptMark(10)
    assert ids(mark.take(attempts(11, 12, 13), now=0)) == [11, 12, 13]
    assert (mark.mark, mark.seen, mark.missing) == (13, set(), {})


def test_a_late_commit_is_counted_once_when_it_shows() -> None:
    mark = AttemptMark(10)
    assert ids(mark.take(attempts(11, 14, 15), now=0)) == [11, 14, 15]  # 12, 13 not yet
    assert mark.mark == 11
    assert ids(mark.take(attempts(14, 15, 16), now=1)) == [16]  # read again: not again
    assert ids(mark.take(attempts(12, 13, 14, 15, 16), now=2)) == [12, 13]
    assert (mark.mark, mark.seen, mark.missing) == (16, set(), {})


def test_an_id_rolled_back_is_given_up_after_a_while() -> None:
    mark = AttemptMark(10)
    mark.take(attempts(12), now=0)
    assert mark.mark == 10 and mark.missing == {11: 0}
    mark.take(attempts(12), now=GAP_S - 1)
    assert mark.mark == 10
    assert ids(mark.take(attempts(12), now=GAP_S)) == []
    assert (mark.mark, mark.seen, mark.missing) == (12, set(), {})
