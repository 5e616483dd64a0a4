"""Workflow records (`openrelay.workflow`): one record runs a multi-step job that the
user's callback drives.

Relay posts an event (`workflow.started`, then `workflow.results` after each step, or
`workflow.tick` after a wait); the callback answers `continue` with the next step's
requests, `wait`, `completed` or `failed`. A step's requests run concurrently, each
taking one of the job's request slots only while it is on the wire; a record waiting
on its callback or on a delay holds none.

Durable: the record's state (`WorkflowState`) is stored whenever it changes, and
every request's result as it finishes (one transaction for everything that changed
meanwhile, `GroupCommit`). A restart resumes where the record stood: a pending event
goes out again with the same `Relay-Event-Id`, and only requests that were in flight
run again. The budgets (`max_steps`, `max_requests`, `max_tokens`) and the batch's
window are the only bounds; cancel and expiry stop a record at once. Its size is bounded
too (`[limits] max_record_mb`, `RecordSize`): its input, every step's requests and every
result, counted as each arrives; one that would pass the cap ends the record
`record_too_large` before it is stored or sent.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from daemon.config import RetryConfig
from daemon.domain import ids
from daemon.domain.extensions import EXTENSIONS
from daemon.domain.jobs import RowWork
from daemon.domain.outcome import RowOutcome, Turn, Usage
from daemon.domain.record_size import (
    MB,
    RECORD_TOO_LARGE,
    RecordSize,
    RecordTooLarge,
    json_size,
)
from daemon.domain.retry import is_retryable_answer, retry_delay
from daemon.domain.workflow_config import (
    Answer,
    InvalidAnswer,
    WorkflowConfig,
    WorkflowConfigError,
    parse_answer,
    parse_workflow,
    raw_workflow,
)
from daemon.executors.group_commit import GroupCommit
from daemon.executors.lane import STOPPED, Lane, not_started
from daemon.executors.store_calls import StoreCalls
from daemon.executors.tool_hosts import HostLimits
from daemon.outbound.http import OutboundClient, OutboundError
from daemon.outbound.webhook import sign
from daemon.store.interface import Store, WorkflowWrite
from daemon.upstream.router import Router

DELIVERIES = 4  # attempts per event
SECRET_TTL_S = 30.0
PARAM = "openrelay.workflow.url"


class WorkflowEnd(Exception):
    """The record ends failed: `code` (workflow_*), `message`, transient or not."""

    def __init__(self, code: str, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.transient = transient


def event_id(batch_id: str, custom_id: str, seq: int) -> str:
    """Stable across retries and restarts: the same event always has the same id."""
    return ids.stable("evt", batch_id, custom_id, "event", seq)


# What the stored state holds besides its input, requests and results (its phase and
# counters, the event due, the history of answers), counted as this much.
STATE_KEYS_BYTES = 2048


@dataclass
class WorkflowState:
    """Where a record stands; stored as JSON whenever it changes.

    `phase` is "deliver" (an event is due: `event`), "running" (a step's `requests`,
    some of them finished: `results`) or "waiting" (a tick is due at `wake_at`)."""

    phase: str
    seq: int  # the number of the event due (or last sent)
    event: dict[str, Any] | None
    step: int = 0  # continue and wait answers so far
    requests: list[dict[str, Any]] | None = None
    results: dict[int, dict[str, Any]] | None = None
    wake_at: float | None = None
    requests_total: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    billed: list[list[Any]] = field(default_factory=list)  # [alias, prompt, completion]
    history: list[dict[str, Any]] = field(default_factory=list)  # each answer, for display
    record_bytes: int = 0  # the input, every step's requests and results so far, as JSON

    @classmethod
    def resumed(cls, work: RowWork) -> WorkflowState:
        if work.workflow is None:
            body = {k: v for k, v in work.body.items() if k != EXTENSIONS}
            return cls("deliver", 0, {"type": "workflow.started", "step": 0, "input": body},
                       record_bytes=json_size(body) + STATE_KEYS_BYTES)
        stored = dict(work.workflow["state"])
        results = {int(i): r for i, r in work.workflow["results"].items()}
        return cls(**(stored | {"results": results if stored["phase"] == "running"
                                else None}))

    def document(self) -> dict[str, Any]:
        """What is stored (a step's results are stored one by one, beside it): a copy,
        since the store writes it later, while the record goes on."""
        return copy.deepcopy({k: v for k, v in self.__dict__.items() if k != "results"})

    def totals(self) -> dict[str, int]:
        return {"steps": self.step, "requests": self.requests_total,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens}

    def turns(self) -> tuple[Turn, ...]:
        return tuple(Turn(model=m, usage=Usage(p, c)) for m, p, c in self.billed)

    def due(self, kind: str, **fields: Any) -> None:
        self.phase, self.seq = "deliver", self.seq + 1
        self.event = {"type": kind, "step": self.step, **fields}
        self.requests = self.results = None
        self.wake_at = None


class WorkflowLog(GroupCommit[WorkflowWrite]):
    def __init__(self, store: Store, calls: StoreCalls | None = None) -> None:
        super().__init__(store.save_workflows, what="workflow states", calls=calls)


class WorkflowExecutor:
    def __init__(self, router: Router, client: OutboundClient, limits: HostLimits,
                 log: WorkflowLog, retry: RetryConfig, *,
                 secret: Callable[[int], str], models: frozenset[str],
                 max_record_bytes: int = 32 * MB,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
                 clock: Callable[[], float] = time.time,
                 rng: random.Random | None = None) -> None:
        self.router = router
        self.client = client
        self.limits = limits
        self.log = log
        self.retry = retry
        self.secret = secret  # the workspace's signing secret (blocking: a store read)
        self.models = models
        self.max_record_bytes = max_record_bytes
        self.sleep = sleep
        self.clock = clock
        self.rng = rng or random.Random()
        self._secrets: dict[int, tuple[str, float]] = {}  # workspace -> (secret, read at)

    async def run(self, work: RowWork, lane: Lane) -> RowOutcome:
        try:
            config = parse_workflow(raw_workflow(work.body))
        except WorkflowConfigError as exc:
            return RowOutcome(ok=False, error=f"{exc.path}: {exc.message}",
                              error_code="invalid_workflow")
        state = WorkflowState.resumed(work)
        if state.record_bytes > self.max_record_bytes:  # the input alone
            too_large = RecordTooLarge(state.record_bytes, self.max_record_bytes, "the input")
            return _failed(RECORD_TOO_LARGE, str(too_large), state)
        try:
            outcome = await lane.until_halted(self._drive(work, lane, config, state))
        except WorkflowEnd as end:
            return _failed(end.code, end.message, state, dead_letter=end.transient)
        if outcome is None:  # cancelled or expired: running requests are not billed
            return _failed(STOPPED, f"stopped at step {state.step}", state)
        return outcome

    async def release(self, job_seq: int) -> None:
        return None

    async def _drive(self, work: RowWork, lane: Lane, config: WorkflowConfig,
                     state: WorkflowState) -> RowOutcome:
        while True:
            if state.phase == "running":
                await self._run_step(work, lane, config, state)
            elif state.phase == "waiting":
                await self.sleep(max(0.0, (state.wake_at or 0) - self.clock()))
                state.due("workflow.tick")
                await self._save(work, state)
            if lane.stopping:  # the halt follows at once: `until_halted` ends the record
                await lane.halted.wait()
            answer = await self._deliver(work, config, state, lane.fencer(work))
            ended = await self._take(work, config, state, answer)
            if ended is not None:
                return ended

    async def _take(self, work: RowWork, config: WorkflowConfig, state: WorkflowState,
                    answer: Answer) -> RowOutcome | None:
        """Act on the callback's answer; the outcome when the record ends with it."""
        if answer.action == "completed":
            return _completed(answer.output, state)
        if answer.action == "failed":
            assert answer.error is not None
            raise WorkflowEnd("workflow_failed", f"{answer.error['code']}: "
                              f"{answer.error['message']}")
        state.step += 1
        if state.step > config.max_steps:
            raise WorkflowEnd("workflow_step_limit", f"the callback asked for step "
                              f"{state.step}; max_steps is {config.max_steps}")
        if answer.action == "wait":
            state.phase, state.wake_at = "waiting", self.clock() + answer.delay_ms / 1000
            state.history.append({"step": state.step, "action": "wait",
                                  "delay_ms": answer.delay_ms})
        else:
            self._grow(state, f"step {state.step}'s requests", answer.requests)  # as stored
            self._start_step(config, state, answer.requests)
        await self._save(work, state)
        return None

    def _start_step(self, config: WorkflowConfig, state: WorkflowState,
                    requests: Sequence[dict[str, Any]]) -> None:
        if state.requests_total + len(requests) > config.max_requests:
            raise WorkflowEnd("workflow_request_limit", f"step {state.step} asks for "
                              f"{len(requests)} requests after {state.requests_total}; "
                              f"max_requests is {config.max_requests}")
        state.requests_total += len(requests)
        state.phase, state.requests, state.results = "running", list(requests), {}
        state.history.append({"step": state.step, "action": "continue",
                              "requests": len(requests)})

    async def _run_step(self, work: RowWork, lane: Lane, config: WorkflowConfig,
                        state: WorkflowState) -> None:
        """Run the step's requests that have no result yet, concurrently; store each
        result as it finishes; stop at the token budget."""
        assert state.requests is not None and state.results is not None
        running = {asyncio.ensure_future(self._request(lane, work, r["body"])): i
                   for i, r in enumerate(state.requests) if i not in state.results}
        try:
            _check_tokens(config, state)  # a restart may find the budget spent already
            while running:
                finished, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in finished:
                    await self._finished(work, state, running.pop(task), task.result())
                _check_tokens(config, state)
        finally:
            for task in running:  # the token budget, cancel or a stop: not billed
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        results = [state.results[i] for i in range(len(state.requests))]
        state.due("workflow.results", results=results)
        await self._save(work, state)

    async def _request(self, lane: Lane, work: RowWork, body: dict[str, Any]) -> RowOutcome:
        async with lane.slots:
            if lane.stopping:  # the cancel was answered: nothing more goes out
                return not_started()
            return await self.router.call(str(body.get("model")), work.endpoint, body,
                                          fence=lane.fencer(work))

    async def _finished(self, work: RowWork, state: WorkflowState, index: int,
                        outcome: RowOutcome) -> None:
        assert state.results is not None
        result = _result(index, outcome)
        billed: list[Any] = []
        if outcome.ok:  # billed when it finishes, whatever the record does later
            state.input_tokens += outcome.usage.prompt_tokens
            state.output_tokens += outcome.usage.completion_tokens
            billed = [outcome.model, outcome.usage.prompt_tokens,
                      outcome.usage.completion_tokens]
            state.billed.append(billed)
        # the result and its billing line are both stored: both count
        self._grow(state, f"step {state.step}'s result {index}", result,
                   *([billed] if billed else []))
        state.results[index] = result
        await self.log.save(work, (work.id, state.document(), (state.step, index, result)))

    def _grow(self, state: WorkflowState, what: str, *values: Any) -> None:
        """Count `values` into the record's size; the record ends if that passes the cap."""
        size = RecordSize(self.max_record_bytes, state.record_bytes)
        try:
            size.grow(what, *values)
        except RecordTooLarge as exc:
            raise WorkflowEnd(RECORD_TOO_LARGE, str(exc)) from None
        state.record_bytes = size.used

    async def _save(self, work: RowWork, state: WorkflowState) -> None:
        await self.log.save(work, (work.id, state.document(), None))

    # -- the callback ------------------------------------------------------------

    async def _deliver(self, work: RowWork, config: WorkflowConfig, state: WorkflowState,
                       fence: Callable[[], None]) -> Answer:
        """POST the due event, up to 4 times; the callback's answer, checked."""
        assert state.event is not None
        ident = event_id(work.job_id, work.custom_id, state.seq)
        body = json.dumps({**state.event, "event_id": ident, "batch_id": work.job_id,
                           "custom_id": work.custom_id, "context": config.context,
                           "totals": state.totals()}).encode()
        headers = {"Authorization": config.authorization, "Relay-Event-Id": ident}
        secret = await self._secret(work.workspace_id)
        last = ""
        for attempt in range(1, DELIVERIES + 1):
            headers["Relay-Signature"] = sign(secret, body, timestamp=int(self.clock()))
            answer, last, retry_after = await self._attempt(config, body, headers, work, fence)
            if answer is not None:
                return answer
            if attempt < DELIVERIES:
                await self.sleep(retry_delay(attempt, retry_after=retry_after,
                                             policy=self.retry, now=self.clock(),
                                             rng=self.rng))
        raise WorkflowEnd("workflow_callback_unreachable", f"event {ident} was not delivered "
                          f"in {DELIVERIES} attempts; the last: {last}", transient=True)

    async def _attempt(self, config: WorkflowConfig, body: bytes, headers: dict[str, str],
                       work: RowWork, fence: Callable[[], None]
                       ) -> tuple[Answer | None, str, str | None]:
        """One delivery: (the answer, "", None), or (None, why, Retry-After) to retry.
        `fence` runs once the host's slot is taken, last before it goes out."""
        async with self.limits.slot(config.url):
            fence()
            try:
                reply = await self.client.post_json(
                    config.url, body, headers=headers, param=PARAM,
                    timeout_s=config.callback_timeout_ms / 1000)
            except OutboundError as exc:
                if exc.kind in ("timeout", "connection"):
                    return None, f"{exc.kind}: {exc.message}", None
                raise WorkflowEnd("workflow_callback_rejected", exc.message) from exc
        if not reply.ok:
            if is_retryable_answer(reply.status):
                return None, f"the callback answered {reply.status}", reply.headers.get(
                    "Retry-After")
            raise WorkflowEnd("workflow_callback_rejected",
                              f"the callback answered {reply.status}")
        try:
            return parse_answer(json.loads(reply.body), endpoint=work.endpoint,
                                models=self.models), "", None
        except (ValueError, RecursionError) as exc:
            message = str(exc) if isinstance(exc, InvalidAnswer) else "the answer is not JSON"
            raise WorkflowEnd("workflow_invalid_answer", message) from None

    async def _secret(self, workspace_id: int) -> str:
        """The workspace's signing secret, read again after `SECRET_TTL_S` (a rotation
        takes effect that soon)."""
        kept = self._secrets.get(workspace_id)
        if kept is None or self.clock() - kept[1] > SECRET_TTL_S:
            read = await self.log.calls.run("reading the workspace's signing secret",
                                            partial(self.secret, workspace_id))
            kept = (read, self.clock())
            self._secrets[workspace_id] = kept
        return kept[0]


def _check_tokens(config: WorkflowConfig, state: WorkflowState) -> None:
    used = state.input_tokens + state.output_tokens
    if used > config.max_tokens:
        raise WorkflowEnd("workflow_token_limit", f"the record used {used} tokens; "
                          f"max_tokens is {config.max_tokens}")


def _result(index: int, outcome: RowOutcome) -> dict[str, Any]:
    """A request's result as the next event carries it."""
    if outcome.ok:
        return {"index": index, "status_code": outcome.status_code or 200,
                "body": outcome.response}
    return {"index": index, "error": {"code": outcome.error_code or "failed",
                                      "message": outcome.error or "failed"}}


def _completed(output: Any, state: WorkflowState) -> RowOutcome:
    usage = Usage(state.input_tokens, state.output_tokens)
    billed = state.turns()
    return RowOutcome(ok=True, response={"output": output, EXTENSIONS: state.totals()},
                      status_code=200, model=billed[-1].model if billed else None,
                      usage=usage, turns=billed)


def _failed(code: str, message: str, state: WorkflowState, *,
            dead_letter: bool = False) -> RowOutcome:
    billed = state.turns()
    return RowOutcome(ok=False, error=f"{code}: {message}", error_code=code,
                      dead_letter=dead_letter, model=billed[-1].model if billed else None,
                      usage=Usage(state.input_tokens, state.output_tokens), turns=billed)
