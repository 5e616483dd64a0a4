"""A tool-calling Responses record: the loop runs in chat shape (translated once at the
start), the executor gets the model's calls, and the stored answer is a `Response`
whose output holds each round's function_call and function_call_output items, then
the final message; parsed by the openai SDK's own type."""

from __future__ import annotations

import json
from typing import Any

from openai.types.responses import Response

from daemon.config import ModelConfig
from daemon.domain.jobs import RowWork
from daemon.domain.outcome import Turn, Usage
from daemon.executors.lane import Lane
from daemon.executors.tool_records import ChatRecord, loop_record
from daemon.upstream.protocols import CHAT, RESPONSES
from daemon.upstream.transport import Reply
from tests.unit.test_router_protocols import claude, message
from tests.unit.test_tool_loop import Executor, Model, Rounds, loop, model_reply

TOOL = {"type": "function", "name": "lookup", "parameters": {"type": "object"}}
CHAT_TOOL = {"type": "function", "function": {"name": "lookup",
                                              "parameters": {"type": "object"}}}


def work(*, max_rounds: int = 8, rounds: tuple[Turn, ...] = (), **body: Any) -> RowWork:
    request = {"model": "main", "input": "find it", "instructions": "Use the tool.",
               "tools": [TOOL], "metadata": {"run": "1"}, "openrelay": {"tool_config": {
                   "url": "https://tools.example.com", "max_rounds": max_rounds}}} | body
    return RowWork(id=7, job_seq=1, custom_id="r-1", model="main", endpoint=RESPONSES,
                   body=request, job_id="batch_1", rounds=rounds)


def stored(outcome_response: dict[str, Any] | None) -> Response:
    assert outcome_response is not None
    return Response.model_validate(json.loads(json.dumps(outcome_response)))


async def test_two_rounds_then_a_response() -> None:
    model = Model({"main": [model_reply(calls=2), model_reply(calls=1),
                            model_reply(content="found")]})
    executor, rounds = Executor(), Rounds()

    outcome = await loop(model, executor, rounds).run(work(), Lane(4))

    assert outcome.ok
    first, _, third = (sent for _, sent in model.sent)
    assert first == {"model": "up-main", "tools": [CHAT_TOOL], "messages": [
        {"role": "system", "content": "Use the tool."}, {"role": "user", "content": "find it"}]}
    assert [m["role"] for m in third["messages"]] == [
        "system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    assert [len(r.tool_calls) for r in executor.requests] == [2, 1]
    response = stored(outcome.response)
    assert [item.type for item in response.output] == [
        "function_call", "function_call", "function_call_output", "function_call_output",
        "function_call", "function_call_output", "message"]
    calls = [i for i in response.output if i.type == "function_call"]
    results = [i for i in response.output if i.type == "function_call_output"]
    assert [c.call_id for c in calls] == ["c0", "c1", "c0"]
    assert [r.output for r in results] == ["result-1-c0", "result-1-c1", "result-2-c0"]
    assert response.output_text == "found" and response.status == "completed"
    assert response.metadata == {"run": "1"} and response.instructions == "Use the tool."
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (30, 15)
    assert outcome.response is not None
    assert outcome.response["openrelay"] == {"tool_rounds": 2, "model_calls": 3}
    assert outcome.usage == Usage(30, 15)
    assert len({i.id for i in response.output}) == len(response.output)


async def test_the_round_limit_ends_with_the_pending_calls_in_the_output() -> None:
    model = Model({"main": [model_reply(calls=1) for _ in range(2)]})

    outcome = await loop(model, Executor(), Rounds()).run(work(max_rounds=1), Lane(4))

    response = stored(outcome.response)
    assert [i.type for i in response.output] == [
        "function_call", "function_call_output", "function_call"]
    assert outcome.response is not None
    assert outcome.response["openrelay"]["tool_rounds_exhausted"] is True


async def test_a_restart_resumes_a_responses_record_from_its_stored_rounds() -> None:
    turn = Turn(model="main", usage=Usage(10, 5), messages=(
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "lookup",
                                                         "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c0", "content": "result-1-c0"}))
    model = Model({"main": [model_reply()]})

    outcome = await loop(model, Executor(), Rounds()).run(work(rounds=(turn,)), Lane(4))

    [(_, sent)] = model.sent
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
    response = stored(outcome.response)
    assert [i.type for i in response.output] == ["function_call", "function_call_output",
                                                 "message"]
    assert outcome.usage == Usage(20, 10)


async def test_a_record_chat_cannot_carry_fails_before_any_call() -> None:
    model = Model({"main": []})

    outcome = await loop(model, Executor(), Rounds()).run(
        work(tools=[{"type": "web_search"}]), Lane(4))

    assert model.sent == [] and not outcome.ok
    assert outcome.error_code == "unsupported_parameter"
    assert outcome.error == ("unsupported_parameter: tools[0].type = 'web_search' has no "
                             "counterpart in OpenAI's chat completions")


async def test_the_executors_tools_are_listed_on_the_response() -> None:
    class Offering(Executor):
        async def tools(self, config: Any, *, job_seq: int) -> list[dict[str, Any]] | None:
            return [CHAT_TOOL]

    model = Model({"main": [model_reply()]})

    outcome = await loop(model, Offering(), Rounds()).run(work(tools=None), Lane(4))

    assert model.sent[0][1]["tools"] == [CHAT_TOOL]
    assert stored(outcome.response).tools[0].model_dump(exclude_none=True) == TOOL


async def test_a_responses_record_runs_its_loop_on_claude() -> None:
    asked = {"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-up",
             "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup",
                          "input": {"q": 1}}],
             "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 8}}
    model = Model({"claude": [Reply(200, {}, json.dumps(asked).encode()), message("42")]})
    models = [claude(), ModelConfig(alias="main", base_url="http://m", model="up-main",
                                    fallbacks=("claude",), endpoints=(RESPONSES,))]

    outcome = await loop(model, Executor(), Rounds(), models).run(work(), Lane(4))

    response = stored(outcome.response)
    assert [i.type for i in response.output] == ["function_call", "function_call_output",
                                                 "message"]
    assert response.output_text == "42"
    assert [alias for alias, _ in model.sent] == ["claude", "claude"]


def test_a_chat_record_is_its_own_loop_shape() -> None:
    chat = RowWork(id=1, job_seq=1, custom_id="c", model="m", endpoint=CHAT,
                   body={"messages": []}, job_id="b")
    assert loop_record(chat) == ChatRecord(CHAT, {"messages": []})


async def test_a_last_answer_that_cannot_be_a_response_fails_the_record_billed() -> None:
    odd = {"choices": [{"message": {"content": {"not": "text"}}, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
    model = Model({"main": [model_reply(calls=1), Reply(200, {}, json.dumps(odd).encode())]})

    outcome = await loop(model, Executor(), Rounds()).run(work(), Lane(4))

    assert (outcome.ok, outcome.error_code, outcome.dead_letter) == (
        False, "invalid_response", False)
    assert outcome.error == ("invalid_response: main answered with a message content that "
                             "is not text")
    assert outcome.error_body == odd and outcome.usage == Usage(20, 10)
