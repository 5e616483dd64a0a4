"""Tool rounds in the store: saved in groups, replaced when the whole round follows its
model turn, handed back with pending rows, and read for a row's transcript."""

from __future__ import annotations

from daemon.domain.jobs import RowDraft
from daemon.domain.outcome import Turn, Usage
from daemon.store.interface import Store
from tests.store.conftest import MakeJob, MakeOutcome

CALL: dict[str, object] = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
RESULT: dict[str, object] = {"role": "tool", "tool_call_id": "c1", "content": "ok"}


def turn(*messages: dict[str, object], model: str = "gpt-4o-mini") -> Turn:
    return Turn(model=model, usage=Usage(10, 5), messages=messages)


def test_rounds_are_saved_in_groups_and_read_in_order(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, rows=2)
    first, second = repo.pending_rows(job, after_id=0, limit=2)
    repo.save_rounds([(first.id, 2, turn(CALL, RESULT)), (first.id, 1, turn(CALL, RESULT)),
                      (second.id, 1, turn(CALL))])
    assert repo.rounds(first.id) == [turn(CALL, RESULT), turn(CALL, RESULT)]
    assert repo.rounds(second.id) == [turn(CALL)]
    repo.save_rounds([])  # nothing to do


def test_the_whole_round_replaces_its_model_turn(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, rows=1)
    (row,) = repo.pending_rows(job, after_id=0, limit=1)
    repo.save_rounds([(row.id, 1, turn(CALL))])
    repo.save_rounds([(row.id, 1, turn(CALL, RESULT, model="backup"))])
    assert repo.rounds(row.id) == [turn(CALL, RESULT, model="backup")]


def test_pending_rows_carry_their_stored_rounds(repo: Store, make_job: MakeJob,
                                                make_outcome: MakeOutcome) -> None:
    tools = {"openrelay": {"tool_config": {"url": "https://tools.example.com"}}}
    job = make_job(repo, rows=[RowDraft(custom_id=f"r-{i}", body={"messages": [], **tools})
                               for i in (1, 2, 3)])
    a, b, _ = repo.pending_rows(job, after_id=0, limit=3)
    repo.save_rounds([(b.id, 1, turn(CALL, RESULT)), (b.id, 2, turn(CALL))])
    repo.save_outcomes(job.seq, [(a.id, make_outcome())], now=0)
    again = repo.pending_rows(job, after_id=0, limit=10)
    assert [(w.custom_id, len(w.rounds)) for w in again] == [("r-2", 2), ("r-3", 0)]
    assert again[0].rounds[1] == turn(CALL)
    assert again[0].job_id == job.id


def test_rows_without_an_extension_ask_for_no_stored_progress(repo: Store,
                                                              make_job: MakeJob) -> None:
    job = make_job(repo, rows=1)
    (row,) = repo.pending_rows(job, after_id=0, limit=1)
    repo.save_rounds([(row.id, 1, turn(CALL))])  # not a tool row: never read back
    assert repo.pending_rows(job, after_id=0, limit=1)[0].rounds == ()


def test_a_row_by_custom_id(repo: Store, make_job: MakeJob) -> None:
    job = make_job(repo, rows=2)
    found = repo.row(job.seq, "r-2")
    assert found is not None and (found.custom_id, found.position) == ("r-2", 2)
    assert repo.row(job.seq, "r-9") is None
    other = make_job(repo, rows=2)
    assert repo.row(other.seq, "r-2") != found
