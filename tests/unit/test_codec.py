"""The per-row JSON codec: orjson's speed, the standard library's reach."""

from __future__ import annotations

import json
import math

import pytest

from daemon.domain import codec


def test_round_trip_is_compact_json() -> None:
    value = {"messages": [{"role": "user", "content": "héllo ✓"}], "max_tokens": 5}
    assert codec.dumps(value) == ('{"messages":[{"role":"user","content":"héllo ✓"}],'
                                  '"max_tokens":5}').encode()
    assert codec.loads(codec.dumps(value)) == value


def test_what_orjson_refuses_falls_back_to_the_standard_library() -> None:
    huge = 2**64 + 1
    assert json.loads(codec.dumps({"n": huge})) == {"n": huge}  # written exactly
    assert codec.loads(str(huge).encode()) == float(huge)  # read as orjson does
    assert math.isnan(codec.loads(b'{"x": NaN}')["x"])
    assert codec.dumps({1: "a"}) == b'{"1": "a"}'


def test_garbage_raises_value_error_like_json() -> None:
    for text in (b"", b"{", b"not json", b"\xff\xfe"):
        with pytest.raises(ValueError):
            codec.loads(text)
