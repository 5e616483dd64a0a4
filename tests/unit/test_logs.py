"""Secrets never reach relayd's log lines, whoever logs them."""

from __future__ import annotations

import io
import logging

import pytest

from daemon.logs import SecretFilter, masked


@pytest.mark.parametrize(("line", "shown"), [
    ("GET /v1/batches HTTP/1.1\r\nAuthorization: Bearer rk_AbCdEf0123456789xyz",
     "GET /v1/batches HTTP/1.1\r\nAuthorization: Bearer ***"),
    ("key rk_AbCdEf0123456789xyz refused", "key *** refused"),
    ("Authorization: basic dXNlcjpwdw==", "Authorization: basic ***"),
    ("secret whsec_0123456789abcdef0123", "secret ***"),
    ("nothing to hide: 42 rows", "nothing to hide: 42 rows"),
])
def test_masked(line: str, shown: str) -> None:
    assert masked(line) == shown


def test_the_filter_masks_messages_arguments_and_tracebacks() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(SecretFilter())
    log = logging.getLogger("test.secrets")
    log.addHandler(handler)
    try:
        log.error("bad header %r", "Bearer rk_AbCdEf0123456789xyz")
        try:
            raise ValueError("Illegal header value b'Bearer s3cr3t-token'")
        except ValueError:
            log.exception("request failed")
    finally:
        log.removeHandler(handler)
    text = out.getvalue()
    assert "rk_AbCdEf" not in text and "s3cr3t-token" not in text
    assert "bad header 'Bearer ***'" in text
    assert "ValueError: Illegal header value b'Bearer ***'" in text
