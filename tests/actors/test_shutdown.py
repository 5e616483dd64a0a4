"""Stopping the I/O loop under a row worker: a row that reaches the worker while the
loop is shutting down must leave the supervisor's thread free (the row stays pending,
unreported), never hang it: a hung supervisor is a non-daemon thread, and `relayd`
would never exit."""

from __future__ import annotations

import threading
from pathlib import Path

from daemon.actors.worker import Done, RowWorker
from daemon.config import RetryConfig
from daemon.domain.jobs import RowWork
from daemon.executors import ChatExecutor, Executors, Lane
from daemon.upstream.ioloop import IOLoop
from daemon.upstream.router import Router
from daemon.upstream.transport import FunctionTransport
from tests.actors.harness import PRIMARY, Upstream, make_config


def test_a_row_reaching_a_stopping_io_loop_stays_pending_and_blocks_nothing(
        tmp_path: Path, upstream: Upstream) -> None:
    config = make_config(tmp_path)
    io_loop = IOLoop(name="test-io")
    io_loop.start()
    router = Router(config.models, RetryConfig(), transport=FunctionTransport(upstream))
    reported: list[Done] = []
    worker = RowWorker(job_seq=1, executors=Executors(chat=ChatExecutor(router)),
                       io_loop=io_loop, report=reported.append, lane=Lane(4))
    work = RowWork(id=1, job_seq=1, custom_id="r-1", model=PRIMARY,
                   endpoint="/v1/chat/completions",
                   body={"messages": [{"role": "user", "content": "slow BLOCK"}]})
    handed: list[Done] = []

    def supervisor_mid_shutdown() -> None:
        # A supervisor's thread that hands a group over, then drains, just as the
        # loop has cancelled its tasks and runs its cleanups.
        worker.run_rows([work])
        handed.append(worker.drain())
        worker.release()

    async def row_arrives_mid_shutdown() -> None:
        thread = threading.Thread(target=supervisor_mid_shutdown, daemon=True)
        thread.start()
        thread.join(timeout=2)  # blocks the loop: what the thread submits cannot run
        assert not thread.is_alive(), "the supervisor's thread hung on the stopping loop"

    io_loop.add_cleanup(row_arrives_mid_shutdown)
    io_loop.stop(timeout=3)
    assert handed == [[]]
    assert reported == []  # the row stays pending for the next start
    assert upstream.prompts() == []
