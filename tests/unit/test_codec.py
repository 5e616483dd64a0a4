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
    huge = 2**70
    assert codec.loads(str(huge).encode()) == huge
    assert json.loads(codec.dumps({"n": huge})) == {"n": huge}
    assert math.isnan(codec.loads(b'{"x": NaN}')["x"])
    assert codec.dumps({1: "a"}) == b'{"1": "a"}'


def test_garbage_raises_value_error_like_json() -> None:
    for text in (b"", b"{", b"not json", b"\xff\xfe"):
        with pytest.raises(ValueError):
            codec.loads(text)


def test_an_integer_past_64_bits_stays_an_exact_integer() -> None:
    # orjson would read it as a float: 2**64 + 1 would come back as 2**64
    text = '{"seed": 18446744073709551617, "at": 12345678901234567890123}'
    for parsed in (codec.loads(text), codec.loads(text.encode()),
                   codec.loads_strict(text.encode())):
        assert parsed == {"seed": 2**64 + 1, "at": 12345678901234567890123}
        assert type(parsed["seed"]) is int


def test_strict_refuses_what_json_has_no_number_for_and_reads_the_rest() -> None:
    for text in (b'{"x": NaN}', b'[Infinity]', b'[-Infinity]'):
        with pytest.raises(ValueError, match="is not a JSON number"):
            codec.loads_strict(text)
    assert codec.loads_strict(b'{"a": [1, 2.5, "\\u00e9", null]}') == {"a": [1, 2.5, "é", None]}
    assert codec.loads_strict(b"[1e400]") == [math.inf]  # as the standard library reads it
    assert codec.loads_strict(b"\xef\xbb\xbf{}") == {}  # orjson refuses a BOM, json not
    with pytest.raises(ValueError, match="Expecting value: line 1 column 7"):  # json's words
        codec.loads_strict(b'{"a": }')
