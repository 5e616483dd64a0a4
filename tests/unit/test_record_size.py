"""A multi-call record's size against `[limits] max_record_mb`: counted as JSON, as the
store writes it; a piece that would pass the cap is refused, and nothing is counted."""

from __future__ import annotations

import json

import pytest

from daemon.domain.record_size import MB, RecordSize, RecordTooLarge, json_size


def test_sizes_are_the_json_the_store_writes() -> None:
    message = {"role": "tool", "content": "ø" * 10}  # escaped: six bytes each
    assert json_size(message) == len(json.dumps(message).encode()) == 31 + 60


def test_pieces_are_counted_until_the_cap() -> None:
    size = RecordSize(limit=20)
    size.grow("a", "x" * 8)  # 10 bytes with its quotes
    size.grow("b", "y" * 8)
    assert size.used == 20  # exactly the cap fits


def test_a_piece_past_the_cap_is_refused_and_not_counted() -> None:
    size = RecordSize(limit=2 * MB, used=MB)
    with pytest.raises(RecordTooLarge) as refused:
        size.grow("round 3's tool results", "x" * MB, "y")
    assert size.used == MB
    assert (refused.value.size, refused.value.limit) == (2 * MB + 5, 2 * MB)
    assert str(refused.value) == ("round 3's tool results would take the record to 2.0 MB, "
                                  "past [limits] max_record_mb (2 MB)")


def test_nothing_added_checks_what_is_there() -> None:
    RecordSize(limit=10, used=10).grow("nothing")
    with pytest.raises(RecordTooLarge):
        RecordSize(limit=10, used=11).grow("the stored rounds")
