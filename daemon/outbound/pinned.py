"""DNS pinning and the answer cap for clients built on httpx2 (the `mcp` SDK's HTTP
client): every request goes to an address the URL policy already checked, while TLS
(SNI and the certificate check) and the `Host` header keep the name, so a DNS answer
that changes later cannot redirect the session to an internal address.

With `max_bytes`, a JSON answer is read no further than the cap (`[gateway]
max_response_mb`). The refusal is raised while the body is read, as an
`httpx2.StreamError`: the SDK turns that into the request's JSON-RPC error (the call
fails with this message; the session lives on). Answers are asked for uncompressed,
and a compressed one is refused, since the cap must count what is decoded. An event
stream is left to the SDK's own cap on one event (`max_sse_event_size`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

from daemon.outbound.body import size_text


class AnswerTooLarge(httpx2.StreamError):
    """An answer the cap refuses."""


class PinnedTransport(httpx2.AsyncBaseTransport):
    """Sends every request of one client (one checked URL's origin: redirects to
    another are not followed) to `address`, keeping the name for TLS and Host."""

    def __init__(self, address: str | None, *,
                 inner: httpx2.AsyncBaseTransport | None = None,
                 max_bytes: int | None = None) -> None:
        self.address = address  # None: private targets allowed, nothing to pin
        self.inner = inner or httpx2.AsyncHTTPTransport()
        self.max_bytes = max_bytes  # None: no cap

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.address is not None:
            name = request.url.raw_host.decode("ascii")  # IDNA-encoded, as TLS wants it
            request.url = request.url.copy_with(host=self.address)
            request.extensions = {**request.extensions, "sni_hostname": name}
        if self.max_bytes is not None:
            request.headers["Accept-Encoding"] = "identity"
        response = await self.inner.handle_async_request(request)
        if self.max_bytes is not None and not _is_event_stream(response):
            response.stream = CappedStream(response, self.max_bytes)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class CappedStream(httpx2.AsyncByteStream):
    """`response`'s body, refused (`AnswerTooLarge`) before a byte is read when its
    headers say it is over `limit` or compressed, else once more than `limit` bytes
    have arrived."""

    def __init__(self, response: httpx2.Response, limit: int) -> None:
        self.inner = response.stream
        self.limit = limit
        self.refusal = _refusal(response, limit)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.refusal is not None:
            raise AnswerTooLarge(self.refusal)
        received = 0
        assert isinstance(self.inner, httpx2.AsyncByteStream)
        async for chunk in self.inner:
            received += len(chunk)
            if received > self.limit:
                raise AnswerTooLarge(_over(self.limit))
            yield chunk

    async def aclose(self) -> None:
        if isinstance(self.inner, httpx2.AsyncByteStream):
            await self.inner.aclose()


def _is_event_stream(response: httpx2.Response) -> bool:
    return response.headers.get("Content-Type", "").lower().startswith("text/event-stream")


def _refusal(response: httpx2.Response, limit: int) -> str | None:
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        return (f"the MCP server's answer is compressed ({encoding}) though none was "
                "asked for; a compressed answer cannot be held to the "
                f"{size_text(limit)} limit ([gateway] max_response_mb)")
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        return _over(limit)
    return None


def _over(limit: int) -> str:
    return (f"the MCP server's answer is over the {size_text(limit)} limit "
            "([gateway] max_response_mb)")
