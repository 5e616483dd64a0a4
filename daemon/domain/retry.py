"""The retry policy for upstream calls: which failures are worth retrying and how long to wait.

Pure functions only. The caller passes the current time (`now`, unix seconds) and a
random source, so tests step time and jitter by hand.
"""

from __future__ import annotations

import math
import random
from datetime import UTC
from email.utils import parsedate_to_datetime

from daemon.config import RetryConfig

# Past this many doublings every realistic cap has been reached; stop before floats overflow.
_MAX_DOUBLINGS = 62


def is_transient_status(code: int) -> bool:
    """True for statuses a later try may not repeat: 408, 409, 429 and any 5xx."""
    return code in (408, 409, 429) or 500 <= code <= 599


def is_retryable_answer(code: int) -> bool:
    """A user's tool executor or workflow callback may do better on a retry after a
    timeout status, 429 or 5xx; other statuses are its answer (a 409 included)."""
    return code in (408, 429) or 500 <= code <= 599


def backoff_delay(attempt: int, *, base: float, cap: float, rng: random.Random) -> float:
    """Seconds to wait after the `attempt`-th failure (1-based): exponential, full jitter."""
    doublings = min(max(attempt - 1, 0), _MAX_DOUBLINGS)
    return rng.uniform(0, min(cap, base * 2**doublings))


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """A Retry-After header as seconds from `now`: delta-seconds or an HTTP date.

    A moment already past is 0; anything unparseable is None.
    """
    if value is None or not value.strip():
        return None
    seconds = _parse_seconds(value)
    if seconds is None:
        seconds = _parse_http_date(value, now=now)
    return None if seconds is None else max(0.0, seconds)


def retry_delay(
    attempt: int,
    *,
    retry_after: str | None,
    policy: RetryConfig,
    now: float,
    rng: random.Random,
) -> float:
    """Seconds to wait before the next try: the upstream's Retry-After (capped), else backoff."""
    asked = parse_retry_after(retry_after, now=now)
    if asked is not None:
        return min(asked, policy.retry_after_cap_s)
    return backoff_delay(attempt, base=policy.backoff_base_s, cap=policy.backoff_cap_s, rng=rng)


def _parse_seconds(value: str) -> float | None:
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) else None


def _parse_http_date(value: str, *, now: float) -> float | None:
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000" means UTC with no stated zone (RFC 5322)
        when = when.replace(tzinfo=UTC)
    return when.timestamp() - now
