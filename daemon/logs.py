"""relayd's logging: every line, whoever writes it (aiohttp's server quoting a raw
request line included), passes a filter that masks secrets: API keys, bearer tokens,
Authorization header values, and the query string, fragment and userinfo of any URL
(`?api_key=…` is how many tool servers take their key). The HTTP clients' own loggers
(httpx, httpx2 under the `mcp` SDK, and the SDK itself), which note every request and
session at INFO, are kept at WARNING. `--log-format json` writes each line as one JSON
object, after the same filter."""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from typing import Any, Literal

SECRET = re.compile(
    r"(?P<key>rk_[A-Za-z0-9_\-]{8,})"  # Relay API keys
    r"|(?i:(?P<scheme>bearer|basic)\s+)(?P<token>[^\s'\",]+)"  # Authorization values
    r"|(?P<whsec>whsec_[0-9a-f]{8,})")  # webhook signing secrets
URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")
MASK = "***"
CHATTY = ("httpx", "httpx2", "mcp")  # a line per request or session at INFO
LogFormat = Literal["text", "json"]
FORMATS: tuple[LogFormat, ...] = ("text", "json")
EXTRAS = ("job", "node")  # context a record may carry (`extra={"job": …}`), kept as fields
TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_process: dict[str, str] = {}  # context every line of this process carries (`set_node`)


def set_node(node_id: str) -> None:
    """This relayd's node id, on every JSON line from now on (a record's own wins)."""
    _process["node"] = node_id


def for_job(logger: logging.Logger, job_id: str) -> logging.LoggerAdapter[logging.Logger]:
    """`logger`, each of whose lines carries `job` (a JSON line's `job` field)."""
    return logging.LoggerAdapter(logger, {"job": job_id})


def masked(text: str) -> str:
    """`text` with every secret it quotes replaced by `***` (the scheme stays), and
    every URL in it redacted."""
    text = URL.sub(lambda m: redacted_url(m[0]), text)
    return SECRET.sub(lambda m: f"{m['scheme']} {MASK}" if m["scheme"] else MASK, text)


def redacted_url(url: str) -> str:
    """`url` with its userinfo, query string and fragment masked: scheme, host, port
    and path stay, which is what a log reader needs."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    cut = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        authority = f"{MASK}@{authority.rpartition('@')[2]}"
    mark = re.search(r"[?#]", tail)
    if mark is not None:  # everything past the path: the query, the fragment
        tail = f"{tail[:mark.start()]}{mark[0]}{MASK}"
    return f"{scheme}://{authority}{tail}"


class SecretFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = masked(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:  # tracebacks quote values too
            record.exc_text = masked(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = masked(record.exc_text)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: `ts` (UTC, ISO 8601), `level`, `logger`, `msg`, the
    record's `job` when it carries one (`for_job`), this process's `node` (`set_node`)
    unless the record names another, and `exc` for a traceback. The
    secret filter has masked the message and traceback by now; the extras and anything
    not yet masked pass through `masked` here, so a handler without it leaks nothing."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "msg": masked(record.getMessage()),
        }
        for name in EXTRAS:
            value = getattr(record, name, None) or _process.get(name)
            if value is not None:
                line[name] = masked(value) if isinstance(value, str) else value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exc"] = masked(record.exc_text)
        if record.stack_info:
            line["stack"] = masked(self.formatStack(record.stack_info))
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(level: str, *, fmt: LogFormat = "text") -> None:
    """Log to stderr at `level` as text lines or JSON objects (`fmt`), every handler
    behind the secret filter; the HTTP clients' loggers at WARNING at least."""
    logging.basicConfig(level=level.upper(), format=TEXT)
    for handler in logging.getLogger().handlers:
        handler.addFilter(SecretFilter())
        if fmt == "json":
            handler.setFormatter(JsonFormatter())
    quiet = max(logging.WARNING, logging.getLogger().getEffectiveLevel())
    for name in CHATTY:
        logging.getLogger(name).setLevel(quiet)
