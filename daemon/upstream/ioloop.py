"""The dedicated event loop that every upstream call runs on.

Row workers are threads; they `submit` coroutines here and wait on the returned
`concurrent.futures.Future`, so one pooled aiohttp session serves them all. The
loop lives on a daemon thread named "relay-io"; `stop` cancels what is still
running, runs the registered cleanups (closing the session) and joins the thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
Cleanup = Callable[[], Awaitable[object]]


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop where it is installed (it roughly halves the CPU an upstream call costs),
    else asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class IOLoop:
    """An asyncio loop on its own thread, fed from other threads."""

    def __init__(self, *, name: str = "relay-io") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._cleanups: list[Cleanup] = []
        self._closing = False
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._lock = threading.Lock()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("IOLoop already started")
        self._closing = False
        self._loop = new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name=self._name, daemon=True
        )
        self._thread.start()
        ready.wait()

    def alive(self) -> bool:
        """Whether the loop's thread runs (started and not yet stopped)."""
        return self._thread is not None and self._thread.is_alive()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the loop; safe from any thread."""
        with self._lock:
            if self._loop is None or self._closing:
                coro.close()  # never awaited; closing avoids a RuntimeWarning
                raise RuntimeError("IOLoop is not running")
            future = asyncio.run_coroutine_threadsafe(coro, self._loop)
            self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return future

    def add_cleanup(self, cleanup: Cleanup) -> None:
        """Register `await cleanup()` to run on the loop at `stop`, after tasks are cancelled."""
        self._cleanups.append(cleanup)

    def stop(self, timeout: float = 5) -> None:
        """Cancel pending tasks, run cleanups, stop the loop and join its thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if threading.current_thread() is thread:
            raise RuntimeError("IOLoop.stop() called from its own thread")
        with self._lock:
            self._closing = True
        try:
            future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            future.result(timeout)
        except Exception:
            log.exception("I/O loop shutdown did not finish cleanly")
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        for pending in list(self._pending):  # submitted but never run: free their waiters
            pending.cancel()
        self._loop = self._thread = None
        if not thread.is_alive():
            loop.close()

    def _run(self, ready: threading.Event) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(ready.set)
        self._loop.run_forever()

    async def _shutdown(self) -> None:
        await _cancel_all_but_me()
        for cleanup in self._cleanups:
            try:
                await cleanup()
            except Exception:
                log.exception("I/O loop cleanup %r failed", cleanup)
        await asyncio.get_running_loop().shutdown_asyncgens()


async def _cancel_all_but_me() -> None:
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
