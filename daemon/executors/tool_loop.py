"""Tool-calling records (`openrelay.tool_config`): the agent loop of one row.

Call the model; when its turn ends with `finish_reason: "tool_calls"` and rounds
remain, send the calls to the user's executor (HTTP or MCP, see `tool_callers`),
append the assistant message as returned and one tool message per call, store the
round, and call the model again. The record ends with the model's last response,
its `usage` summed over every model call and an `openrelay` summary added.

A round is stored twice: the model's turn before its tool calls go out, the whole
round once the results are back (`RoundLog`, one transaction for every row's round
that reached that point meanwhile). A restart resumes after the last stored turn
and repeats no stored call: a round cut off after its model turn repeats only its
executor call, with the same id (`call_id`, stable across retries and restarts),
so an executor can drop the repeat.

A Responses record runs the same loop in chat shape (`tool_records.py`): translated
once at the start, its final answer a `Response` holding every round's items.

The transcript is bounded by `[limits] max_record_mb` (`RecordSize`): a model turn or
a round's tool messages that would take it past the cap end the record
`record_too_large` before they are stored or sent.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from daemon.config import RetryConfig
from daemon.domain import ids
from daemon.domain.errors import first_few
from daemon.domain.extensions import EXTENSIONS
from daemon.domain.jobs import RowWork
from daemon.domain.outcome import Attempt, ExecutorCall, RowOutcome, Turn, Usage
from daemon.domain.record_size import (
    MB,
    RECORD_TOO_LARGE,
    RecordSize,
    RecordTooLarge,
    json_size,
)
from daemon.domain.retry import retry_delay
from daemon.domain.tool_config import (
    ToolConfig,
    ToolConfigError,
    parse_tool_config,
    raw_tool_config,
)
from daemon.domain.usage import INVALID
from daemon.executors.group_commit import GroupCommit
from daemon.executors.lane import STOPPED, Halted, Lane
from daemon.executors.store_calls import StoreCalls
from daemon.executors.tool_arguments import refusals
from daemon.executors.tool_records import LoopRecord, loop_record
from daemon.store.interface import Store
from daemon.upstream.router import Router
from daemon.upstream.untranslatable import BadAnswer, Untranslatable

T = TypeVar("T")
STORE_GRACE_S = 1.0  # how long a stopped job's round write may still take


@dataclass(frozen=True)
class ToolRequest:
    """One round's executor call: every tool call of one model turn."""

    job_seq: int
    batch_id: str
    custom_id: str
    round: int  # 1-based
    call_id: str  # the same across retries and restarts
    tool_calls: tuple[dict[str, Any], ...]
    # Run by the executor once a host slot is taken, before each call goes out: raises
    # to stop the row (`Lane.guard`: a cancel, or a lease this node may have lost).
    guard: Callable[[], None] = field(default=lambda: None, compare=False)


@dataclass(frozen=True)
class ToolResult:
    tool_call_id: str
    content: str
    is_error: bool = False  # the executor said the call failed (passed to the model as is)


class ToolCallFailed(Exception):
    """An executor call that did not give results: `transient` ones are retried."""

    def __init__(self, message: str, *, transient: bool, retry_after: str | None = None,
                 status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.transient = transient
        self.retry_after = retry_after
        self.status_code = status_code  # the executor's HTTP status, when it answered one


class ToolCaller(Protocol):
    """One executor protocol (`tool_config.type`)."""

    async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
        """The results, one per tool call in call order; raises `ToolCallFailed`."""
        ...

    async def tools(self, config: ToolConfig, *, job_seq: int) -> list[dict[str, Any]] | None:
        """Function tools the executor offers, for a record that names none (or None)."""
        ...

    async def release(self, job_seq: int) -> None:
        """The job has ended here: drop what was kept for it."""
        ...


def call_id(batch_id: str, custom_id: str, round_number: int) -> str:
    """Stable across retries and restarts, distinct per batch, record and round."""
    return ids.stable("call", batch_id, custom_id, round_number)


class RoundLog(GroupCommit[tuple[int, int, Turn]]):
    """Stores rounds `(row id, number, turn)` with a group commit."""

    def __init__(self, store: Store, calls: StoreCalls | None = None) -> None:
        super().__init__(store.save_rounds, what="tool rounds", calls=calls)


@dataclass
class Transcript:
    """What a tool-calling row has done so far."""

    messages: list[dict[str, Any]]
    size: RecordSize  # the transcript's bytes, against the cap
    turns: list[Turn] = field(default_factory=list)  # every model call that answered
    rounds: int = 0  # rounds with their tool results
    attempts: list[Attempt] = field(default_factory=list)
    executor_calls: list[ExecutorCall] = field(default_factory=list)  # this run's
    tool_errors: list[str] = field(default_factory=list)
    model: str | None = None  # the alias the last call answered on
    pending: dict[str, Any] | None = None  # a stored turn whose tool calls have no results

    @classmethod
    def resumed(cls, work: RowWork, record: LoopRecord, *, limit: int) -> Transcript:
        """Where an earlier run of the row left it: every stored round, and a last
        round stored before its executor call answered (run that call again)."""
        messages = list(record.chat.get("messages") or [])
        stored = [m for turn in work.rounds for m in turn.messages]
        done = cls(messages, RecordSize(limit, sum(map(json_size, messages + stored))),
                   turns=list(work.rounds),
                   model=work.rounds[-1].model if work.rounds else None)
        for turn in work.rounds:
            if len(turn.messages) == 1:
                done.pending = turn.messages[0]
            else:
                done.messages.extend(turn.messages)
                done.rounds += 1
        return done

    @property
    def usage(self) -> Usage:
        return sum((t.usage for t in self.turns), Usage())


class ToolLoopExecutor:
    def __init__(self, router: Router, callers: Mapping[str, ToolCaller], rounds: RoundLog,
                 retry: RetryConfig, *, max_record_bytes: int = 32 * MB,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
                 clock: Callable[[], float] = time.time,
                 rng: random.Random | None = None) -> None:
        self.router = router
        self.callers = callers
        self.rounds = rounds
        self.retry = retry
        self.max_record_bytes = max_record_bytes
        self.sleep = sleep
        self.clock = clock
        self.rng = rng or random.Random()

    async def run(self, work: RowWork, lane: Lane) -> RowOutcome:
        try:
            config = parse_tool_config(raw_tool_config(work.body))
        except ToolConfigError as exc:
            return _failed("invalid_tool_config", f"{exc.path}: {exc.message}")
        try:
            record = loop_record(work)
        except Untranslatable as exc:
            return _failed(exc.code, f"{exc.code}: {exc.message}")
        done = Transcript.resumed(work, record, limit=self.max_record_bytes)
        try:
            done.size.grow("the input and stored rounds")  # past a cap lowered since?
            return await self._loop(work, lane, config, record, done)
        except RecordTooLarge as exc:
            return _too_large(exc, done)
        except Halted:  # a cancel or expiry: it reads as the rows that never ran
            return _stopped(done)

    async def _loop(self, work: RowWork, lane: Lane, config: ToolConfig, record: LoopRecord,
                    done: Transcript) -> RowOutcome:
        caller = self.callers[config.type]
        try:
            tools = record.chat.get("tools") or await self._retried(
                lambda: caller.tools(config, job_seq=work.job_seq), lane,
                Calls(done, config.type, 0))
        except ToolCallFailed as exc:
            return _executor_failed(exc, done, "tools/list")
        while True:
            if done.pending is None:
                async with lane.slots:
                    if lane.stopping:
                        return _stopped(done)
                    lane.going(work)  # a drain: the record resumes from its stored rounds
                    answer = await self.router.call(
                        work.model, record.endpoint, {
                            **record.chat, "messages": done.messages,
                            **({"tools": tools} if tools else {})},
                        resume_at=done.model, fence=lane.fencer(work))
                done.attempts.extend(answer.attempts)
                if not answer.ok:
                    return _with_transcript(answer, done)
                assert answer.response is not None and answer.model is not None
                done.model = answer.model
                turn = Turn(model=answer.model, usage=answer.usage)
                assistant = _tool_turn(answer.response)
                if assistant is None or done.rounds >= config.max_rounds:
                    done.turns.append(turn)
                    return _finished(answer, done, exhausted=assistant is not None,
                                     record=record, tools=tools or [], now=self.clock())
                await self._model_turn(work, lane, done,
                                       replace(turn, messages=(assistant,)))
            failure = await self._tool_results(work, config, caller, done, lane)
            if failure is not None:
                return failure

    async def _model_turn(self, work: RowWork, lane: Lane, done: Transcript,
                          turn: Turn) -> None:
        """Store the model's turn before its tool calls go out: a restart then repeats
        only the executor call (with the same call id), never the model call."""
        done.turns.append(turn)  # it answered: billed, whatever happens next
        done.size.grow(f"round {done.rounds + 1}'s model turn", *turn.messages)
        await self._store(work, lane, (work.id, done.rounds + 1, turn))
        done.pending = turn.messages[0]

    async def _tool_results(self, work: RowWork, config: ToolConfig, caller: ToolCaller,
                            done: Transcript, lane: Lane) -> RowOutcome | None:
        """Run the executor for the pending turn's calls and store the whole round; an
        outcome if the record ends here. A call whose arguments are not a JSON object
        does not go out: its answer is a tool error saying so."""
        assert done.pending is not None
        assistant, number = done.pending, done.rounds + 1
        refused = refusals(assistant["tool_calls"])
        request = ToolRequest(job_seq=work.job_seq, batch_id=work.job_id,
                              custom_id=work.custom_id, round=number,
                              call_id=call_id(work.job_id, work.custom_id, number),
                              tool_calls=tuple(c for c in assistant["tool_calls"]
                                               if str(c["id"]) not in refused),
                              guard=lane.guard(work))
        try:
            answered = matched(await self._retried(lambda: caller.call(config, request), lane,
                                                   Calls(done, config.type, number)),
                               request.tool_calls) if request.tool_calls else []
        except ToolCallFailed as exc:
            return _executor_failed(exc, done, f"round {request.round}")
        by_id = {r.tool_call_id: r for r in answered}
        results = [by_id.get(str(c["id"]))
                   or ToolResult(str(c["id"]), refused[str(c["id"])], is_error=True)
                   for c in assistant["tool_calls"]]
        added = (assistant, *({"role": "tool", "tool_call_id": r.tool_call_id,
                               "content": r.content} for r in results))
        done.size.grow(f"round {number}'s tool results", *added[1:])
        done.tool_errors.extend(r.tool_call_id for r in results if r.is_error)
        whole = replace(done.turns[-1], messages=added)
        await self._store(work, lane, (work.id, number, whole))
        done.turns[-1] = whole
        done.messages.extend(added)
        done.rounds, done.pending = number, None
        return None

    async def _store(self, work: RowWork, lane: Lane, item: tuple[int, int, Turn]) -> None:
        """Store a round. A write waiting out a storage fault does not hold a stopped
        job open: once the job is stopping, it is given up within `STORE_GRACE_S`
        (`Halted`); a write that is merely under way has that long to finish, so the
        round of a call already paid for is kept."""
        saving = asyncio.ensure_future(self.rounds.save(work, item))
        while not (await asyncio.wait({saving}, timeout=STORE_GRACE_S))[0]:
            if lane.stopping:
                saving.cancel()
                await asyncio.gather(saving, return_exceptions=True)
                raise Halted("its job was stopped while a round waited for the store")
        saving.result()

    async def _retried(self, attempt: Callable[[], Awaitable[T]], lane: Lane,
                       calls: Calls) -> T:
        """`attempt()`, again after a transient failure, with the router's backoff and
        attempt count; not again once the job is stopping (a cancel also cuts the
        backoff short: `Halted`), so a cancelled record ends within one attempt's
        timeout. Each try is one of the row's executor calls (`calls`)."""
        for tries in range(1, self.retry.attempts + 1):
            started = self.clock()
            try:
                answer = await attempt()
            except ToolCallFailed as exc:
                calls.add(started, self.clock(), exc)
                if lane.stopping:
                    raise Halted("its job is being stopped") from exc
                if not exc.transient or tries == self.retry.attempts:
                    raise _gave_up(exc, tries) from exc
                await lane.until_halted(self.sleep(retry_delay(
                    tries, retry_after=exc.retry_after, policy=self.retry, now=self.clock(),
                    rng=self.rng)))
                if lane.stopping:
                    raise Halted("its job is being stopped") from exc
            else:
                calls.add(started, self.clock(), None)
                return answer
        raise AssertionError("unreachable: retry.attempts is at least 1")

    async def release(self, job_seq: int) -> None:
        for caller in self.callers.values():
            await caller.release(job_seq)


@dataclass(frozen=True)
class Calls:
    """Where one executor call's tries are written down: the row's transcript, the
    protocol and the round (0: the discovery of the executor's tools)."""

    done: Transcript
    executor: str
    round: int

    def add(self, started: float, ended: float, failure: ToolCallFailed | None) -> None:
        self.done.executor_calls.append(ExecutorCall(
            round=self.round, executor=self.executor,
            status_code=failure.status_code if failure is not None else None,
            error=failure.message if failure is not None else None,
            duration_ms=max(round((ended - started) * 1000), 0), started_at=started))


def matched(results: Sequence[ToolResult],
            tool_calls: Sequence[dict[str, Any]]) -> list[ToolResult]:
    """The results in call order; `ToolCallFailed` unless they answer exactly the calls."""
    by_id = {r.tool_call_id: r for r in results}
    wanted = [str(c.get("id")) for c in tool_calls]
    if len(by_id) != len(results) or set(by_id) != set(wanted):
        raise ToolCallFailed(mismatch(results, wanted), transient=False)
    return [by_id[i] for i in wanted]


def _gave_up(exc: ToolCallFailed, tries: int) -> ToolCallFailed:
    return ToolCallFailed(f"{exc.message} (after {tries} attempt{'s' if tries > 1 else ''})",
                          transient=exc.transient, status_code=exc.status_code)


def mismatch(results: Sequence[ToolResult], wanted: Sequence[str]) -> str:
    """What is wrong with results that do not answer exactly the calls `wanted`."""
    answered = [r.tool_call_id for r in results]
    distinct = set(answered)
    stray = sorted(distinct - set(wanted))
    unanswered = [i for i in wanted if i not in distinct]
    twice = len(answered) - len(distinct)
    wrong = [f"answer calls never made ({first_few(stray)})" if stray else "",
             f"leave calls unanswered ({first_few(unanswered)})" if unanswered else "",
             f"answer {twice:,} call(s) more than once" if twice else ""]
    return "the executor's results " + "; ".join(filter(None, wrong))


def _tool_turn(response: dict[str, Any]) -> dict[str, Any] | None:
    """The assistant message, exactly as returned, of a turn that ended with
    `finish_reason: "tool_calls"` and carries them; None for any other turn."""
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    choice = choices[0]
    message = choice.get("message")
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    if choice.get("finish_reason") != "tool_calls" or not isinstance(calls, list) or not calls:
        return None
    if not all(isinstance(c, dict) and isinstance(c.get("id"), str) for c in calls):
        return None
    return message


def _finished(answer: RowOutcome, done: Transcript, *, exhausted: bool, record: LoopRecord,
              tools: Sequence[Mapping[str, Any]], now: float) -> RowOutcome:
    """The record's answer in its own shape, its usage every call's and Relay's summary
    added; an answer that cannot take that shape fails the record (billed)."""
    assert answer.response is not None
    usage = done.usage
    summary: dict[str, Any] = {"tool_rounds": done.rounds, "model_calls": len(done.turns)}
    if exhausted:
        summary["tool_rounds_exhausted"] = True
    if done.tool_errors:
        summary["tool_errors"] = done.tool_errors
    try:
        shaped = record.answer(answer.response, rounds=done.turns, tools=tools, usage=usage,
                               now=now)
    except BadAnswer as exc:
        return replace(answer, ok=False, response=None, response_text=None,
                       error=f"{INVALID}: {answer.model} answered with {exc}",
                       error_code=INVALID, error_body=answer.response, dead_letter=False,
                       usage=usage, attempts=tuple(done.attempts),
                       executor_calls=tuple(done.executor_calls), turns=tuple(done.turns))
    return replace(answer, response={**shaped, EXTENSIONS: summary}, response_text=None,
                   usage=usage, attempts=tuple(done.attempts),
                   executor_calls=tuple(done.executor_calls), turns=tuple(done.turns))


def _with_transcript(answer: RowOutcome, done: Transcript) -> RowOutcome:
    """A model call that failed for good: the record fails, billed for what answered."""
    where = f" (tool round {done.rounds + 1})" if done.rounds else ""
    return replace(answer, error=f"{answer.error}{where}", usage=done.usage,
                   attempts=tuple(done.attempts),
                   executor_calls=tuple(done.executor_calls), turns=tuple(done.turns))


def _executor_failed(exc: ToolCallFailed, done: Transcript, where: str) -> RowOutcome:
    code = "tool_executor_unreachable" if exc.transient else "tool_executor_error"
    return RowOutcome(ok=False, model=done.model, error=f"{code}: {where}: {exc.message}",
                      error_code=code, dead_letter=exc.transient,
                      attempts=tuple(done.attempts), executor_calls=tuple(done.executor_calls),
                      usage=done.usage, turns=tuple(done.turns))


def _too_large(exc: RecordTooLarge, done: Transcript) -> RowOutcome:
    """Nothing past the cap was stored or sent; billed for what answered."""
    return RowOutcome(ok=False, model=done.model, error=f"{RECORD_TOO_LARGE}: {exc}",
                      error_code=RECORD_TOO_LARGE, attempts=tuple(done.attempts),
                      executor_calls=tuple(done.executor_calls),
                      usage=done.usage, turns=tuple(done.turns))


def _stopped(done: Transcript) -> RowOutcome:
    return RowOutcome(ok=False, model=done.model, error=f"stopped after {done.rounds} tool "
                      "rounds", error_code=STOPPED, attempts=tuple(done.attempts),
                      executor_calls=tuple(done.executor_calls),
                      usage=done.usage, turns=tuple(done.turns))


def _failed(code: str, message: str) -> RowOutcome:
    return RowOutcome(ok=False, error=message, error_code=code)

