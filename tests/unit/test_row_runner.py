"""The I/O-loop side of a row worker: outcomes go back to the supervisor in groups."""

from __future__ import annotations

import asyncio

from daemon.actors.worker import REPORT_S, Done, RowRunner
from daemon.domain.jobs import RowWork
from daemon.domain.outcome import RowOutcome
from daemon.executors import Executors, Lane


class Gated:
    """An executor whose rows finish when the test says: `finish(row_id)`."""

    def __init__(self) -> None:
        self.gates: dict[int, asyncio.Event] = {}

    async def run(self, work: RowWork, lane: Lane) -> RowOutcome:
        await self.gates.setdefault(work.id, asyncio.Event()).wait()
        return RowOutcome(ok=True, model=work.model)

    def finish(self, *row_ids: int) -> None:
        for row_id in row_ids:
            self.gates.setdefault(row_id, asyncio.Event()).set()


def work(row_id: int) -> RowWork:
    return RowWork(id=row_id, job_seq=1, custom_id=f"r{row_id}", model="m",
                   endpoint="/v1/chat/completions", body={"messages": []})


def runner(report_rows: int) -> tuple[RowRunner, Gated, list[list[int]]]:
    executor = Gated()
    reports: list[list[int]] = []

    def report(done: Done) -> None:
        reports.append([row_id for row_id, _ in done])

    rows = RowRunner(Executors(chat=executor), Lane(8), report=report,
                     report_rows=report_rows)
    return rows, executor, reports


async def turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_full_group_goes_at_once() -> None:
    rows, executor, reports = runner(report_rows=2)
    await rows.start([work(i) for i in (1, 2, 3)])
    executor.finish(1, 2)
    await turns()
    assert reports == [[1, 2]]


async def test_a_partial_group_waits_a_moment_for_company() -> None:
    rows, executor, reports = runner(report_rows=3)
    await rows.start([work(i) for i in (1, 2, 3)])
    executor.finish(1)
    await turns()
    assert reports == []  # two rows still run: wait for them, a little
    executor.finish(2)
    await turns()
    assert reports == []
    await asyncio.sleep(REPORT_S * 2)
    assert reports == [[1, 2]]


async def test_the_last_row_running_goes_at_once() -> None:
    rows, executor, reports = runner(report_rows=8)
    await rows.start([work(i) for i in (1, 2)])
    executor.finish(1)
    await turns()
    executor.finish(2)
    await turns()
    assert reports == [[1, 2]]  # nothing else is running: no reason to wait


async def test_a_drain_hands_back_what_waits_and_reports_the_rest_at_once() -> None:
    rows, executor, reports = runner(report_rows=8)
    await rows.start([work(i) for i in (1, 2, 3)])
    executor.finish(1)
    await turns()
    assert [row_id for row_id, _ in await rows.drain()] == [1]  # not reported: handed back
    executor.finish(2)
    await turns()
    assert reports == [[2]]  # a shutdown does not wait for company
    await asyncio.sleep(REPORT_S * 2)
    assert reports == [[2]]  # and nothing is reported twice
