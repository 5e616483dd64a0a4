"""Reading an answer's body under a cap, for every outbound call on the I/O loop
(upstream requests, tool executors, workflow callbacks, webhooks).

A body over the cap is refused as soon as its Content-Length says so, or else as soon
as one byte more than the cap has arrived: an answer never holds more than the cap in
memory, whatever the peer sends. The count is of the decoded body (aiohttp
decompresses as it reads), so a small gzip answer that inflates past the cap is
refused too.
"""

from __future__ import annotations

import aiohttp

MB = 1024 * 1024
MAX_BYTES = 8 * MB  # [gateway] max_response_mb's default
CHUNK_BYTES = 64 * 1024


class BodyTooLarge(Exception):
    """The body is over `limit` bytes; what arrived of it was dropped."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the body is over {size_text(limit)}")
        self.limit = limit


def size_text(limit: int) -> str:
    """`8 MB` for whole megabytes (MB = 2^20 bytes, as the config's `_mb` keys mean),
    else `5000 bytes`."""
    return f"{limit // MB} MB" if limit and limit % MB == 0 else f"{limit} bytes"


async def read_capped(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body, or `BodyTooLarge` once it is known to be over `limit` bytes."""
    declared = response.content_length
    if declared is not None and declared > limit:
        raise BodyTooLarge(limit)
    if declared is not None and not response.headers.get(aiohttp.hdrs.CONTENT_ENCODING):
        return await response.read()  # the parser stops at Content-Length: one read
    received = bytearray()
    async for chunk in response.content.iter_chunked(CHUNK_BYTES):
        received += chunk
        if len(received) > limit:
            raise BodyTooLarge(limit)
    return bytes(received)
