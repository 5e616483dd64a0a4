"""`ReqwestTransport`: the upstream transport on pyreqwest (Rust's reqwest and hyper).

The HTTP work (connecting, writing, parsing, decompressing, the keep-alive pool)
runs on pyreqwest's own Tokio thread; the I/O loop only awaits its answers. It costs
relayd about half the CPU per request of `AiohttpTransport` (README, "Performance").

The answer cap has `body.read_capped`'s rules: a Content-Length over the cap is
refused before the body is read (past the first 64 KB pyreqwest buffers with the
head), and otherwise at most cap + 1 bytes of the decoded body are read (reqwest
decompresses before counting, and drops Content-Length when it does). A refused
body's connection is dropped, never handed back to the pool.
"""

from __future__ import annotations

from datetime import timedelta

from pyreqwest.client import Client, ClientBuilder
from pyreqwest.exceptions import PyreqwestError
from pyreqwest.response import Response

from daemon.config import ModelConfig, RetryConfig
from daemon.outbound.body import MAX_BYTES
from daemon.upstream.transport import (
    Reply,
    TransportError,
    endpoint_url,
    request_headers,
    too_large,
)


class ReqwestTransport:
    """Posts through one pooled pyreqwest client, created on first use on the running loop."""

    def __init__(self, retry: RetryConfig, *, connection_limit: int = 100,
                 max_response_bytes: int = MAX_BYTES) -> None:
        self._total = timedelta(seconds=retry.request_timeout_s)
        self._connect = timedelta(seconds=retry.connect_timeout_s)
        self._limit = max(1, connection_limit)
        self._max_bytes = max_response_bytes
        self._client: Client | None = None

    async def send(self, model: ModelConfig, endpoint: str, payload: bytes) -> Reply:
        url = endpoint_url(model.base_url, endpoint)
        try:
            return await self._post(url, payload, request_headers(model))
        except TimeoutError as exc:  # pyreqwest's timeouts are TimeoutErrors
            raise TransportError(
                "timeout", f"no answer from {url} in time: {_describe(exc)}"
            ) from exc
        except (PyreqwestError, OSError) as exc:
            raise TransportError("connection", f"{url}: {_describe(exc)}") from exc

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def _post(self, url: str, payload: bytes, headers: dict[str, str]) -> Reply:
        request = self._open().post(url).headers(headers).body_bytes(payload).build_streamed()
        async with request as response:  # leaving it early drops the connection
            body = await self._read_capped(response)
            return Reply(status=response.status, headers=response.headers, body=body)

    async def _read_capped(self, response: Response) -> bytes:
        declared = response.get_header("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > self._max_bytes:
            raise too_large(response.status, self._max_bytes)
        body = await response.body_reader.read(self._max_bytes + 1)  # None: no body
        if body is not None and len(body) > self._max_bytes:
            raise too_large(response.status, self._max_bytes)
        return b"" if body is None else body.to_bytes()

    def _open(self) -> Client:
        if self._client is None:
            # max_connections counts requests in flight, as aiohttp's connector limit;
            # per-model limits are the router's semaphores.
            self._client = (ClientBuilder().timeout(self._total).connect_timeout(self._connect)
                            .max_connections(self._limit).follow_redirects(False).build())
        return self._client


def _describe(exc: BaseException) -> str:
    """`ConnectError: connection error: Connection refused (os error 111)`: pyreqwest's
    message and the innermost of its causes, the one that says what happened."""
    text = getattr(exc, "message", None) or str(exc)
    causes = (getattr(exc, "details", None) or {}).get("causes") or []
    if causes and causes[-1]["message"] != text:
        text = f"{text}: {causes[-1]['message']}"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
