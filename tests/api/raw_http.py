"""HTTP/1.1 by hand over asyncio streams, for tests that need what no client library
sends: a head that never ends, a body that stops halfway."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from multidict import CIMultiDict

WAIT_S = 5.0  # how long a test waits for the server to answer or close


@dataclass
class Answer:
    status: int
    headers: CIMultiDict[str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Raw:
    """One connection to 127.0.0.1:`port`."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    @classmethod
    async def open(cls, port: int) -> Raw:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def answer(self) -> Answer:
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), WAIT_S)
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers: CIMultiDict[str] = CIMultiDict()
        for line in filter(None, lines):
            name, _, value = line.partition(": ")
            headers.add(name, value)
        length = int(headers.get("Content-Length", "0"))
        body = await asyncio.wait_for(self.reader.readexactly(length), WAIT_S)
        return Answer(int(status_line.split()[1]), headers, body)

    async def closed_by_server(self, timeout: float = WAIT_S) -> bool:
        """Whether the server closes this connection within `timeout` (whatever it
        answered before)."""
        try:
            while await asyncio.wait_for(self.reader.read(65536), timeout):
                pass
        except TimeoutError:
            return False
        except ConnectionError:
            pass
        return True

    def close(self) -> None:
        self.writer.close()


def head(method: str, path: str, *, headers: dict[str, str] | None = None,
         end: bool = True) -> bytes:
    """A request head; `end=False` leaves off the blank line that ends it."""
    lines = [f"{method} {path} HTTP/1.1", "Host: relay.test",
             *(f"{name}: {value}" for name, value in (headers or {}).items())]
    return ("\r\n".join(lines) + "\r\n" + ("\r\n" if end else "")).encode()


def post_head(path: str, key: str, *, length: int | None) -> bytes:
    """A POST's head with the key, and Content-Length (None: a chunked body)."""
    sized = {"Content-Length": str(length)} if length is not None else {
        "Transfer-Encoding": "chunked"}
    return head("POST", path, headers={"Authorization": f"Bearer {key}",
                                       "Content-Type": "application/json", **sized})


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"
