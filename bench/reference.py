"""The reference: a plain asyncio client on one aiohttp `ClientSession` that sends the
same chat requests Relay sends, to the same simulator, at the same concurrency.

It does nothing but send, read and decode, so its rate is the most a client on this
machine gets out of that upstream. Against a zero-latency simulator it measures the
simulator's own ceiling.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator, Sequence

import aiohttp

from bench.procs import BenchError

HEADERS = {"Content-Type": "application/json"}


def chat_body(prompt: str, model: str = "sim-small") -> bytes:
    """The request body Relay sends upstream for one chat row (model name substituted)."""
    return json.dumps({"model": model, "messages": [{"role": "user", "content": prompt}]},
                      separators=(",", ":")).encode()


def run(base_url: str, prompts: Sequence[str], *, concurrency: int) -> float:
    """Send one request per prompt, `concurrency` at a time; return the wall seconds."""
    return asyncio.run(_run(base_url + "/chat/completions",
                            [chat_body(p) for p in prompts], concurrency))


async def _run(url: str, bodies: list[bytes], concurrency: int) -> float:
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        todo = iter(bodies)
        started = time.perf_counter()
        await asyncio.gather(*(_worker(session, url, todo) for _ in range(concurrency)))
        return time.perf_counter() - started


async def _worker(session: aiohttp.ClientSession, url: str, todo: Iterator[bytes]) -> None:
    for body in todo:  # one shared iterator: each body is sent once
        async with session.post(url, data=body, headers=HEADERS) as resp:
            reply = json.loads(await resp.read())
            if resp.status != 200 or "choices" not in reply:
                raise BenchError(f"reference request failed: {resp.status} {reply}")
