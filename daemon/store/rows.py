"""Rows: inserting them with their job, handing pending ones out, storing outcomes in
groups with the job's counters, and reading results and the dead-letter list."""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from functools import reduce
from typing import Any

from peewee import fn

from daemon.domain import codec
from daemon.domain.jobs import (
    CHECKED_ROW,
    DL_DISCARDED,
    DL_OPEN,
    DL_REDRIVEN,
    ROW_COMPLETED,
    ROW_FAILED,
    ROW_PENDING,
    TOOL_ROW,
    WORKFLOW_ROW,
    Job,
    RowDraft,
    RowRecord,
    RowWork,
    row_kind,
)
from daemon.domain.outcome import RowOutcome, Turn, Usage
from daemon.domain.usage import MAX_STORED
from daemon.store.budgets import add_spend
from daemon.store.interface import Flushed
from daemon.store.models import RoundModel, RowModel
from daemon.store.records import dumps, job_record, row_of, row_record
from daemon.store.sql import (
    ATTEMPT_COLUMNS,
    EXECUTOR_CALL_COLUMNS,
    FINISH_COUNTER,
    FINISHED_COLUMNS,
    FINISHED_ROWS,
    PENDING_ROWS,
    ROW_COLUMNS,
    ROWS_BY_POSITION,
    SAVE_ROUNDS,
    WORK_COLUMNS,
    SqlBase,
    chunks,
)
from daemon.store.workflows import workflows_of

INSERT_CHUNK = 500
ROWS_PAGE = 1_000  # rows read in one statement by `rows`


def insert_rows(store: SqlBase, job_seq: int, rows: Sequence[RowDraft], *,
                now: float, after: int = 0, numbered: bool = True) -> None:
    """A job's rows, in bulk (inside the caller's transaction), at positions after
    `after`. A row refused on the way in is finished already: its finish sequence is
    its position (`refused_last`), unless not `numbered` yet (a validating batch's
    rows: `accept_validated` numbers them, so no reader meets them before)."""
    for start in range(0, len(rows), INSERT_CHUNK):
        chunk = rows[start:start + INSERT_CHUNK]
        first = after + start + 1
        store.insert_many("row", ROW_COLUMNS, [
            (job_seq, first + i, r.custom_id, r.model, codec.dumps(r.body).decode(),
             ROW_FAILED if r.error else ROW_PENDING, r.error, r.error_code,
             now if r.error else None, 0, False, 0, 0, 0,
             first + i if r.error and numbered else None)
            for i, r in enumerate(chunk)
        ])


def refused_last(rows: Sequence[RowDraft]) -> int:
    """The job's finish counter once `rows` are in: the last position of a row refused
    on the way in (0 if none)."""
    return max((i + 1 for i, r in enumerate(rows) if r.error), default=0)


def works(store: SqlBase, job: Job,
          selected: Iterable[tuple[int, str, str | None, str, int]], *,
          epoch: int = 0) -> list[RowWork]:
    """Rows read as `(id, custom_id, model, body, lease_token)`, as work for a worker,
    in id order, leased in the node's lease `epoch`."""
    found = []
    for rid, custom_id, model, text, token in sorted(selected):
        body = codec.loads(text)
        found.append((rid, custom_id, model, body, token, row_kind(body)))
    # Only rows with an extension can have progress stored: a plain job asks nothing.
    # A checked row's repair turns are stored as rounds too.
    tools = [rid for rid, *_, kind in found if kind in (TOOL_ROW, CHECKED_ROW)]
    flows = [rid for rid, *_, kind in found if kind == WORKFLOW_ROW]
    rounds = rounds_of(store, tools) if tools else {}
    workflows = workflows_of(store, flows) if flows else {}
    return [RowWork(id=rid, job_seq=job.seq, custom_id=custom_id,
                    model=model or job.model, endpoint=job.endpoint, body=body,
                    job_id=job.id, rounds=tuple(rounds.get(rid, ())),
                    workspace_id=job.workspace_id, workflow=workflows.get(rid), kind=kind,
                    token=token, epoch=epoch)
            for rid, custom_id, model, body, token, kind in found]


def _checked(done: Sequence[tuple[int, RowOutcome]]) -> dict[str, int]:
    """The job's counts of checked answers (`output_check`) that `done` adds to, by
    column."""
    counts: dict[str, int] = {}
    for _, outcome in done:
        if outcome.validation is not None:
            column = f"outputs_{outcome.validation}"
            if column not in _OUTPUTS:  # named in SQL: only the job's own columns
                raise ValueError(f"no counter for checked answers {outcome.validation!r}")
            counts[column] = counts.get(column, 0) + 1
    return counts


_OUTPUTS = ("outputs_valid", "outputs_repaired", "outputs_invalid")
_TOTALS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens",
           "cost_nano_usd")


@functools.cache
def _add_counts(outputs: tuple[str, ...]) -> str:
    """The statement adding a group's outcomes to its job's counters (in `save_outcomes`'
    order), its totals saturating at the largest 64-bit integer: a job's token and cost
    totals stop there rather than overflow (each row's are checked on the way in,
    `domain/usage.py`, but many rows can add up past it). Raw SQL, made once per set of
    checked-answer counters: the group write is the hot path's one statement a group."""
    totals = ", ".join(f"{column} = CASE WHEN {column} > {MAX_STORED} - {{p}} THEN "
                       f"{MAX_STORED} ELSE {column} + {{p}} END" for column in _TOTALS)
    checked = "".join(f", {column} = {column} + {{p}}" for column in outputs)
    return ("UPDATE job SET completed = completed + {p}, failed = failed + {p}, "
            "dead_letter = dead_letter + {p}, dead_letter_open = dead_letter_open + {p}, "
            f"canceled = canceled + {{p}}, {totals}, finished_seq = {{p}}{checked} "
            "WHERE seq = {p}")


def _saturating(amount: int) -> tuple[int, int]:
    """A total's two parameters in `_add_counts` (it is compared, then added)."""
    amount = min(amount, MAX_STORED)
    return amount, amount


def rounds_of(store: SqlBase, row_ids: list[int]) -> dict[int, list[Turn]]:
    by_row: dict[int, list[Turn]] = {}
    query = (store.RoundModel.select().where(store.RoundModel.row.in_(row_ids))
             .order_by(store.RoundModel.row, store.RoundModel.number))
    for r in query:
        by_row.setdefault(r.row_id, []).append(_turn(r))
    return by_row


class RowQueries(SqlBase):
    """Queries over rows and their attempts."""

    def pending_rows(self, job: Job, *, after_id: int, limit: int) -> list[RowWork]:
        """The next pending rows, with the tool rounds an earlier run of them stored."""
        return works(self, job, self.fetch_all(self.sql(PENDING_ROWS),
                                               (job.seq, ROW_PENDING, after_id, limit),
                                               columns=WORK_COLUMNS))

    def save_outcomes(
        self, job_seq: int, outcomes: Sequence[tuple[int, RowOutcome]], *, now: float,
        leases: Mapping[int, int] | None = None,
    ) -> Flushed:
        """Store a group of row outcomes and bump the job's counters, in one transaction.
        A row whose outcome is already stored is skipped whole (counters, tokens, cost,
        attempts), so the job's totals always equal what its rows say; so is a row whose
        lease `{row id: token}` has moved on (fencing: its new owner's outcome wins)."""
        if not outcomes:
            return Flushed(0, 0, 0)
        with self.write():
            last = self._finish_counter(job_seq)
            done, fenced = self._still_pending(outcomes, leases)
            completed = sum(1 for _, o in done if o.ok)
            flushed = Flushed(completed, len(done) - completed,
                              sum(1 for _, o in done if not o.ok and o.dead_letter), fenced)
            self._update_rows(done, now=now, after_seq=last)
            self._insert_attempts(done)
            self._insert_executor_calls(done)
            usage = sum((o.usage for _, o in done), Usage())
            cost = sum(o.cost_nano_usd for _, o in done)
            never_ran = sum(1 for _, o in done if _never_ran(o))
            checked = _checked(done)
            totals = (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens,
                      usage.reasoning_tokens, cost)
            self.db.execute_sql(self.sql(_add_counts(tuple(checked))), (
                flushed.completed, flushed.failed, flushed.dead_letter, flushed.dead_letter,
                never_ran, *(v for total in totals for v in _saturating(total)),
                last + len(done), *checked.values(), job_seq))
            add_spend(self, job_seq, cost, now=now)  # the workspace's, for its budget
        return flushed

    def _finish_counter(self, job_seq: int) -> int:
        """The job's last finish sequence, read under its lock: writers of one job's
        outcomes take turns on it, so the sequences they give out commit in order."""
        found = self.db.execute_sql(self.sql(FINISH_COUNTER, for_update=self.FOR_UPDATE),
                                    (job_seq,)).fetchone()
        return found[0] if found is not None else 0

    def finished_rows(self, job_seq: int, *, after_seq: int, limit: int) -> list[RowRecord]:
        """Rows that finished after finish sequence `after_seq`, in finish order, without
        their requests (`body` is empty: a result shows none, and reading results while a
        job runs must cost it little). What one read sees is always a prefix of that
        order (see `_finish_counter`), so a reader paging by the last sequence it saw
        meets every row once."""
        found = self.fetch_all(self.sql(FINISHED_ROWS), (job_seq, after_seq, limit),
                               columns=FINISHED_COLUMNS)
        found.sort(key=operator.itemgetter(-1))  # by finish sequence (see `fetch_all`)
        return [finished_record(values) for values in found]

    def _still_pending(
        self, outcomes: Sequence[tuple[int, RowOutcome]], leases: Mapping[int, int] | None
    ) -> tuple[list[tuple[int, RowOutcome]], int]:
        """The outcomes to store (the first of each row still pending, under the lease
        it was run with), and how many were fenced off."""
        tokens = self.pending_tokens(list(dict(outcomes)))
        first: dict[int, RowOutcome] = {}
        fenced: set[int] = set()
        for rid, outcome in outcomes:
            if rid not in tokens:
                continue
            if leases is not None and leases.get(rid) != tokens[rid]:
                fenced.add(rid)
            else:
                first.setdefault(rid, outcome)
        return list(first.items()), len(fenced)

    def _update_rows(self, done: Sequence[tuple[int, RowOutcome]], *, now: float,
                     after_seq: int) -> None:
        self.store_outcomes([
            (ROW_COMPLETED if o.ok else ROW_FAILED, len(o.attempts),
             (o.response_text or dumps(o.response)) if o.ok else dumps(o.error_body),
             o.status_code,
             o.error, o.error_code, bool(o.dead_letter), o.model, o.usage.prompt_tokens,
             o.usage.completion_tokens, o.cost_nano_usd, now, after_seq + n, rid)
            for n, (rid, o) in enumerate(done, start=1)
        ])

    def _insert_attempts(self, done: Sequence[tuple[int, RowOutcome]]) -> None:
        self.insert_many("attempt", ATTEMPT_COLUMNS, [
            (rid, a.model, a.status_code, a.error, a.duration_ms, a.started_at, bool(a.transient))
            for rid, o in done for a in o.attempts
        ])

    def _insert_executor_calls(self, done: Sequence[tuple[int, RowOutcome]]) -> None:
        calls = [(rid, c.round, c.executor, c.status_code, c.error, c.duration_ms,
                  c.started_at) for rid, o in done for c in o.executor_calls]
        if calls:
            self.insert_many("executor_call", EXECUTOR_CALL_COLUMNS, calls)

    def save_rounds(self, rounds: Sequence[tuple[int, int, Turn]], *,
                    leases: Mapping[int, int] | None = None) -> set[int]:
        """Tool rounds `(row id, number, turn)`, many rows' at once; a round stored
        already (its model turn alone) is replaced by the whole round. Rows whose lease
        `{row id: token}` has moved on store nothing: their ids are returned."""
        if not rounds:
            return set()
        values = [(row_id, number, turn.model, turn.usage.prompt_tokens,  # encoded before
                   turn.usage.completion_tokens, json.dumps(turn.messages))  # the lock
                  for row_id, number, turn in rounds]
        with self.write():
            lost = self.fenced(leases) if leases else set()
            kept = [v for v in values if v[0] not in lost]
            if kept:
                self.db.cursor().executemany(self.sql(SAVE_ROUNDS), kept)
        return lost

    def rounds(self, row_id: int) -> list[Turn]:
        """A row's stored tool rounds, in order."""
        return rounds_of(self, [row_id]).get(row_id, [])

    def row(self, job_seq: int, custom_id: str) -> RowRecord | None:
        """One row by its `custom_id`, with its attempt log."""
        found = (self.RowModel.select()
                 .where(self.RowModel.job == job_seq, self.RowModel.custom_id == custom_id)
                 .first())
        return None if found is None else self._with_attempts([found])[0]

    def row_counts(self, job_seq: int) -> dict[str, int]:
        """Counters computed from the row table (the truth the job's counters must equal)."""
        query = (self.RowModel.select(self.RowModel.status, self.RowModel.dead_letter,
                                      fn.COUNT(self.RowModel.id).alias("n"))
                 .where(self.RowModel.job == job_seq)
                 .group_by(self.RowModel.status, self.RowModel.dead_letter))
        counts = {"completed": 0, "failed": 0, "dead_letter": 0, "pending": 0}
        for status, dead_letter, n in self.db.execute(query):
            counts[status] += n
            if dead_letter:
                counts["dead_letter"] += n
        return counts

    def rows(self, job_seq: int, *, after_position: int = 0,
             limit: int | None = None) -> Iterator[RowRecord]:
        """A job's rows in input order, read `ROWS_PAGE` at a time by position (a driver
        that fetches a whole result set, as psycopg does, never holds a million rows)."""
        left = limit
        statement = self.sql(ROWS_BY_POSITION)
        while left is None or left > 0:
            take = ROWS_PAGE if left is None else min(ROWS_PAGE, left)
            page = self.db.execute_sql(statement, (job_seq, after_position, take)).fetchall()
            for values in page:
                yield row_of(values)
            if len(page) < take:
                return
            after_position = page[-1][1]
            left = None if left is None else left - len(page)

    def dead_letter_rows(self, job_seq: int) -> list[RowRecord]:
        return self._with_attempts(
            self.RowModel.select()
            .where(self.RowModel.job == job_seq, self.RowModel.dead_letter == 1)
            .order_by(self.RowModel.position))

    def workspace_dead_letter(self, workspace_id: int, *, states: Collection[str],
                              limit: int) -> tuple[list[tuple[Job, RowRecord]], bool]:
        """Dead-lettered rows of every job of a workspace in `states` (open, redriven,
        discarded), newest job first, each job's rows in input order; the page and
        whether more follow."""
        in_state = _dead_letter_state(self)
        wanted = [in_state[s] for s in states]
        query = (self.RowModel.select()
                 .join(self.JobModel, on=(self.RowModel.job == self.JobModel.seq))
                 .where(self.JobModel.workspace == workspace_id, self.RowModel.dead_letter == 1,
                        self.JobModel.deleted_at.is_null(), reduce(operator.or_, wanted))
                 .order_by(self.RowModel.job.desc(), self.RowModel.position).limit(limit + 1))
        found = list(query)
        page = found[:limit]
        seqs = {r.job_id for r in page}
        jobs = {j.seq: job_record(j)
                for j in self.JobModel.select().where(self.JobModel.seq.in_(seqs))}
        records = self._with_attempts(page)
        return [(jobs[r.job_id], rec) for r, rec in zip(page, records, strict=True)], \
            len(found) > limit

    def _with_attempts(self, selected: Iterable[RowModel]) -> list[RowRecord]:
        """The rows with their attempt logs and executor calls (a query of each per
        chunk of rows, never one per row)."""
        rows = list(selected)
        log: dict[int, list[dict[str, Any]]] = {r.id: [] for r in rows}
        calls: dict[int, list[dict[str, Any]]] = {r.id: [] for r in rows}
        for part in chunks(list(log)):
            attempts = (self.AttemptModel.select()
                        .where(self.AttemptModel.row.in_(list(part)))
                        .order_by(self.AttemptModel.id))
            for a in attempts:
                log[a.row_id].append({
                    "model": a.model, "status_code": a.status_code, "error": a.error,
                    "duration_ms": a.duration_ms, "started_at": a.started_at,
                })
            for c in (self.ExecutorCallModel.select()
                      .where(self.ExecutorCallModel.row.in_(list(part)))
                      .order_by(self.ExecutorCallModel.id)):
                calls[c.row_id].append({
                    "round": c.round, "executor": c.executor, "status_code": c.status_code,
                    "error": c.error, "duration_ms": c.duration_ms,
                    "started_at": c.started_at,
                })
        return [row_record(r, attempt_log=tuple(log[r.id]), executor_calls=tuple(calls[r.id]))
                for r in rows]


def finished_record(values: Sequence[Any]) -> RowRecord:
    """A row read by `FINISHED_ROWS` (raw: a model per row would double the cost of
    reading results while a job runs)."""
    (rid, position, custom_id, status, attempts, response, status_code, error, error_code,
     dead_letter, answered_by, model, finished_seq) = values
    return RowRecord(id=rid, position=position, custom_id=custom_id, status=status, body={},
                     attempts=attempts, response=codec.loads(response) if response else None,
                     status_code=status_code, error=error, error_code=error_code,
                     dead_letter=bool(dead_letter), model=answered_by or model,
                     finished_seq=finished_seq)


def open_dead_letter(store: SqlBase) -> Any:
    """A dead-lettered row that still needs attention: neither re-driven nor discarded."""
    return store.RowModel.redriven_to.is_null() & store.RowModel.discarded_at.is_null()


def _dead_letter_state(store: SqlBase) -> dict[str, Any]:
    """`{state: the rows in it}` of dead-lettered rows (open, redriven, discarded)."""
    return {DL_OPEN: open_dead_letter(store),
            DL_REDRIVEN: store.RowModel.redriven_to.is_null(False),
            DL_DISCARDED: (store.RowModel.redriven_to.is_null()
                           & store.RowModel.discarded_at.is_null(False))}


def _never_ran(outcome: RowOutcome) -> bool:
    """A row the job's ending stopped before its first call went out."""
    return not outcome.ok and not outcome.attempts and outcome.never_ran


def _turn(r: RoundModel) -> Turn:
    return Turn(model=r.model, usage=Usage(r.prompt_tokens, r.completion_tokens),
                messages=tuple(json.loads(r.messages)))

