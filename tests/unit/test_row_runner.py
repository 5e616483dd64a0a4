"""The I/O-loop side of a row worker: outcomes go back to the supervisor in groups."""

from __future__ import annotations

import asyncio

import pytest

from daemon.actors.worker import REPORT_S, Done, RowRunner
from daemon.domain.jobs import WORKFLOW_ROW, RowWork
from daemon.domain.outcome import RowOutcome
from daemon.executors import Executors, Lane
from daemon.metering import MeteredExecutor, Meters


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


def runner(report_rows: int, report_s: float = REPORT_S
           ) -> tuple[RowRunner, Gated, list[list[int]]]:
    executor = Gated()
    reports: list[list[int]] = []

    def report(done: Done) -> None:
        reports.append([row_id for row_id, _ in done])

    rows = RowRunner(Executors(chat=executor), Lane(8), report=report,
                     report_rows=report_rows, report_s=report_s)
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


async def test_a_partial_group_waits_for_company() -> None:
    rows, executor, reports = runner(report_rows=3, report_s=3600)
    await rows.start([work(i) for i in (1, 2, 3)])
    executor.finish(1)
    await turns()
    assert reports == []  # two rows still run: wait for them
    executor.finish(2)
    await turns()
    assert reports == []


async def test_a_partial_group_waits_only_a_moment() -> None:
    rows, executor, reports = runner(report_rows=3, report_s=0.001)
    await rows.start([work(i) for i in (1, 2, 3)])
    executor.finish(1, 2)
    await asyncio.sleep(0.05)  # fifty times the wait: the timer has fired
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
    rows, executor, reports = runner(report_rows=8, report_s=3600)  # its timer never fires
    await rows.start([work(i) for i in (1, 2, 3)])
    executor.finish(1)
    await turns()
    assert rows.timer is not None  # row 1 waits for company, its send due in an hour
    assert [row_id for row_id, _ in await rows.drain()] == [1]  # not reported: handed back
    assert rows.timer is None  # that send is off: row 1 is never reported as well
    executor.finish(2)
    await turns()
    assert reports == [[2]]  # a shutdown does not wait for company
    executor.finish(3)
    await turns()
    assert reports == [[2], [3]]  # and nothing is reported twice


async def test_a_drained_lane_starts_no_request_and_leaves_the_row_pending() -> None:
    sent: list[int] = []

    class Upstream:
        async def call(self, alias: str, endpoint: str, body: object, **_: object) -> RowOutcome:
            sent.append(1)
            return RowOutcome(ok=True, model=alias)

    from daemon.executors.chat import ChatExecutor

    lane = Lane(1)
    lane.drain()  # shutdown: the rows waiting for a slot send nothing
    reports: list[Done] = []
    rows = RowRunner(Executors(chat=ChatExecutor(Upstream())), lane,  # type: ignore[arg-type]
                     report=reports.append)
    await rows.start([work(1)])
    await turns()
    assert sent == [] and reports == [] and rows.running == 0  # pending, not failed


async def test_a_row_whose_lease_may_be_lost_goes_back_unstored() -> None:
    """Fencing: no request starts under a lease another node may hold; the row comes
    back as `lease_lost`, which the supervisor never stores."""
    from daemon.executors.chat import ChatExecutor
    from daemon.executors.lane import LEASE_LOST

    sent: list[int] = []

    class Upstream:
        async def call(self, alias: str, endpoint: str, body: object, **_: object) -> RowOutcome:
            sent.append(1)
            return RowOutcome(ok=True, model=alias)

    reports: list[Done] = []
    lane = Lane(2, holds=lambda w: w.id != 1)
    rows = RowRunner(Executors(chat=ChatExecutor(Upstream())), lane,  # type: ignore[arg-type]
                     report=reports.append)
    await rows.start([work(1), work(2)])
    await turns()
    outcomes = dict(row for done in reports for row in done)
    assert outcomes[1].error_code == LEASE_LOST and outcomes[2].ok
    assert sent == [1]  # only row 2 went out


class Buggy:
    async def run(self, work: RowWork, lane: Lane) -> RowOutcome:
        raise KeyError("a bug")


async def test_a_bug_ends_its_row_internal_error_logged_and_counted(
        caplog: pytest.LogCaptureFixture) -> None:
    meters = Meters()
    done: Done = []
    rows = RowRunner(Executors(chat=MeteredExecutor(Buggy(), meters)), Lane(8),
                     report=done.extend)

    await rows.start([work(1)])
    await turns()

    ((row_id, outcome),) = done
    assert (row_id, outcome.error_code) == (1, "internal_error")
    assert outcome.error == "internal_error: KeyError: 'a bug'"
    (logged,) = [r for r in caplog.records if r.name == "relay.worker"]
    assert logged.exc_info is not None and logged.exc_info[0] is KeyError  # the traceback
    assert meters.registry.get_sample_value("relay_internal_errors_total") == 1


async def test_plain_rows_past_the_slots_wait_in_order_and_take_no_task_of_their_own() -> None:
    executor = Gated()
    reports: list[Done] = []
    rows = RowRunner(Executors(chat=executor), Lane(2), report=reports.append)
    await rows.start([work(i) for i in (1, 2, 3, 4, 5)])
    await turns()
    assert sorted(executor.gates) == [1, 2]  # one row a slot runs
    assert (len(rows.tasks), rows.waiting) == (2, 3)
    executor.finish(1)
    await turns()
    assert sorted(executor.gates) == [1, 2, 3]  # the freed slot's task took the next
    assert (len(rows.tasks), rows.waiting) == (2, 2)
    executor.finish(2, 3, 4, 5)
    await turns(10)
    assert list(executor.gates) == [1, 2, 3, 4, 5]  # started in their order
    assert sorted(row_id for done in reports for row_id, _ in done) == [1, 2, 3, 4, 5]
    assert (len(rows.tasks), rows.takers, rows.running) == (0, 0, 0)


async def test_a_workflow_record_runs_at_once_beside_plain_rows_waiting() -> None:
    executor = Gated()
    rows = RowRunner(Executors(chat=executor, workflows=executor),  # type: ignore[arg-type]
                     Lane(1), report=lambda done: None)
    flow = RowWork(id=9, job_seq=1, custom_id="wf", model="m", endpoint="/v1/chat/completions",
                   body={"messages": []}, kind=WORKFLOW_ROW)
    await rows.start([work(1), work(2), flow])
    await turns()
    assert sorted(executor.gates) == [1, 9]  # row 2 waits for the slot; the workflow does not


async def test_shutdown_leaves_the_queued_plain_rows_pending() -> None:
    executor = Gated()
    reports: list[Done] = []
    rows = RowRunner(Executors(chat=executor), Lane(1), report=reports.append)
    await rows.start([work(i) for i in (1, 2, 3)])
    await turns()
    for task in list(rows.tasks):  # what the I/O loop's stop does
        task.cancel()
    await turns()
    assert sorted(executor.gates) == [1]  # rows 2 and 3 never started
    assert reports == [] and not rows.tasks and rows.takers == 0
