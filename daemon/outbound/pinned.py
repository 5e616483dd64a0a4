"""DNS pinning for clients built on httpx2 (the `mcp` SDK's HTTP client): every request
goes to an address the URL policy already checked, while TLS (SNI and the certificate
check) and the `Host` header keep the name, so a DNS answer that changes later cannot
redirect the session to an internal address."""

from __future__ import annotations

import httpx2


class PinnedTransport(httpx2.AsyncBaseTransport):
    """Sends every request of one client (one checked URL's origin: redirects to
    another are not followed) to `address`, keeping the name for TLS and Host."""

    def __init__(self, address: str | None, *,
                 inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.address = address  # None: private targets allowed, nothing to pin
        self.inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.address is not None:
            name = request.url.raw_host.decode("ascii")  # IDNA-encoded, as TLS wants it
            request.url = request.url.copy_with(host=self.address)
            request.extensions = {**request.extensions, "sni_hostname": name}
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
