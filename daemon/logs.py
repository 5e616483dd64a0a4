"""relayd's logging: every line, whoever writes it (aiohttp's server quoting a raw
request line included), passes a filter that masks secrets: API keys, bearer tokens and
Authorization header values."""

from __future__ import annotations

import logging
import re

SECRET = re.compile(
    r"(?P<key>rk_[A-Za-z0-9_\-]{8,})"  # Relay API keys
    r"|(?i:(?P<scheme>bearer|basic)\s+)(?P<token>[^\s'\",]+)"  # Authorization values
    r"|(?P<whsec>whsec_[0-9a-f]{8,})")  # webhook signing secrets
MASK = "***"


def masked(text: str) -> str:
    """`text` with every secret it quotes replaced by `***` (the scheme stays)."""
    return SECRET.sub(lambda m: f"{m['scheme']} {MASK}" if m["scheme"] else MASK, text)


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
    """Log to stderr at `level`, every handler behind the secret filter."""
    logging.basicConfig(level=level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(SecretFilter())
