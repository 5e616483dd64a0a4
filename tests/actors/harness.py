"""What the actor and API tests run Relay against: a scripted upstream, a clock that
tests can jump, a config with tiny backoffs, and a poll-until helper.

The upstream decides each reply from the prompt (the last message's content), so a
test says what should happen to a row by what the row asks:

    BLOCK      wait until `upstream.gate` is set, then answer
    PAUSE      wait until `upstream.pause` is set, then answer
    FLAKY      503 on the first two calls with this prompt, then 200
    NOPRIMARY  503 from the primary alias, 200 from any other
    OUTAGE     503 while `upstream.outage` is true
    REFUSE     400 (a permanent failure)
    GARBAGE    200 with a body that is not JSON
    otherwise  200 with the content "re: <prompt>"
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pykka
import pytest

from daemon import testing
from daemon.config import Config, ModelConfig, parse
from daemon.runtime import Daemon
from daemon.upstream.transport import FunctionTransport, Reply

PRIMARY = "gpt-4o-mini"
BACKUP = "backup"
START = datetime(2026, 10, 4, 9, 12, tzinfo=UTC).timestamp()
TICK_S = 0.02
POLL_S = 0.01  # between two tries of wait_until and wait_for
JSON_HEADERS = {"Content-Type": "application/json"}
A = TypeVar("A", bound=pykka.Actor)


def answer(prompt: str) -> str:
    """The content the scripted upstream answers `prompt` with."""
    return f"re: {prompt}"


def text_of(content: Any) -> str:
    """A chat message's text: its string, or its text parts joined (a translated
    Responses record's input items arrive as parts)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


class Upstream:
    """A FunctionTransport handler that records every call it gets."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.pause = threading.Event()
        self.outage = True
        self.delay = 0.0
        self.usage: dict[str, Any] = {"prompt_tokens": 3, "completion_tokens": 2}  # per reply
        self.calls: list[tuple[str, str]] = []  # (alias, prompt), in arrival order
        self.active: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()

    async def __call__(self, model: ModelConfig, endpoint: str, payload: bytes) -> Reply:
        prompt = text_of(json.loads(payload)["messages"][-1]["content"])
        self.calls.append((model.alias, prompt))
        self.active[model.alias] += 1
        self.peak[model.alias] = max(self.peak[model.alias], self.active[model.alias])
        try:
            return await self._reply(model.alias, prompt)
        finally:
            self.active[model.alias] -= 1

    async def _reply(self, alias: str, prompt: str) -> Reply:
        for token, event in (("BLOCK", self.gate), ("PAUSE", self.pause)):
            while token in prompt and not event.is_set():
                await asyncio.sleep(0.005)
        if self.delay:
            await asyncio.sleep(self.delay)
        if "FLAKY" in prompt and self.count(prompt) <= 2:
            return status(503, "flaky")
        if "NOPRIMARY" in prompt and alias == PRIMARY:
            return status(503, "primary is down")
        if "OUTAGE" in prompt and self.outage:
            return status(503, "outage")
        if "REFUSE" in prompt:
            return status(400, "this row is refused")
        if "GARBAGE" in prompt:
            return Reply(200, JSON_HEADERS, b"<html>not json</html>")
        body = {"choices": [{"message": {"role": "assistant", "content": answer(prompt)}}],
                "usage": self.usage}
        return Reply(200, JSON_HEADERS, json.dumps(body).encode())

    def count(self, prompt: str) -> int:
        return sum(1 for _, p in list(self.calls) if p == prompt)

    def prompts(self) -> list[str]:
        return [p for _, p in list(self.calls)]

    def seen(self, fragment: str) -> bool:
        return any(fragment in p for p in self.prompts())

    def in_flight(self) -> int:
        return sum(self.active.values())


def status(code: int, message: str) -> Reply:
    return Reply(code, JSON_HEADERS, json.dumps({"error": {"message": message}}).encode())


class FakeClock:
    """Real time shifted to START: it moves on its own, and `advance` jumps it."""

    def __init__(self, start: float = START) -> None:
        self.offset = start - time.time()

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> float:
        self.offset += seconds
        return self()


def public_resolver(host: str) -> list[str]:
    """Every host name resolves to one public address: no DNS in tests."""
    return ["93.184.216.34"]


def make_config(data_dir: Path, **sections: dict[str, Any]) -> Config:
    """A config on `data_dir` with tiny backoffs; `sections` override keys per table."""
    raw: dict[str, Any] = {
        "server": {"data_dir": str(data_dir)},
        "gateway": {"batch_concurrency": 4, "max_running_jobs": 2},
        "retry": {"backoff_base_s": 0.001, "backoff_cap_s": 0.01, "retry_after_cap_s": 0.01},
        "models": [
            {"alias": PRIMARY, "base_url": "http://upstream.test/v1", "fallbacks": [BACKUP]},
            {"alias": BACKUP, "base_url": "http://backup.test/v1"},
        ],
    }
    for name, table in sections.items():
        raw[name] = table if name == "models" else {**raw.get(name, {}), **table}
    return parse(raw, environ={})


def make_daemon(config: Config, upstream: Upstream, clock: FakeClock) -> Daemon:
    return Daemon(config, clock=clock, transport=FunctionTransport(upstream),
                  resolve=public_resolver, tick_interval=TICK_S)


def stop_daemon(daemon: Daemon, upstream: Upstream) -> None:
    """Teardown: let what is in flight finish, then stop. A stop that leaves an actor's
    thread running fails the test with the threads' names: that is a shutdown hang
    (`relayd` would never exit; see tests/actors/test_shutdown.py). The stuck threads
    are freed first, so the rest of the session still runs and exits."""
    upstream.gate.set()
    upstream.pause.set()
    upstream.outage = False
    busy = ("running", "cancelling")
    with contextlib.suppress(TimeoutError):  # a long job: stop it mid-way
        wait_until(lambda: not any(daemon.repo.jobs_in(s) for s in busy), timeout=1)
    with contextlib.suppress(pykka.Timeout):  # a hang shows in the threads left
        daemon.stop(budget=3.0)
    stuck = actor_threads_left()
    if stuck:
        _free_stuck_actors()
        pytest.fail(f"Daemon.stop left actor threads running: {', '.join(stuck)}")


def actor_threads_left(*, timeout: float = 1.0) -> list[str]:
    """The actor threads still alive `timeout` s after a stop (pykka names them
    `<ActorClass>-<n>`; daemon threads, which cannot hold the process, are left out)."""
    with contextlib.suppress(TimeoutError):
        wait_until(lambda: not _actor_threads(), timeout=timeout)
    return _actor_threads()


def actor_state(proxy: pykka.ActorProxy[A]) -> pykka.ActorProxy[A]:
    """`proxy` as pykka's own proxy, which reads any of the actor's attributes (as a
    future): tests look at state the typed proxies do not declare."""
    return proxy


def _actor_threads() -> list[str]:
    classes: set[str] = set()
    todo: list[type] = [pykka.ThreadingActor]
    while todo:  # every actor class defined so far
        subclasses: list[type] = todo.pop().__subclasses__()
        classes.update(c.__name__ for c in subclasses)
        todo.extend(subclasses)
    return sorted(t.name for t in threading.enumerate()
                  if t.is_alive() and not t.daemon and t.name.rpartition("-")[0] in classes)


def _free_stuck_actors() -> None:
    """Cancel every pending concurrent future (what a stranded row worker waits on for
    the stopped I/O loop), then stop the actors again."""
    for stranded in gc.get_objects():
        if isinstance(stranded, concurrent.futures.Future) and not stranded.done():
            stranded.cancel()
    with contextlib.suppress(pykka.Timeout):
        pykka.ActorRegistry.stop_all(block=True, timeout=2)


def wait_until(predicate: Callable[[], Any], *, timeout: float = 5.0,
               what: str = "condition") -> Any:
    """Poll `predicate` from a plain thread until it is truthy; return its value
    (`daemon.testing.wait_until` with this suite's defaults; TimeoutError if not)."""
    return testing.wait_until(predicate, timeout=timeout, every=POLL_S, message=what)


async def wait_for(predicate: Callable[[], Any], *, timeout: float = 5.0,
                   what: str = "condition") -> Any:
    """Poll `predicate` (sync or async) on the event loop until it is truthy
    (`daemon.testing.wait_until_async` with this suite's defaults)."""
    return await testing.wait_until_async(predicate, timeout=timeout, every=POLL_S,
                                          message=what)
