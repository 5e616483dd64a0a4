"""Stopping the I/O loop under a row worker: a row that reaches the worker while the
loop is shutting down must leave the worker free (the row stays pending), never hang
it. A hung worker is a non-daemon thread: `relayd` would never exit."""

from __future__ import annotations

import time
from pathlib import Path

import pykka
import pytest

from daemon.actors.worker import RowWorker
from daemon.config import RetryConfig
from daemon.domain.jobs import RowWork
from daemon.executors import ChatExecutor, Executors, Lane
from daemon.upstream.ioloop import IOLoop
from daemon.upstream.router import Router
from daemon.upstream.transport import FunctionTransport
from tests.actors.harness import PRIMARY, Upstream, make_config


class Supervisor(pykka.ThreadingActor):
    def __init__(self) -> None:
        super().__init__()
        self.done: list[int] = []

    def rows_done(self, done: list[tuple[int, object]]) -> None:
        self.done.extend(row_id for row_id, _ in done)


class Worker(RowWorker):
    use_daemon_thread = True  # if it hangs, it must not hold the test process


def test_a_row_reaching_a_stopping_io_loop_does_not_hang_the_worker(tmp_path: Path,
                                                                    upstream: Upstream) -> None:
    config = make_config(tmp_path)
    io_loop = IOLoop(name="test-io")
    io_loop.start()
    router = Router(config.models, RetryConfig(), transport=FunctionTransport(upstream))
    supervisor = Supervisor.start().proxy()
    worker = Worker.start(job_seq=1, executors=Executors(chat=ChatExecutor(router)),
                          io_loop=io_loop, supervisor=supervisor, lane=Lane(4)).proxy()
    work = RowWork(id=1, job_seq=1, custom_id="r-1", model=PRIMARY,
                   endpoint="/v1/chat/completions",
                   body={"messages": [{"role": "user", "content": "slow BLOCK"}]})

    async def row_arrives_mid_shutdown() -> None:
        # Runs on the loop after its tasks were cancelled, as a cleanup: a run_rows told
        # just before the supervisors drained is taken up by its worker right now.
        worker.run_rows([work])
        time.sleep(0.1)  # the worker submits its call to the loop meanwhile

    io_loop.add_cleanup(row_arrives_mid_shutdown)
    io_loop.stop(timeout=1)
    try:
        try:
            worker.actor_ref.stop(block=True, timeout=1)
        except pykka.Timeout:
            pytest.fail("the row worker is stuck waiting on a call the stopped I/O loop "
                        "will never run")
        assert supervisor.done.get(timeout=2) == []  # the row stays pending for next start
    finally:
        pykka.ActorRegistry.unregister(worker.actor_ref)
        supervisor.actor_ref.stop()
