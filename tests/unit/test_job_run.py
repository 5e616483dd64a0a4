"""JobRun: the bookkeeping of one running job, driven by hand with a stepped clock."""

from __future__ import annotations

from typing import Any

from daemon.domain.jobs import RowWork
from daemon.domain.outcome import RowOutcome
from daemon.domain.run import FLUSH_ROWS, GIVE_UP_S, LINGER_S, JobRun

START = 1_700_000_000.0


def make_work(id: int, **overrides: Any) -> RowWork:
    fields: dict[str, Any] = {
        "id": id, "job_seq": 1, "custom_id": f"row-{id}", "model": "gpt-4o-mini",
        "endpoint": "/v1/chat/completions",
        "body": {"messages": [{"role": "user", "content": f"row {id}"}]},
    }
    return RowWork(**(fields | overrides))


def make_outcome(ok: bool = True, **overrides: Any) -> RowOutcome:
    fields: dict[str, Any] = ({"ok": True, "response": {"choices": []}, "status_code": 200}
                              if ok else {"ok": False, "error": "upstream_error: 500",
                                          "status_code": 500})
    return RowOutcome(**(fields | overrides))


def make_run(**overrides: Any) -> JobRun:
    fields: dict[str, Any] = {"concurrency": 2, "load_rows": 4}
    return JobRun(**(fields | overrides))


def works(*ids: int) -> list[RowWork]:
    return [make_work(i) for i in ids]


def test_new_run_wants_rows_and_is_not_done() -> None:
    run = make_run()
    assert run.wants_rows
    assert not run.exhausted
    assert not run.done_dispatching
    assert not run.done
    assert run.take_dispatch() == []


def test_full_lease_keeps_leasing() -> None:
    run = make_run(concurrency=8)
    run.add_rows(works(3, 5, 8, 9))  # exactly load_rows: more may follow
    assert not run.exhausted
    assert run.wants_rows  # 4 queued < concurrency 8


def test_short_page_means_exhausted() -> None:
    run = make_run(concurrency=8)
    run.add_rows(works(1, 2))
    assert run.exhausted
    assert not run.wants_rows


def test_empty_lease_exhausts_and_keeps_the_queue() -> None:
    run = make_run()
    run.add_rows(works(1, 2, 3, 4))
    run.add_rows([])
    assert run.exhausted
    assert [w.id for w in run.queue] == [1, 2, 3, 4]


def test_a_queue_whose_leases_may_be_lost_is_forgotten_and_leased_again() -> None:
    run = make_run(concurrency=8)
    run.add_rows(works(1, 2))  # short: exhausted
    run.forget_queue()
    assert not run.queue and run.wants_rows and not run.done
    assert run.take_dispatch() == []


def test_wants_no_rows_while_queue_covers_concurrency() -> None:
    run = make_run(concurrency=2)
    run.add_rows(works(1, 2, 3, 4))
    assert not run.wants_rows
    run.take_dispatch()  # 2 left in the queue
    assert not run.wants_rows
    run.take_dispatch()  # nothing more fits while 2 are in flight
    assert len(run.queue) == 2


def test_take_dispatch_respects_concurrency() -> None:
    run = make_run(concurrency=2)
    run.add_rows(works(1, 2, 3, 4))
    first = run.take_dispatch()
    assert [w.id for w in first] == [1, 2]
    assert run.in_flight == {1, 2}
    assert run.take_dispatch() == []
    assert run.record(1, make_outcome(), now=START)
    assert [w.id for w in run.take_dispatch()] == [3]
    assert run.in_flight == {2, 3}


def test_rows_ahead_wait_beyond_the_concurrency() -> None:
    run = make_run(concurrency=2, ahead=2)
    run.add_rows(works(1, 2, 3, 4))
    assert [w.id for w in run.take_dispatch()] == [1, 2, 3, 4]  # two on the wire, two waiting
    assert run.take_dispatch() == []
    run.add_rows(works(5))
    assert run.take_dispatch() == []
    run.record(1, make_outcome(), now=START)
    assert [w.id for w in run.take_dispatch()] == [5]


def test_record_ignores_rows_not_in_flight() -> None:
    run = make_run()
    run.add_rows(works(1, 2))
    run.take_dispatch()
    assert not run.record(99, make_outcome(), now=START)
    assert run.record(1, make_outcome(), now=START)
    assert not run.record(1, make_outcome(), now=START)  # a second report of the same row
    assert [rid for rid, _ in run.buffer] == [1]


def test_should_flush_needs_something_buffered() -> None:
    run = make_run()
    assert not run.should_flush(START + 100)


def test_a_small_group_waits_for_company_or_its_linger() -> None:
    run = make_run(concurrency=4)
    run.add_rows(works(1, 2, 3, 4))
    run.take_dispatch()
    run.record(1, make_outcome(), now=START)
    assert not run.should_flush(START)  # three more rows are in flight
    assert not run.should_flush(START + LINGER_S / 2)
    assert run.should_flush(START + 2 * LINGER_S)  # the oldest waited long enough


def test_a_full_group_is_written_at_once() -> None:
    run = make_run(concurrency=4)
    run.add_rows(works(1, 2, 3, 4, 5, 6))
    run.take_dispatch()
    for rid in (1, 2, 3, 4):
        assert not run.should_flush(START)
        run.record(rid, make_outcome(), now=START)
    assert run.flush_rows == 4 and run.should_flush(START)
    assert make_run(concurrency=500).flush_rows == FLUSH_ROWS


def test_the_last_rows_in_flight_are_written_at_once() -> None:
    run = make_run(concurrency=4)
    run.add_rows(works(1, 2))
    run.take_dispatch()
    run.record(1, make_outcome(), now=START)
    assert not run.should_flush(START)
    run.record(2, make_outcome(), now=START)
    assert run.should_flush(START)  # nothing left in flight to wait for


def test_a_stopping_run_writes_what_it_has() -> None:
    run = make_run(concurrency=4)
    run.add_rows(works(1, 2, 3))
    run.take_dispatch()
    run.record(1, make_outcome(), now=START)
    run.stop()
    assert run.should_flush(START)


def test_one_write_at_a_time_carries_what_finished_meanwhile() -> None:
    run = make_run(concurrency=4)
    run.add_rows(works(1, 2, 3, 4))
    run.take_dispatch()
    run.record(1, make_outcome(), now=START)
    assert [rid for rid, _ in run.take_flush()] == [1]
    run.record(2, make_outcome(), now=START)
    run.record(3, make_outcome(), now=START)
    assert not run.should_flush(START + 1)  # the write of row 1 is under way
    run.stored(ok=True, now=START + 1)
    assert run.should_flush(START + 1)
    assert [rid for rid, _ in run.take_flush()] == [2, 3]


def test_a_group_is_bounded() -> None:
    run = make_run(concurrency=4, group_rows=2)
    run.add_rows(works(1, 2, 3, 4))
    run.take_dispatch()
    for rid in (1, 2, 3):
        run.record(rid, make_outcome(), now=START)
    assert [rid for rid, _ in run.take_flush()] == [1, 2]
    run.stored(ok=True, now=START)
    assert [rid for rid, _ in run.take_flush()] == [3]


def test_a_failed_write_goes_back_first_and_waits_with_backoff() -> None:
    run = make_run(concurrency=4)
    run.add_rows(works(1, 2, 3, 4))
    run.take_dispatch()
    run.record(1, make_outcome(), now=START)
    run.take_flush()
    run.record(2, make_outcome(), now=START)
    run.stored(ok=False, now=START)
    assert [rid for rid, _ in run.buffer] == [1, 2]
    assert not run.should_flush(START + 0.4)
    assert run.should_flush(START + 0.5)
    run.take_flush()
    run.stored(ok=False, now=START + 1)
    assert not run.should_flush(START + 1.9)  # the wait doubles
    assert run.should_flush(START + 2)
    run.take_flush()
    run.stored(ok=True, now=START + 2)
    assert run.buffer == [] and run.write_failures == 0
    run.record(3, make_outcome(), now=START)
    assert run.should_flush(START + 2)  # success clears the backoff


def test_nothing_starts_while_writes_fail() -> None:
    run = make_run(concurrency=1)
    run.add_rows(works(1, 2))
    assert [w.id for w in run.take_dispatch()] == [1]
    run.record(1, make_outcome(), now=START)
    run.take_flush()
    run.stored(ok=False, now=START)
    assert run.take_dispatch() == []
    run.take_flush()
    run.stored(ok=True, now=START + 1)
    assert [w.id for w in run.take_dispatch()] == [2]


def test_backoff_is_capped() -> None:
    run = make_run(concurrency=1)
    run.add_rows(works(1))
    run.take_dispatch()
    run.record(1, make_outcome(), now=START)
    for _ in range(20):
        run.take_flush()
        run.stored(ok=False, now=START)
    assert run.retry_at == START + 5


def test_take_flush_hands_over_the_buffer_in_order() -> None:
    run = make_run(concurrency=3)
    run.add_rows(works(1, 2, 3))
    run.take_dispatch()
    bad = make_outcome(ok=False)
    run.record(3, bad, now=START)
    run.record(1, make_outcome(), now=START)
    batch = run.take_flush()
    assert [rid for rid, _ in batch] == [3, 1]
    assert batch[0][1] is bad
    assert run.buffer == []
    assert run.writing == batch


def test_not_done_while_a_write_is_under_way() -> None:
    run = make_run(concurrency=1)
    run.add_rows(works(1))
    run.take_dispatch()
    run.record(1, make_outcome(), now=START)
    run.take_flush()
    assert run.done_dispatching and not run.done
    run.stored(ok=True, now=START)
    assert run.done


def test_stop_clears_queue_and_stops_dispatch() -> None:
    run = make_run(concurrency=2)
    run.add_rows(works(1, 2, 3, 4))
    run.take_dispatch()
    run.stop()
    assert run.stopping
    assert len(run.queue) == 0
    assert not run.wants_rows
    assert run.take_dispatch() == []
    assert not run.done_dispatching  # rows 1 and 2 are still in flight
    assert run.record(1, make_outcome(), now=START)
    assert run.record(2, make_outcome(), now=START)
    assert run.done_dispatching
    assert not run.done  # their outcomes are not stored yet
    run.take_flush()
    run.stored(ok=True, now=START)
    assert run.done


def test_stop_before_anything_ran_is_done() -> None:
    run = make_run()
    run.add_rows(works(1, 2, 3, 4))
    run.stop()
    assert run.done_dispatching
    assert run.done


def test_whole_run_to_done() -> None:
    run = make_run(concurrency=2, load_rows=4)
    run.add_rows(works(1, 2, 3, 4))
    now = START
    stored: list[int] = []
    leases = [works(5), []]
    while not run.done:
        if run.wants_rows:
            run.add_rows(leases.pop(0))
        for work in run.take_dispatch():
            assert len(run.in_flight) <= 2
            run.record(work.id, make_outcome(), now=START)
        now += 0.25
        if run.should_flush(now):
            stored += [rid for rid, _ in run.take_flush()]
            run.stored(ok=True, now=now)
    assert sorted(stored) == [1, 2, 3, 4, 5]
    assert run.exhausted
    assert not run.queue and not run.in_flight


def test_not_done_dispatching_while_rows_are_queued() -> None:
    run = make_run(concurrency=1)
    run.add_rows(works(1, 2))
    run.take_dispatch()
    run.record(1, make_outcome(), now=START)
    assert run.exhausted
    assert not run.done_dispatching  # row 2 is still queued
    assert not run.done


def test_each_outcome_is_written_under_the_lease_its_row_ran_with() -> None:
    run = make_run()
    run.add_rows([make_work(1, token=3), make_work(2, token=8)])
    run.take_dispatch()
    run.record(1, make_outcome(), now=START)
    run.record(2, make_outcome(), now=START)
    batch = run.take_flush()
    assert run.leases(batch) == {1: 3, 2: 8}
    run.stored(ok=True, now=START)
    assert run.tokens == {}  # stored: nothing more is kept of them


def test_a_row_given_up_unstored_is_leased_again() -> None:
    run = make_run()
    run.add_rows(works(1, 2))  # short: exhausted
    run.take_dispatch()
    run.drop(1)  # its lease may be another node's now
    assert 1 not in run.in_flight and not run.exhausted and run.wants_rows
    run.record(1, make_outcome(), now=START)  # a late outcome of it is ignored
    assert run.buffer == []


def test_rows_held_are_those_queued_in_flight_or_waiting_to_be_stored() -> None:
    run = make_run(concurrency=1, load_rows=8)
    run.add_rows(works(1, 2, 3, 4))
    run.take_dispatch()  # 1 in flight, the rest queued
    run.record(1, make_outcome(), now=START)
    assert run.held == {1, 2, 3, 4}  # 1's outcome is not stored yet
    run.take_flush()
    assert 1 in run.held  # nor while its write is under way
    run.stored(ok=True, now=START)
    assert run.held == {2, 3, 4}


def failing_after_cancel(run: JobRun, *, drain: bool = False) -> None:
    """Two rows finished, their write failed, then the job was cancelled (or, with
    `drain`, the daemon began to shut down)."""
    run.add_rows(works(1, 2))
    run.take_dispatch()
    run.record(1, make_outcome(), now=START)
    run.record(2, make_outcome(), now=START)
    run.take_flush()
    run.stored(ok=False, now=START)
    run.stop() if drain else run.end_early(START + 1)


def test_an_ending_gives_up_on_outcomes_the_store_keeps_refusing() -> None:
    run = make_run()
    failing_after_cancel(run)
    assert run.give_up(START + 1 + GIVE_UP_S - 0.01) == []  # still trying
    assert not run.done
    dropped = run.give_up(START + 1 + GIVE_UP_S)
    assert [row_id for row_id, _ in dropped] == [1, 2]
    assert run.done and run.buffer == []  # the ending marks rows 1 and 2 as never run


def test_a_second_ending_does_not_move_the_deadline() -> None:
    run = make_run()
    failing_after_cancel(run)
    run.end_early(START + 4)  # an expiry after the cancel
    assert len(run.give_up(START + 1 + GIVE_UP_S)) == 2


def test_no_giving_up_while_a_write_is_under_way_or_after_one_succeeded() -> None:
    run = make_run()
    failing_after_cancel(run)
    later = START + 1 + GIVE_UP_S
    run.take_flush()  # the retry is on the wire: it may still store them
    assert run.give_up(later) == []
    run.stored(ok=True, now=later)
    assert run.give_up(later + 1) == [] and run.done


def test_a_drain_never_gives_up_its_outcomes() -> None:
    """Shutdown keeps them for the next start (the rows stay pending either way)."""
    run = make_run()
    failing_after_cancel(run, drain=True)
    assert run.give_up(START + 3600) == []
    assert len(run.buffer) == 2
