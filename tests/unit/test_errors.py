"""How a message names what a client sent: a few items and a count, a value cut short."""

from __future__ import annotations

import pytest

from daemon.domain.errors import first_few, shown


@pytest.mark.parametrize(("items", "most", "text"), [
    ([], 5, "none"),
    (["a"], 5, "'a'"),
    (["a", "b", "c"], 3, "'a', 'b', 'c'"),
    (["a", "b", "c", "d"], 3, "'a', 'b', 'c' and 1 more (4 in all)"),
    ([f"id-{i}" for i in range(20_000)], 2, "'id-0', 'id-1' and 19,998 more (20,000 in all)"),
])
def test_listed(items: list[str], most: int, text: str) -> None:
    assert first_few(items, most=most) == text


def test_listed_cuts_each_long_item_too() -> None:
    text = first_few(["x" * 10_000] * 3)
    assert len(text) < 400 and text.count("(10,000 characters)") == 3


def test_shown() -> None:
    assert shown("gpt-4o") == "'gpt-4o'"
    assert shown("m" * 150, most=4) == "'mmmm'... (150 characters)"
