"""RowWorker: runs one row at a time through the router and reports the outcome.

The upstream call itself (retries, backoff, fallbacks) is a coroutine on the
shared I/O loop; the worker waits on it and hands the outcome to its supervisor.
A worker never dies of a row: anything unexpected becomes that row's error.
"""

from __future__ import annotations

import concurrent.futures
import logging
from typing import Any

import pykka

from daemon.domain.jobs import RowWork
from daemon.domain.outcome import RowOutcome
from daemon.upstream.ioloop import IOLoop
from daemon.upstream.router import Router

log = logging.getLogger("relay.worker")


class RowWorker(pykka.ThreadingActor):
    def __init__(self, *, index: int, router: Router, io_loop: IOLoop, supervisor: Any) -> None:
        super().__init__()
        self.index = index
        self.router = router
        self.io_loop = io_loop
        self.supervisor = supervisor

    def run_row(self, work: RowWork) -> None:
        outcome = self._call(work)
        if outcome is None:
            return  # the I/O loop is shutting down: the row stays pending
        try:
            self.supervisor.row_done(self.index, work.id, outcome)
        except pykka.ActorDeadError:
            log.debug("supervisor of row %s already stopped", work.id)

    def _call(self, work: RowWork) -> RowOutcome | None:
        try:
            return self.io_loop.run(self.router.call(work.model, work.endpoint, work.body))
        except (concurrent.futures.CancelledError, RuntimeError) as exc:
            if self.io_loop.closing:
                return None
            return _internal_error(exc)
        except Exception as exc:
            log.exception("row %s: unexpected error", work.id)
            return _internal_error(exc)


def _internal_error(exc: BaseException) -> RowOutcome:
    return RowOutcome(ok=False, error=f"internal_error: {type(exc).__name__}: {exc}",
                      error_code="internal_error")
