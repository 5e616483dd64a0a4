"""The one-method transport that carries a request to an upstream (OpenAI or Anthropic).

`Transport.send` posts a JSON payload and hands back the raw `Reply`, whatever its
status: deciding what a status means is the router's job. Only a failure to get
any answer is an exception:

    TransportError
      kind "timeout"      no complete answer within the configured time
      kind "connection"   refused, reset, disconnected, truncated body
      kind "too_large"    the body is over `[gateway] max_response_mb` (`status` is set);
                          the read stops there, the connection is dropped

`AiohttpTransport` is one real client (one pooled `ClientSession` on the I/O loop),
`reqwest.ReqwestTransport` the other; `clients.TRANSPORTS` names those
`[gateway] transport` may choose. `FunctionTransport` wraps a plain async function so
tests need no network.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import aiohttp
from multidict import CIMultiDict

from daemon.config import ModelConfig, RetryConfig
from daemon.outbound.body import MAX_BYTES, BodyTooLarge, read_capped, size_text

ANTHROPIC_VERSION = "2023-06-01"  # the Messages API version Relay speaks upstream


@dataclass(slots=True)  # made per row or call: see `outcome.py`
class Reply:
    """An upstream's answer, any status."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class TransportError(Exception):
    """No usable answer came back: `kind` is "timeout", "connection" or "too_large"
    (then `status` is the answer's status)."""

    def __init__(self, kind: str, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status


class Transport(Protocol):
    async def send(self, model: ModelConfig, endpoint: str, payload: bytes) -> Reply: ...


Handler = Callable[[ModelConfig, str, bytes], Awaitable[Reply]]


def endpoint_url(base_url: str, endpoint: str) -> str:
    """Join a model's base URL and an API path, with "/v1" appearing once."""
    base = base_url.rstrip("/")
    path = "/" + endpoint.lstrip("/")
    if base.endswith("/v1") and (path == "/v1" or path.startswith("/v1/")):
        path = path.removeprefix("/v1")
    return base + path


def request_headers(model: ModelConfig) -> dict[str, str]:
    """JSON content type and the model's protocol's auth, the key only when the model
    has one: a bearer token (OpenAI), or `x-api-key` with `anthropic-version`."""
    headers = {"Content-Type": "application/json"}
    if model.api == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if model.api_key:
            headers["x-api-key"] = model.api_key
    elif model.api_key:
        headers["Authorization"] = f"Bearer {model.api_key}"
    return headers


class AiohttpTransport:
    """Posts through one pooled aiohttp session, created on first use on the running loop."""

    def __init__(self, retry: RetryConfig, *, connection_limit: int = 100,
                 max_response_bytes: int = MAX_BYTES) -> None:
        self._timeout = aiohttp.ClientTimeout(
            total=retry.request_timeout_s, sock_connect=retry.connect_timeout_s
        )
        self._limit = max(1, connection_limit)
        self._max_bytes = max_response_bytes
        self._session: aiohttp.ClientSession | None = None

    async def send(self, model: ModelConfig, endpoint: str, payload: bytes) -> Reply:
        url = endpoint_url(model.base_url, endpoint)
        try:
            return await self._post(url, payload, request_headers(model))
        except TimeoutError as exc:  # before OSError: TimeoutError is one
            raise TransportError(
                "timeout", f"no answer from {url} in time: {_describe(exc)}"
            ) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise TransportError("connection", f"{url}: {_describe(exc)}") from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _post(self, url: str, payload: bytes, headers: dict[str, str]) -> Reply:
        session = self._open()
        async with session.post(url, data=payload, headers=headers, allow_redirects=False) as resp:
            try:
                body = await read_capped(resp, self._max_bytes)
            except BodyTooLarge as exc:
                resp.close()  # the rest is never read: drop the connection
                raise too_large(resp.status, exc.limit) from exc
            return Reply(status=resp.status, headers=CIMultiDict(resp.headers), body=body)

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # limit_per_host=0: per-model limits are the router's semaphores.
            connector = aiohttp.TCPConnector(limit=self._limit, limit_per_host=0)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
        return self._session


def too_large(status: int, limit: int) -> TransportError:
    """The error of an answer over the cap; its message is the row's phrase for it."""
    return TransportError("too_large", f"answered {status} with a body over the "
                          f"{size_text(limit)} limit ([gateway] max_response_mb)", status=status)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class FunctionTransport:
    """A transport that calls `handler(model, endpoint, payload)`: for tests and the demo."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler

    async def send(self, model: ModelConfig, endpoint: str, payload: bytes) -> Reply:
        return await self.handler(model, endpoint, payload)
