"""Secrets never reach relayd's log lines, whoever logs them."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from daemon import logs
from daemon.logs import JsonFormatter, SecretFilter, masked, redacted_url


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


@pytest.fixture(autouse=True)
def no_node_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """No node id from a daemon another test started in this process."""
    monkeypatch.setattr(logs, "_process", {})


def _json_lines(emit: Callable[[logging.Logger], None]) -> list[dict[str, Any]]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(SecretFilter())
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("test.json")
    log.addHandler(handler)
    try:
        emit(log)
    finally:
        log.removeHandler(handler)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_json_lines_carry_the_fields_and_the_extras() -> None:
    def emit(log: logging.Logger) -> None:
        log.warning("row %s retried", "r-1", extra={"job": "batch_1", "node": "n1"})
        log.error("plain")

    first, second = _json_lines(emit)
    assert first["ts"].endswith("Z") and "T" in first["ts"]
    assert {k: first[k] for k in ("level", "logger", "msg", "job", "node")} == {
        "level": "WARNING", "logger": "test.json", "msg": "row r-1 retried",
        "job": "batch_1", "node": "n1"}
    assert set(second) == {"ts", "level", "logger", "msg"}


def test_json_lines_keep_secrets_masked() -> None:
    def emit(log: logging.Logger) -> None:
        log.error("bad header %r", "Bearer rk_AbCdEf0123456789xyz",
                  extra={"job": "https://h/x?api_key=s3cret"})
        try:
            raise ValueError("Illegal header value b'Bearer s3cr3t-token'")
        except ValueError:
            log.exception("request failed")

    first, second = _json_lines(emit)
    assert first["msg"] == "bad header 'Bearer ***'"
    assert first["job"] == "https://h/x?***"
    assert "ValueError: Illegal header value b'Bearer ***'" in second["exc"]
    assert "s3cr3t" not in json.dumps([first, second])


def test_configure_json_formats_every_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", root.level)
    logs.configure("INFO", fmt="json")
    assert root.handlers
    assert all(isinstance(h.formatter, JsonFormatter) for h in root.handlers)
    assert all(any(isinstance(f, SecretFilter) for f in h.filters) for h in root.handlers)


def test_a_jobs_lines_carry_it_and_every_line_the_node() -> None:
    def emit(log: logging.Logger) -> None:
        log.warning("before the node joined")
        logs.set_node("node-a")
        logs.for_job(log, "job-1").warning("a row's outcome was refused")
        log.error("elsewhere", extra={"node": "node-b"})  # a record's own wins

    first, second, third = _json_lines(emit)
    assert "node" not in first and "job" not in first
    assert (second["job"], second["node"]) == ("job-1", "node-a")
    assert "job" not in third and third["node"] == "node-b"
