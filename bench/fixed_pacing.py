"""The fixed-pacing reference: the strategy many users run against a rate-limited
upstream today. A plain asyncio client on one aiohttp `ClientSession` sends the same
chat requests Relay sends, evenly spaced at a configured rpm (and tpm), and on any
429 stops all sending for 15 s, then goes on at the same pace; a request answered
429 goes to the back of the queue and is sent again.

`FixedPacing` is the schedule, pure (time is passed in); `run` sends.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import aiohttp

from bench.procs import BenchError
from bench.reference import HEADERS, chat_body

PAUSE_S = 15.0  # all sending stops this long after any 429
IN_FLIGHT = 64  # requests on the wire at most (the bench's max_concurrency)


@dataclass
class FixedPacing:
    """When the next request may go: one gap after the last (a minute ÷ rpm, or the
    request's share of a minute's tokens, whichever is longer), and not before a pause
    that a 429 began has ended."""

    rpm: int | None
    tpm: int | None = None
    pause_s: float = PAUSE_S
    next_at: float = 0.0  # the earliest the next request may go

    def gap(self, tokens: float) -> float:
        by_requests = 60 / self.rpm if self.rpm else 0.0
        by_tokens = 60 * tokens / self.tpm if self.tpm else 0.0
        return max(by_requests, by_tokens)

    def wait(self, now: float) -> float:
        """Seconds until the next request may go (0: now)."""
        return max(0.0, self.next_at - now)

    def sent(self, now: float, tokens: float = 0) -> None:
        """A request of `tokens` went at `now`. While sending keeps up, the next slot is
        one gap after this one's (so a late timer does not slow the pace); after a
        lull, one gap after `now`."""
        gap = self.gap(tokens)
        self.next_at = (self.next_at if now - self.next_at < gap else now) + gap

    def rate_limited(self, now: float) -> None:
        """A 429 came back at `now`: nothing goes for `pause_s`."""
        self.next_at = max(self.next_at, now + self.pause_s)


def tokens_of(body: bytes) -> float:
    """A client's estimate of a request's tokens: its size ÷ 4."""
    return len(body) / 4


def run(base_url: str, prompts: Sequence[str], *, rpm: int | None, tpm: int | None = None,
        pause_s: float = PAUSE_S, in_flight: int = IN_FLIGHT) -> float:
    """Send one request per prompt, paced, until every one is answered 200; return the
    wall seconds."""
    bodies = [chat_body(p) for p in prompts]
    pacing = FixedPacing(rpm, tpm, pause_s)
    return asyncio.run(_run(base_url + "/chat/completions", bodies, pacing, in_flight))


async def _run(url: str, bodies: list[bytes], pacing: FixedPacing, in_flight: int) -> float:
    connector = aiohttp.TCPConnector(limit=in_flight, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        pacing.next_at = asyncio.get_running_loop().time()
        await _Sender(session, url, pacing, bodies, in_flight).send_all()
        return time.perf_counter() - started


@dataclass
class _Sender:
    """One dispatcher that paces the queue out; one task per request on the wire."""

    session: aiohttp.ClientSession
    url: str
    pacing: FixedPacing
    bodies: list[bytes]
    in_flight: int
    todo: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    left: int = 0
    failure: BaseException | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def send_all(self) -> None:
        self.left = len(self.bodies)
        for queued in self.bodies:
            self.todo.put_nowait(queued)
        if not self.bodies:
            self.todo.put_nowait(None)  # None: nothing more to send
        slots = asyncio.Semaphore(self.in_flight)
        while (body := await self.todo.get()) is not None:
            await slots.acquire()
            await self._paced(body)
            task = asyncio.create_task(self._send(body, slots))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        for task in list(self._tasks):
            task.cancel()
        if self.failure is not None:
            raise self.failure

    async def _paced(self, body: bytes) -> None:
        """Wait for the body's slot; a 429 during the wait pushes it back."""
        loop = asyncio.get_running_loop()
        while (wait := self.pacing.wait(loop.time())) > 0:
            await asyncio.sleep(wait)
        self.pacing.sent(loop.time(), tokens_of(body))

    async def _send(self, body: bytes, slots: asyncio.Semaphore) -> None:
        try:
            async with self.session.post(self.url, data=body, headers=HEADERS) as resp:
                self._answered(body, resp.status, await resp.read())
        except Exception as exc:  # the dispatcher stops and raises it
            self.failure = exc
            self.todo.put_nowait(None)
        finally:
            slots.release()

    def _answered(self, body: bytes, status: int, raw: bytes) -> None:
        if status == 429:
            self.pacing.rate_limited(asyncio.get_running_loop().time())
            self.todo.put_nowait(body)
            return
        reply = json.loads(raw)
        if status != 200 or "choices" not in reply:
            raise BenchError(f"fixed-pacing request failed: {status} {reply}")
        self.left -= 1
        if self.left == 0:
            self.todo.put_nowait(None)
