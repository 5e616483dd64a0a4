"""The upstream HTTP clients `[gateway] transport` may name (`config.TRANSPORTS` lists
the same names), and the factory the wiring calls. A further client is one class in
its own module and one line here; the router never changes."""

from __future__ import annotations

from collections.abc import Callable

from daemon.config import RetryConfig
from daemon.outbound.body import MAX_BYTES
from daemon.upstream.reqwest import ReqwestTransport
from daemon.upstream.transport import AiohttpTransport, Transport

TRANSPORTS: dict[str, Callable[..., Transport]] = {
    "aiohttp": AiohttpTransport,
    "pyreqwest": ReqwestTransport,
}


def make_transport(name: str, retry: RetryConfig, *, connection_limit: int,
                   max_response_bytes: int = MAX_BYTES) -> Transport:
    """The upstream HTTP client `[gateway] transport` names."""
    return TRANSPORTS[name](retry, connection_limit=connection_limit,
                            max_response_bytes=max_response_bytes)
