"""The per-host limit every tool-executor call shares (`[tools] max_concurrency_per_host`),
so one 50,000-record batch cannot flood a user's server."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit


class HostLimits:
    """One semaphore per host and port, created on first use (on the I/O loop)."""

    def __init__(self, per_host: int) -> None:
        self.per_host = per_host
        self._limits: dict[str, asyncio.Semaphore] = {}

    def slot(self, url: str) -> asyncio.Semaphore:
        parts = urlsplit(url)
        key = f"{parts.hostname}:{parts.port or parts.scheme}"
        if key not in self._limits:
            self._limits[key] = asyncio.Semaphore(self.per_host)
        return self._limits[key]
