"""Checked structured outputs (`domain/output_check.py`): a record whose answer must be
JSON, or meet a JSON Schema, and the repair loop that asks the model again.

Call the model; check the answer's text. Valid: the record ends with that answer and
`openrelay: {repairs, valid: true, ...}`. Invalid with repairs left
(`openrelay.validation.max_repairs`): store the repair turn (the assistant's answer as
given and the user message stating the errors) as a round of the row (table `round`,
as a tool round is stored), then call the model again with the conversation so far.
Invalid with none left: the record fails `invalid_output` (not dead-lettered: the
model answered), billed for every call, its last answer kept as the error's body.

A restart resumes after the last stored repair turn: the stored invalid answers are
not asked for again (`work.rounds`). Each stored turn holds the answer as the model gave
it, so the errors of the history are the check run again over it (the check is pure).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any

from daemon.domain.extensions import EXTENSIONS
from daemon.domain.jobs import RowWork
from daemon.domain.outcome import Attempt, RowOutcome, Turn, Usage
from daemon.domain.output_check import (
    INVALID,
    INVALID_OUTPUT,
    REPAIRED,
    VALID,
    OutputCheck,
    OutputCheckError,
    Problem,
    answer_text,
    error_summary,
    output_check,
    problems,
    repair_turn,
    with_turns,
)
from daemon.executors.group_commit import GroupCommit
from daemon.executors.lane import STOPPED, Halted, Lane, not_started
from daemon.upstream.router import Router

STORE_GRACE_S = 1.0  # how long a stopped job's repair write may still take


@dataclass
class Repairs:
    """What a checked row has done so far: every model call that answered, and the
    stored repair turns (each an invalid answer and the message that answered it)."""

    turns: list[Turn] = field(default_factory=list)
    added: list[dict[str, Any]] = field(default_factory=list)  # the repair messages
    attempts: list[Attempt] = field(default_factory=list)
    model: str | None = None

    @classmethod
    def resumed(cls, work: RowWork) -> Repairs:
        return cls(turns=list(work.rounds),
                   added=[m for turn in work.rounds for m in turn.messages],
                   model=work.rounds[-1].model if work.rounds else None)

    @property
    def done(self) -> int:
        return len(self.turns)

    @property
    def usage(self) -> Usage:
        return sum((t.usage for t in self.turns), Usage())


def history(check: OutputCheck, turns: list[Turn]) -> list[dict[str, Any]]:
    """Each repaired call's errors: the check run again over its stored answer."""
    out = []
    for number, turn in enumerate(turns, start=1):
        answer = turn.messages[0].get("content") if turn.messages else None
        found = problems(check, answer if isinstance(answer, str) else None)
        out.append({"call": number, "errors": [p.line() for p in found]})
    return out


class ValidatedExecutor:
    def __init__(self, router: Router, repairs: GroupCommit[tuple[int, int, Turn]]) -> None:
        self.router = router
        self.repairs = repairs

    async def run(self, work: RowWork, lane: Lane) -> RowOutcome:
        try:
            check = output_check(work.body)
        except OutputCheckError as exc:  # refused at submit; a row stored before that rule
            return RowOutcome(ok=False, error=exc.message, error_code=exc.code)
        if check is None:  # cannot happen for a row of this kind; run it plainly
            async with lane.slots:
                if lane.stopping:
                    return not_started()
                lane.going(work)
                return await self.router.call(work.model, work.endpoint, work.body,
                                              fence=lane.fencer(work))
        done = Repairs.resumed(work)
        try:
            return await self._loop(work, lane, check, done)
        except Halted:
            return _stopped(done)

    async def _loop(self, work: RowWork, lane: Lane, check: OutputCheck,
                    done: Repairs) -> RowOutcome:
        while True:
            async with lane.slots:
                if lane.stopping:
                    return _stopped(done) if done.turns else not_started()
                lane.going(work)  # a drain: the row resumes from its stored repairs
                answer = await self.router.call(
                    work.model, work.endpoint, with_turns(work.endpoint, work.body, done.added),
                    resume_at=done.model, fence=lane.fencer(work))
            done.attempts.extend(answer.attempts)
            if not answer.ok:
                return _failed(answer, done)
            assert answer.response is not None and answer.model is not None
            done.model = answer.model
            turn = Turn(model=answer.model, usage=answer.usage)
            text = answer_text(work.endpoint, answer.response)
            found = problems(check, text)
            if not found:
                return _valid(answer, done, turn, check)
            if done.done >= check.max_repairs:
                return _invalid(answer, done, turn, check, found)
            stored = replace(turn, messages=repair_turn(text, found))
            done.turns.append(stored)  # it answered: billed, whatever happens next
            await self._store(work, lane, (work.id, done.done, stored))
            done.added.extend(stored.messages)

    async def _store(self, work: RowWork, lane: Lane, item: tuple[int, int, Turn]) -> None:
        """Store a repair turn before the repair call goes out (so a restart never asks
        for the stored answer again); a stopped job gives up a write waiting out a
        storage fault within `STORE_GRACE_S`."""
        saving = asyncio.ensure_future(self.repairs.save(work, item))
        while not (await asyncio.wait({saving}, timeout=STORE_GRACE_S))[0]:
            if lane.stopping:
                saving.cancel()
                await asyncio.gather(saving, return_exceptions=True)
                raise Halted("its job was stopped while a repair waited for the store")
        saving.result()


def _summary(check: OutputCheck, done: Repairs, *, valid: bool) -> dict[str, Any]:
    summary: dict[str, Any] = {"repairs": done.done, "valid": valid,
                               "model_calls": done.done + 1}
    if done.turns:
        summary["repair_history"] = history(check, done.turns)
    return summary


def _valid(answer: RowOutcome, done: Repairs, turn: Turn, check: OutputCheck) -> RowOutcome:
    assert answer.response is not None
    summary = _summary(check, done, valid=True)
    done.turns.append(turn)
    if len(done.turns) == 1:  # valid at once: the answer as received, plus the summary
        return replace(answer, response={**answer.response, EXTENSIONS: summary},
                       response_text=None, validation=VALID)
    return replace(answer, response={**answer.response, EXTENSIONS: summary},
                   response_text=None, usage=done.usage, attempts=tuple(done.attempts),
                   turns=tuple(done.turns), validation=REPAIRED)


def _invalid(answer: RowOutcome, done: Repairs, turn: Turn, check: OutputCheck,
             found: list[Problem]) -> RowOutcome:
    """Repairs exhausted: fails `invalid_output`, billed, its last answer kept."""
    assert answer.response is not None
    summary = {**_summary(check, done, valid=False),
               "errors": [p.line() for p in found]}
    done.turns.append(turn)
    return replace(answer, ok=False, response=None, response_text=None,
                   error=error_summary(found), error_code=INVALID_OUTPUT,
                   error_body={**answer.response, EXTENSIONS: summary}, dead_letter=False,
                   usage=done.usage, attempts=tuple(done.attempts), turns=tuple(done.turns),
                   validation=INVALID)


def _failed(answer: RowOutcome, done: Repairs) -> RowOutcome:
    """A model call that failed for good: billed for the calls that answered before."""
    if not done.turns:
        return answer
    return replace(answer, error=f"{answer.error} (repair {done.done})",
                   usage=done.usage + answer.usage, attempts=tuple(done.attempts),
                   turns=tuple(done.turns))


def _stopped(done: Repairs) -> RowOutcome:
    return RowOutcome(ok=False, model=done.model, error=f"stopped after {done.done} "
                      "repairs", error_code=STOPPED, attempts=tuple(done.attempts),
                      usage=done.usage, turns=tuple(done.turns))
