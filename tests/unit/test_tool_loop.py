"""The tool loop of one record, with a scripted model upstream, a fake executor and a
fake round store: transcript, summed usage, limits, retries, failures, resuming,
fallback and stopping between rounds."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from daemon.config import ModelConfig, RetryConfig
from daemon.domain.jobs import RowWork
from daemon.domain.outcome import Turn, Usage
from daemon.domain.tool_config import ToolConfig
from daemon.executors.lane import STOPPED, Lane, LeaseLost
from daemon.executors.tool_loop import (
    RoundLog,
    ToolCallFailed,
    ToolLoopExecutor,
    ToolRequest,
    ToolResult,
    call_id,
    mismatch,
)
from daemon.store.faults import StorageFull
from daemon.upstream.router import Router
from daemon.upstream.transport import FunctionTransport, Reply

TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
RETRY = RetryConfig(attempts=3, backoff_base_s=0, backoff_cap_s=0)


def model_reply(*, calls: int = 0, content: str = "done", status: int = 200) -> Reply:
    """A turn that asks for `calls` tool calls, or a final answer."""
    if status != 200:
        return Reply(status, {}, b'{"error": {"message": "busy"}}')
    message: dict[str, Any] = {"role": "assistant", "content": content}
    finish = "stop"
    if calls:
        message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "lookup", "arguments": json.dumps({"q": i})}}
            for i in range(calls)]}
        finish = "tool_calls"
    body = {"id": "x", "object": "chat.completion", "choices": [
        {"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
    return Reply(200, {}, json.dumps(body).encode())


class Model:
    """The upstream: answers from a script per alias and keeps every payload."""

    def __init__(self, script: dict[str, list[Reply]]) -> None:
        self.script = script
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, model: ModelConfig, endpoint: str, payload: bytes) -> Reply:
        self.sent.append((model.alias, json.loads(payload)))
        return self.script[model.alias].pop(0)


class Executor:
    """A tool executor answering `name:q` per call, or failing from a script."""

    def __init__(self, failures: Sequence[ToolCallFailed | None] = ()) -> None:
        self.failures = list(failures)
        self.requests: list[ToolRequest] = []

    async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
        self.requests.append(request)
        if self.failures and (failure := self.failures.pop(0)) is not None:
            raise failure
        return [ToolResult(c["id"], f"result-{request.round}-{c['id']}")
                for c in reversed(request.tool_calls)]  # any order: the loop orders them

    async def tools(self, config: ToolConfig, *, job_seq: int) -> list[dict[str, Any]] | None:
        return None

    async def release(self, job_seq: int) -> None:
        return None


class Rounds:
    """The store's side of `RoundLog`: every write, and the rounds as stored."""

    def __init__(self) -> None:
        self.saved: list[tuple[int, int, Turn]] = []
        self.stored: dict[tuple[int, int], Turn] = {}
        self.taken_over: set[int] = set()  # rows another node has leased since

    def save_rounds(self, rounds: Sequence[tuple[int, int, Turn]], *,
                    leases: Mapping[int, int]) -> set[int]:
        kept = [r for r in rounds if r[0] not in self.taken_over]
        self.saved.extend(kept)
        self.stored.update({(row, number): turn for row, number, turn in kept})
        return self.taken_over & set(leases)


def work(*, max_rounds: int = 8, rounds: tuple[Turn, ...] = (), **config: Any) -> RowWork:
    body = {"model": "main", "messages": [{"role": "user", "content": "find it"}],
            "tools": TOOLS, "openrelay": {"tool_config": {
                "url": "https://tools.example.com", "authorization": "Bearer s3cret",
                "max_rounds": max_rounds, **config}}}
    return RowWork(id=7, job_seq=1, custom_id="r-1", model="main",
                   endpoint="/v1/chat/completions", body=body, job_id="batch_1", rounds=rounds)


def loop(model: Model, executor: Executor, rounds: Rounds,
         models: Sequence[ModelConfig] | None = None, **options: Any) -> ToolLoopExecutor:
    async def no_sleep(_: float) -> None:
        return None

    models = models or [ModelConfig(alias="main", base_url="http://m", model="up-main")]
    router = Router(models, RETRY, transport=FunctionTransport(model), sleep=no_sleep)
    return ToolLoopExecutor(router, {"http": executor, "mcp": executor},
                            RoundLog(rounds), RETRY, sleep=no_sleep,  # type: ignore[arg-type]
                            **options)


async def test_two_rounds_then_an_answer() -> None:
    model = Model({"main": [model_reply(calls=2), model_reply(calls=1), model_reply()]})
    executor, rounds = Executor(), Rounds()

    outcome = await loop(model, executor, rounds).run(work(), Lane(4))

    assert outcome.ok and outcome.model == "main"
    assert len(model.sent) == 3
    for _, sent in model.sent:  # the extension never goes upstream
        assert "openrelay" not in sent and sent["model"] == "up-main"
    third = model.sent[2][1]["messages"]
    assert [m["role"] for m in third] == ["user", "assistant", "tool", "tool", "assistant",
                                          "tool"]
    assert third[1] == json.loads(model_reply(calls=2).body)["choices"][0]["message"]
    assert [(m["tool_call_id"], m["content"]) for m in third[2:4]] == [
        ("c0", "result-1-c0"), ("c1", "result-1-c1")]  # in call order
    assert outcome.response is not None
    assert outcome.response["usage"] == {"prompt_tokens": 30, "completion_tokens": 15,
                                         "total_tokens": 45}
    assert outcome.response["openrelay"] == {"tool_rounds": 2, "model_calls": 3}
    assert outcome.response["choices"][0]["message"]["content"] == "done"
    assert outcome.usage == Usage(30, 15)
    assert [t.model for t in outcome.turns] == ["main"] * 3
    # each round twice: the model's turn before the executor call, then the whole round
    assert [(row, number, len(t.messages)) for row, number, t in rounds.saved] == [
        (7, 1, 1), (7, 1, 3), (7, 2, 1), (7, 2, 2)]
    assert [len(rounds.stored[(7, n)].messages) for n in (1, 2)] == [3, 2]
    assert [r.call_id for r in executor.requests] == [
        call_id("batch_1", "r-1", 1), call_id("batch_1", "r-1", 2)]


async def test_the_round_limit_ends_the_record_with_the_last_answer() -> None:
    model = Model({"main": [model_reply(calls=1) for _ in range(3)]})

    outcome = await loop(model, Executor(), Rounds()).run(work(max_rounds=2), Lane(4))

    assert outcome.ok and outcome.response is not None
    assert outcome.response["openrelay"] == {"tool_rounds": 2, "model_calls": 3,
                                             "tool_rounds_exhausted": True}
    assert outcome.response["choices"][0]["finish_reason"] == "tool_calls"


async def test_a_restart_resumes_after_the_last_stored_round() -> None:
    stored = Turn(model="main", usage=Usage(10, 5), messages=(
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "lookup",
                                                         "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c0", "content": "result-1-c0"}))
    model = Model({"main": [model_reply(calls=1), model_reply()]})
    executor, rounds = Executor(), Rounds()

    outcome = await loop(model, executor, rounds).run(work(rounds=(stored,)), Lane(4))

    assert [len(sent["messages"]) for _, sent in model.sent] == [3, 5]
    assert [r.round for r in executor.requests] == [2]  # round 1's call is not repeated
    assert [number for _, number, _ in rounds.saved] == [2, 2]
    assert outcome.response is not None
    assert outcome.response["openrelay"] == {"tool_rounds": 2, "model_calls": 3}
    assert outcome.usage == Usage(30, 15)


async def test_a_round_cut_off_after_its_model_turn_repeats_only_the_executor_call() -> None:
    turn = json.loads(model_reply(calls=1).body)["choices"][0]["message"]
    half = Turn(model="main", usage=Usage(10, 5), messages=(turn,))
    model = Model({"main": [model_reply()]})
    executor, rounds = Executor(), Rounds()

    outcome = await loop(model, executor, rounds).run(work(rounds=(half,)), Lane(4))

    assert [r.call_id for r in executor.requests] == [call_id("batch_1", "r-1", 1)]
    assert len(model.sent) == 1 and len(model.sent[0][1]["messages"]) == 3
    assert outcome.response is not None
    assert outcome.response["openrelay"] == {"tool_rounds": 1, "model_calls": 2}
    assert outcome.usage == Usage(20, 10)


async def test_transient_executor_failures_are_retried() -> None:
    model = Model({"main": [model_reply(calls=1), model_reply()]})
    executor = Executor([ToolCallFailed("503", transient=True), None])

    outcome = await loop(model, executor, Rounds()).run(work(), Lane(4))

    assert outcome.ok
    assert [r.call_id for r in executor.requests] == [call_id("batch_1", "r-1", 1)] * 2


async def test_an_unreachable_executor_dead_letters_the_record() -> None:
    model = Model({"main": [model_reply(calls=1)]})
    executor = Executor([ToolCallFailed("timeout", transient=True)] * 3)

    outcome = await loop(model, executor, Rounds()).run(work(), Lane(4))

    assert not outcome.ok and outcome.dead_letter
    assert outcome.error_code == "tool_executor_unreachable"
    assert "after 3 attempts" in str(outcome.error)
    assert outcome.usage == Usage(10, 5)  # the model call that answered is billed
    assert len(executor.requests) == 3


async def test_every_executor_call_is_kept_as_one_of_its_own() -> None:
    """Each try of a round's executor call is an `ExecutorCall` of the outcome, with its
    round, protocol, status and error (the model's attempts are apart from them)."""
    clock = iter(range(1000, 2000)).__next__
    model = Model({"main": [model_reply(calls=1), model_reply(calls=1), model_reply()]})
    executor = Executor([None, ToolCallFailed("the executor answered 503", transient=True,
                                              status_code=503), None])

    outcome = await loop(model, executor, Rounds(),
                         clock=lambda: float(clock())).run(work(), Lane(4))

    assert outcome.ok and len(outcome.attempts) == 3  # the model's calls
    assert [(c.round, c.executor, c.status_code, c.error) for c in outcome.executor_calls] == [
        (1, "http", None, None), (2, "http", 503, "the executor answered 503"),
        (2, "http", None, None)]
    assert all(c.duration_ms == 1000 for c in outcome.executor_calls)  # a tick each


async def test_an_executor_that_stays_down_leaves_each_failed_call_with_its_error() -> None:
    model = Model({"main": [model_reply(calls=1)]})
    down = ToolCallFailed("connection: connection refused", transient=True)
    outcome = await loop(model, Executor([down] * 3), Rounds()).run(work(type="mcp"), Lane(4))

    assert outcome.dead_letter and len(outcome.attempts) == 1  # one model call answered
    assert [(c.round, c.executor, c.error) for c in outcome.executor_calls] == [
        (1, "mcp", "connection: connection refused")] * 3


@pytest.mark.parametrize("failure", [
    ToolCallFailed("the executor answered 404", transient=False),
    ToolCallFailed("a body that is not JSON", transient=False),
])
async def test_an_executor_error_fails_the_record_without_retrying(
        failure: ToolCallFailed) -> None:
    model = Model({"main": [model_reply(calls=1)]})
    executor = Executor([failure])

    outcome = await loop(model, executor, Rounds()).run(work(), Lane(4))

    assert (outcome.ok, outcome.dead_letter, outcome.error_code) == (
        False, False, "tool_executor_error")
    assert failure.message in str(outcome.error) and len(executor.requests) == 1


async def test_results_that_do_not_match_the_calls_are_an_executor_error() -> None:
    class Wrong(Executor):
        async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
            return [ToolResult("other", "x")]

    model = Model({"main": [model_reply(calls=1)]})
    outcome = await loop(model, Wrong(), Rounds()).run(work(), Lane(4))
    assert outcome.error_code == "tool_executor_error"
    assert ("answer calls never made ('other'); leave calls unanswered ('c0')"
            in str(outcome.error))


async def test_20000_wrong_ids_are_named_a_few_and_counted() -> None:
    class Flood(Executor):  # answers every call but with ids the model never made
        async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
            return [ToolResult(f"wrong-{i:05d}", "x") for i in range(20_000)]

    model = Model({"main": [model_reply(calls=1)]})
    outcome = await loop(model, Flood(), Rounds()).run(work(), Lane(4))
    error = str(outcome.error)
    assert outcome.error_code == "tool_executor_error"
    assert len(error) < 1_000  # 189 KB before: every id, twice over
    assert ("'wrong-00000', 'wrong-00001', 'wrong-00002', 'wrong-00003', 'wrong-00004' "
            "and 19,995 more (20,000 in all)") in error
    assert "'wrong-00005'" not in error and "unanswered ('c0')" in error


def test_results_naming_one_call_twice_say_so() -> None:
    message = mismatch([ToolResult("c0", "x"), ToolResult("c0", "y")], ["c0"])
    assert message == "the executor's results answer 1 call(s) more than once"


async def test_a_model_call_that_fails_for_good_fails_the_record_billed_so_far() -> None:
    model = Model({"main": [model_reply(calls=1), *[model_reply(status=400)]]})

    outcome = await loop(model, Executor(), Rounds()).run(work(), Lane(4))

    assert not outcome.ok and outcome.error_code == "upstream_error"
    assert "(tool round 2)" in str(outcome.error)
    assert outcome.usage == Usage(10, 5) and len(outcome.turns) == 1


async def test_after_a_fallback_the_loop_goes_on_with_the_same_transcript_and_model() -> None:
    models = [ModelConfig(alias="main", base_url="http://m", model="up-main",
                          fallbacks=("backup",)),
              ModelConfig(alias="backup", base_url="http://b", model="up-backup")]
    model = Model({"main": [model_reply(calls=1), *[model_reply(status=503)] * 3],
                   "backup": [model_reply(calls=1), model_reply()]})

    outcome = await loop(model, Executor(), Rounds(), models).run(work(), Lane(4))

    assert outcome.ok and outcome.model == "backup"
    assert [alias for alias, _ in model.sent] == ["main", "main", "main", "main", "backup",
                                                  "backup"]
    assert [len(sent["messages"]) for alias, sent in model.sent if alias == "backup"] == [3, 5]
    assert [t.model for t in outcome.turns] == ["main", "backup", "backup"]


async def test_a_cancel_stops_the_loop_between_rounds() -> None:
    model = Model({"main": [model_reply(calls=1), model_reply(calls=1)]})
    lane = Lane(4)

    class StopAfterFirst(Executor):
        async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
            lane.stop()  # the cancel arrives while round 1's executor call is out
            return await super().call(config, request)

    outcome = await loop(model, StopAfterFirst(), Rounds()).run(work(), lane)

    assert (outcome.ok, outcome.error_code) == (False, STOPPED)
    assert len(model.sent) == 1 and outcome.usage == Usage(10, 5)


async def test_a_malformed_tool_config_at_run_time_fails_the_record() -> None:
    bad = work()
    bad.body["openrelay"]["tool_config"]["type"] = "smoke-signals"
    outcome = await loop(Model({}), Executor(), Rounds()).run(bad, Lane(4))
    assert outcome.error_code == "invalid_tool_config"


async def test_a_discovery_that_fails_is_retried_then_dead_letters() -> None:
    class NoListing(Executor):
        listings = 0

        async def tools(self, config: ToolConfig, *,
                        job_seq: int) -> list[dict[str, Any]] | None:
            NoListing.listings += 1
            raise ToolCallFailed("tools/list: connection refused", transient=True)

    bare = work()
    del bare.body["tools"]
    outcome = await loop(Model({}), NoListing(), Rounds()).run(bare, Lane(4))

    assert (outcome.error_code, outcome.dead_letter, NoListing.listings) == (
        "tool_executor_unreachable", True, 3)
    assert str(outcome.error).startswith("tool_executor_unreachable: tools/list: ")


async def test_a_loop_whose_lease_lapses_stops_at_its_next_call() -> None:
    """Fencing: once the node may have lost the row's lease, neither the executor call
    nor the next model call goes out; the row is handed back unstored."""
    model = Model({"main": [model_reply(calls=1), model_reply(calls=1), model_reply()]})
    executor, rounds = Executor(), Rounds()
    held = {"lease": True}
    lane = Lane(4, holds=lambda work: held["lease"])

    class Lapsing(Executor):
        async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
            results = await super().call(config, request)
            held["lease"] = False  # the node froze past its lease while this ran
            return results

    executor = Lapsing()
    with pytest.raises(LeaseLost):
        await loop(model, executor, rounds).run(work(), lane)
    assert len(model.sent) == 1 and len(executor.requests) == 1  # nothing more went out


async def test_a_round_the_store_refuses_stops_the_loop() -> None:
    """Another node leased the row since: its round is not stored, and the loop ends
    before the executor call its model turn asked for."""
    model = Model({"main": [model_reply(calls=1), model_reply()]})
    executor, rounds = Executor(), Rounds()
    rounds.taken_over.add(7)
    with pytest.raises(LeaseLost):
        await loop(model, executor, rounds).run(work(), Lane(4))
    assert executor.requests == [] and rounds.saved == []


async def test_a_turn_with_untrusted_usage_fails_the_record_billed_for_the_turns_before() -> None:
    """Each turn's usage is read by the router's one checked reader: a turn that reports
    2^63 + 5 prompt tokens ends the record `invalid_response`, billed for round 1 only."""
    bad = json.loads(model_reply().body)
    bad["usage"]["prompt_tokens"] = 2**63 + 5
    model = Model({"main": [model_reply(calls=1), Reply(200, {}, json.dumps(bad).encode())]})

    outcome = await loop(model, Executor(), Rounds()).run(work(), Lane(4))

    assert (outcome.ok, outcome.error_code) == (False, "invalid_response")
    assert outcome.error == ("invalid_response: main answered 200 with usage.prompt_tokens = "
                             "9223372036854775813, not an integer from 0 to 1000000000 "
                             "(tool round 2)")
    assert outcome.usage == Usage(10, 5) and len(outcome.turns) == 1
    assert outcome.error_body == bad


def turn_with_arguments(*arguments: str) -> Reply:
    """A tool-calls turn whose calls `c0, c1, ...` carry these raw `arguments`."""
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": "lookup", "arguments": a}}
        for i, a in enumerate(arguments)]}
    body = {"id": "x", "object": "chat.completion", "choices": [
        {"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
    return Reply(200, {}, json.dumps(body).encode())


@pytest.mark.parametrize("kind", ["http", "mcp"])
async def test_calls_whose_arguments_are_not_json_are_a_tool_error_and_never_go_out(
        kind: str) -> None:
    model = Model({"main": [turn_with_arguments('{"q": 1}', '{"q": '), model_reply()]})
    executor, rounds = Executor(), Rounds()

    outcome = await loop(model, executor, rounds).run(work(type=kind), Lane(4))

    assert outcome.ok
    assert [[c["id"] for c in r.tool_calls] for r in executor.requests] == [["c0"]]
    tool_messages = model.sent[1][1]["messages"][2:]
    assert [m["tool_call_id"] for m in tool_messages] == ["c0", "c1"]
    assert tool_messages[0]["content"] == "result-1-c0"
    assert tool_messages[1]["content"].startswith(
        "error: the arguments of this call to 'lookup' were not sent to the tool: they are "
        "not valid JSON (Expecting value at character 6)")
    assert outcome.response is not None
    assert outcome.response["openrelay"]["tool_errors"] == ["c1"]


async def test_a_turn_whose_every_call_has_bad_arguments_calls_no_executor() -> None:
    model = Model({"main": [turn_with_arguments("[1, 2]", "not json"), model_reply()]})
    executor = Executor()

    outcome = await loop(model, executor, Rounds()).run(work(), Lane(4))

    assert outcome.ok and executor.requests == []
    assert outcome.response is not None
    assert outcome.response["openrelay"] == {"tool_rounds": 1, "model_calls": 2,
                                             "tool_errors": ["c0", "c1"]}


async def test_a_cancel_cuts_the_executor_backoff_short_and_retries_nothing() -> None:
    model = Model({"main": [model_reply(calls=1)]})
    lane = Lane(4)

    class FailsAsTheCancelArrives(Executor):
        async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
            self.requests.append(request)
            await lane.halt()
            raise ToolCallFailed("no answer within 1000 ms", transient=True)

    async def long_backoff(_: float) -> None:
        await asyncio.Event().wait()

    executor = FailsAsTheCancelArrives()
    router = Router([ModelConfig(alias="main", base_url="http://m", model="up-main")], RETRY,
                    transport=FunctionTransport(model))
    tools = ToolLoopExecutor(router, {"http": executor}, RoundLog(Rounds()),  # type: ignore[arg-type]
                             RETRY, sleep=long_backoff)

    outcome = await asyncio.wait_for(tools.run(work(), lane), 10)

    # It reads as the rows that never ran, not as a dead-lettered failure to re-drive.
    assert (outcome.error_code, outcome.dead_letter) == (STOPPED, False)
    assert len(executor.requests) == 1


async def test_a_stopping_job_retries_no_executor_call() -> None:
    model = Model({"main": [model_reply(calls=1)]})
    lane = Lane(4)

    class FailsWhileStopping(Executor):
        async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
            lane.stop()  # the cancel is answered while the call is out
            return await super().call(config, request)

    executor = FailsWhileStopping([ToolCallFailed("503", transient=True)] * 3)
    outcome = await loop(model, executor, Rounds()).run(work(), lane)

    assert (outcome.error_code, outcome.dead_letter) == (STOPPED, False)
    assert len(executor.requests) == 1


class Verbose(Executor):
    """An executor whose every result is `size` characters long."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
        self.requests.append(request)
        return [ToolResult(c["id"], "x" * self.size) for c in request.tool_calls]


async def test_a_transcript_past_the_cap_ends_the_record_before_it_is_stored_or_sent() -> None:
    limit = 3500  # the input and two rounds of 1,000-character results fit; three do not
    model = Model({"main": [model_reply(calls=1) for _ in range(5)]})
    executor, rounds = Verbose(1000), Rounds()

    outcome = await loop(model, executor, rounds, max_record_bytes=limit).run(work(), Lane(4))

    assert (outcome.ok, outcome.error_code, outcome.dead_letter) == (
        False, "record_too_large", False)
    assert outcome.error is not None and outcome.error.startswith(
        "record_too_large: round 3's tool results would take the record to ")
    assert "past [limits] max_record_mb" in outcome.error
    assert len(model.sent) == 3 and len(executor.requests) == 3  # no 4th model call
    assert max(len(json.dumps(sent["messages"])) for _, sent in model.sent) <= limit
    stored = [json.dumps(rounds.stored[(7, n)].messages) for n in (1, 2, 3)]
    assert sum(map(len, stored)) + len(json.dumps(work().body["messages"])) <= limit
    assert len(rounds.stored[(7, 3)].messages) == 1  # round 3: its model turn alone
    assert outcome.usage == Usage(30, 15)  # every model call that answered is billed


async def test_a_model_turn_past_the_cap_is_billed_and_not_stored() -> None:
    model = Model({"main": [model_reply(calls=1)]})
    rounds = Rounds()

    outcome = await loop(model, Executor(), rounds, max_record_bytes=200).run(work(), Lane(4))

    assert outcome.error_code == "record_too_large"
    assert outcome.error is not None and "round 1's model turn" in outcome.error
    assert rounds.saved == [] and outcome.usage == Usage(10, 5)


async def test_a_record_stored_past_a_lowered_cap_fails_at_once_on_resume() -> None:
    stored = Turn(model="main", usage=Usage(10, 5), messages=(
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "lookup",
                                                         "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c0", "content": "x" * 5000}))
    model = Model({"main": []})

    outcome = await loop(model, Executor(), Rounds(), max_record_bytes=4000).run(
        work(rounds=(stored,)), Lane(4))

    assert outcome.error_code == "record_too_large" and model.sent == []
    assert outcome.error is not None and "the input and stored rounds" in outcome.error
    assert outcome.usage == Usage(10, 5)  # the stored round's model call is billed


async def test_no_call_of_a_round_starts_once_its_job_is_stopping() -> None:
    """Each call takes a host slot of its own, so a round of many calls goes out in
    waves; a cancel answered between two waves starts none of the later ones."""
    model = Model({"main": [model_reply(calls=3)]})
    lane = Lane(4)
    sent: list[str] = []

    class InWaves(Executor):
        async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
            results = []
            for call in request.tool_calls:  # one slot: each call waits for the last
                request.guard()
                sent.append(call["id"])
                lane.stop()  # the cancel is answered while the first call is out
                results.append(ToolResult(call["id"], "ok"))
            return results

    outcome = await loop(model, InWaves(), Rounds()).run(work(), lane)

    assert sent == ["c0"]
    assert (outcome.error_code, outcome.dead_letter) == (STOPPED, False)


async def test_each_tool_call_is_fenced_after_its_wait_for_a_host_slot() -> None:
    model = Model({"main": [model_reply(calls=2)]})
    held = {"lease": True}
    lane = Lane(4, holds=lambda work: held["lease"])
    sent: list[str] = []

    class Freezing(Executor):
        async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
            results = []
            for call in request.tool_calls:
                request.guard()
                sent.append(call["id"])
                held["lease"] = False  # frozen past the lease while the first was out
                results.append(ToolResult(call["id"], "ok"))
            return results

    with pytest.raises(LeaseLost):
        await loop(model, Freezing(), Rounds()).run(work(), lane)
    assert sent == ["c0"]


async def test_a_round_waiting_for_the_store_does_not_hold_a_cancelled_job_open() -> None:
    """A round's write waiting out a storage fault keeps the record from going on; a
    cancel then ends it at once, as a row that never ran."""
    model = Model({"main": [model_reply(calls=1)]})
    lane = Lane(4)
    writing = asyncio.Event()

    class Outage(Rounds):
        def save_rounds(self, rounds: Sequence[tuple[int, int, Turn]], *,
                        leases: Mapping[int, int]) -> set[int]:
            writing.set()
            raise StorageFull("No space left on device")  # a storage fault: waited out

    running = asyncio.ensure_future(loop(model, Executor(), Outage()).run(work(), lane))
    await asyncio.wait_for(writing.wait(), 5)
    lane.stop()
    await lane.halt()
    outcome = await asyncio.wait_for(running, 5)
    assert (outcome.error_code, outcome.dead_letter) == (STOPPED, False)
