"""Request bodies against a real `relayd serve`: compressed bodies are held to the body
budget as they are decoded. Eight concurrent 1 MB gzip bombs were once answered 413
while relayd's memory peaked past a gigabyte (each decoded 64 MB and copied it, having
reserved only its 1 MB Content-Length)."""

from __future__ import annotations

import asyncio
import os
import zlib
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from daemon.testing import Relayd, wait_until

MB = 1024 * 1024
BOMBS = 8
# relayd's own memory (about 70 MB idle) plus the body budget (max_parsing_mb, 128 MB
# by default: the decoded bodies it may hold at once) plus buffers; before the budget
# counted decoded bytes, the peak was 600 MB to 1.1 GB here.
PEAK_BOUND_KB = 300 * 1024
# Inflating 64 MB of each of the eight and refusing it took about 1.6 s of CPU here in
# all; going on to inflate the rest of each (about 1 GB) took 8.7 s.
CPU_BOUND_S = 5.0
RETRIES = 50  # a 429 (the budget is full) is retried; each bomb is read at most once


def gzip_bomb(compressed_mb: int = 1) -> bytes:
    """About `compressed_mb` MB of gzip that inflates a thousandfold: a JSON array's
    opening and a gigabyte of spaces."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip stream
    parts = [packer.compress(b'{"requests": [')]
    spaces = b" " * MB
    while sum(map(len, parts)) < compressed_mb * MB:
        parts.append(packer.compress(spaces))
    parts.append(packer.flush())
    return b"".join(parts)


def cpu_s(pid: int) -> float:
    """The CPU time (user + system) the process has used, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/PID/status")


@pytest.fixture
def relayd(tmp_path: Path) -> Any:
    daemon = Relayd(home=tmp_path / "relayd").write_config()
    yield daemon.start()
    daemon.stop()


async def post_until_answered(session: aiohttp.ClientSession, url: str, key: str,
                              body: bytes) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
               "Content-Encoding": "gzip"}
    for _ in range(RETRIES):
        async with session.post(url + "/v1/batches", data=body, headers=headers) as resp:
            answer = await resp.json()
            if resp.status != 429:
                return resp.status, answer
            assert answer["error"]["code"] == "server_busy"
        await asyncio.sleep(0.1)  # as a client honouring Retry-After would, sooner
    raise AssertionError(f"still 429 after {RETRIES} tries")


def test_concurrent_gzip_bombs_are_413_and_memory_stays_bounded(relayd: Relayd) -> None:
    key = relayd.create_key("acme")
    bomb = gzip_bomb()
    assert MB <= len(bomb) < 2 * MB

    async def attack() -> list[tuple[int, dict[str, Any]]]:
        async with aiohttp.ClientSession() as session:
            return await asyncio.gather(*(post_until_answered(session, relayd.url, key, bomb)
                                          for _ in range(BOMBS)))

    before = cpu_s(relayd.pid)
    answers = asyncio.run(attack())

    for status, answer in answers:
        assert status == 413, answer
        error = answer["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert error["code"] == "request_too_large"
        assert "64 MB" in error["message"]
    peak = peak_rss_kb(relayd.pid)
    assert peak < PEAK_BOUND_KB, f"relayd peaked at {peak // 1024} MB"
    # The rest of each bomb is dropped unread: aiohttp used to go on inflating it for its
    # lingering time (about a second of CPU per bomb here, and /healthz unanswered).
    wait_until(relayd.healthy, timeout=30, message="relayd healthy after the bombs")
    spent = cpu_s(relayd.pid) - before
    assert spent < CPU_BOUND_S, f"relayd spent {spent:.1f} s of CPU on {BOMBS} bombs"
