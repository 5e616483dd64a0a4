"""Secrets never reach relayd's log lines, whoever logs them."""

from __future__ import annotations

import io
import logging

import pytest

from daemon import logs
from daemon.logs import SecretFilter, masked, redacted_url


@pytest.mark.parametrize(("line", "shown"), [
    ("GET /v1/batches HTTP/1.1\r\nAuthorization: Bearer rk_AbCdEf0123456789xyz",
     "GET /v1/batches HTTP/1.1\r\nAuthorization: Bearer ***"),
    ("key rk_AbCdEf0123456789xyz refused", "key *** refused"),
    ("Authorization: basic dXNlcjpwdw==", "Authorization: basic ***"),
    ("secret whsec_0123456789abcdef0123", "secret ***"),
    ("nothing to hide: 42 rows", "nothing to hide: 42 rows"),
    ('HTTP Request: POST http://127.0.0.1:9/mcp?api_key=s3cret "HTTP/1.1 200 OK"',
     'HTTP Request: POST http://127.0.0.1:9/mcp?*** "HTTP/1.1 200 OK"'),
    ("webhook to 'https://bob:pw@hooks.example.com/in?sig=1' failed",
     "webhook to 'https://***@hooks.example.com/in?***' failed"),
    ("GET /v1/batches?after=x HTTP/1.1", "GET /v1/batches?after=x HTTP/1.1"),  # no URL
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


@pytest.mark.parametrize(("url", "shown"), [
    ("https://tools.example.com/mcp?api_key=secret", "https://tools.example.com/mcp?***"),
    ("http://user:pw@host:8080/run?a=1#frag", "http://***@host:8080/run?***"),
    ("https://host/callback#access_token=x", "https://host/callback#***"),
    ("postgresql://relay:pw@db/relay?sslmode=require", "postgresql://***@db/relay?***"),
    ("https://host?x=1", "https://host?***"),
    ("https://host/plain/path", "https://host/plain/path"),
    ("not a url", "not a url"),
])
def test_redacted_url(url: str, shown: str) -> None:
    assert redacted_url(url) == shown


def test_the_http_clients_loggers_are_kept_at_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # basicConfig configures a bare root only
    monkeypatch.setattr(root, "level", root.level)
    for name in logs.CHATTY:
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    logs.configure("DEBUG")
    assert {name: logging.getLogger(name).getEffectiveLevel() for name in
            ("httpx", "httpx2", "mcp", "mcp.client.streamable_http")} == dict.fromkeys(
        ("httpx", "httpx2", "mcp", "mcp.client.streamable_http"), logging.WARNING)
    assert not logging.getLogger("httpx2").isEnabledFor(logging.INFO)
    assert logging.getLogger("relay.tools.mcp").isEnabledFor(logging.DEBUG)
