"""relayd's logging: every line, whoever writes it (aiohttp's server quoting a raw
request line included), passes a filter that masks secrets: API keys, bearer tokens,
Authorization header values, and the query string, fragment and userinfo of any URL
(`?api_key=…` is how many tool servers take their key). The HTTP clients' own loggers
(httpx, httpx2 under the `mcp` SDK, and the SDK itself), which note every request and
session at INFO, are kept at WARNING."""

from __future__ import annotations

import logging
import re

SECRET = re.compile(
    r"(?P<key>rk_[A-Za-z0-9_\-]{8,})"  # Relay API keys
    r"|(?i:(?P<scheme>bearer|basic)\s+)(?P<token>[^\s'\",]+)"  # Authorization values
    r"|(?P<whsec>whsec_[0-9a-f]{8,})")  # webhook signing secrets
URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")
MASK = "***"
CHATTY = ("httpx", "httpx2", "mcp")  # a line per request or session at INFO


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


def configure(level: str) -> None:
    """Log to stderr at `level`, every handler behind the secret filter; the HTTP
    clients' loggers at WARNING at least."""
    logging.basicConfig(level=level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(SecretFilter())
    quiet = max(logging.WARNING, logging.getLogger().getEffectiveLevel())
    for name in CHATTY:
        logging.getLogger(name).setLevel(quiet)
