"""The simulated upstream: shapes, directives, seeded faults, introspection, CLI."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
from aiohttp.test_utils import TestClient

from daemon.simulator import (
    LOG_LIMIT,
    Directive,
    Draw,
    SimOptions,
    SimState,
    classify_sentiment,
    compose_reply,
    embed,
    latency_s,
    main,
    parse_directive,
    plan,
    random_fault,
    split_chunks,
)
from daemon.simulator.content import BadRequest, parse_chat
from daemon.simulator.tools import (
    ExecutorCall,
    arguments_for,
    executor_results,
    tool_call_id,
)
from daemon.testing import Simulator

ROOT = Path(__file__).resolve().parents[2]


def chat_body(prompt: str, model: str = "sim-small") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "system", "content": "Be brief."},
                                         {"role": "user", "content": prompt}]}


async def chat(client: TestClient, prompt: str, model: str = "sim-small") -> aiohttp.ClientResponse:
    resp = await client.post("/v1/chat/completions", json=chat_body(prompt, model))
    await resp.read()
    return resp


async def status_of(client: TestClient, prompt: str) -> int:
    """The status answered, or 0 when the connection was reset."""
    try:
        return (await chat(client, prompt)).status
    except aiohttp.ClientConnectionError:
        return 0


# --- directives (pure) --------------------------------------------------------


def test_a_prompt_without_a_token_has_no_directive() -> None:
    assert parse_directive("Classify: great product! [not sim]") is None


@pytest.mark.parametrize(("text", "expected"), [
    ("x [sim:fail=503] y", Directive(fail=503)),
    ("[sim:fail=503 times=2]", Directive(fail=503, times=2)),
    ("[sim:fail=503 model=sim-small]", Directive(fail=503, model="sim-small")),
    ("[sim:fail=429,times=1,model=sim-small]", Directive(fail=429, times=1, model="sim-small")),
    ("[sim:garbage]", Directive(garbage=True)),
    ("[sim:reset]", Directive(reset=True)),
    ("[sim:timeout]", Directive(timeout=True)),
    ("[sim:sleep=250]", Directive(sleep_ms=250.0)),
    ("a [sim:sleep=5] b [sim:fail=500]", Directive(fail=500, sleep_ms=5.0)),
])
def test_parse_directive(text: str, expected: Directive) -> None:
    assert parse_directive(text) == expected


@pytest.mark.parametrize("text", [
    "[sim:explode]", "[sim:fail=200]", "[sim:fail=abc]", "[sim:times=-1]", "[sim:sleep=x]",
    "[sim:garbage=1]",
])
def test_parse_directive_refuses_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="sim"):
        parse_directive(text)


def test_the_strongest_fault_wins() -> None:
    assert Directive(fail=503, reset=True).fault == "reset"
    assert Directive(fail=503, timeout=True).fault == "timeout"
    assert Directive(fail=503, garbage=True).fault == 503
    assert Directive(sleep_ms=5).fault is None


# --- planning (pure) ----------------------------------------------------------

OPTS = SimOptions(rate_429=0.1, rate_5xx=0.2, rate_timeout=0.1, rate_reset=0.1, timeout_s=7)


@pytest.mark.parametrize(("u", "fault"), [
    (0.05, 429), (0.15, 503), (0.35, "timeout"), (0.45, "reset"), (0.5, None), (0.99, None),
])
def test_one_draw_picks_a_fault_from_consecutive_bands(u: float, fault: Any) -> None:
    assert random_fault(OPTS, u) == fault


def test_jitter_spreads_around_the_mean_and_never_below_zero() -> None:
    opts = SimOptions(latency_ms=10, jitter_ms=20)
    assert latency_s(opts, 0.5) == pytest.approx(0.010)
    assert latency_s(opts, 1.0) == pytest.approx(0.030)
    assert latency_s(opts, 0.0) == 0.0


def test_a_timeout_hangs_for_timeout_s_then_answers_504() -> None:
    outcome = plan(None, model="m", seen=0, draw=Draw(0.5, 0.35), options=OPTS)
    assert (outcome.kind, outcome.status, outcome.delay_s) == ("answer", 504, 7)


def test_a_directive_shields_its_row_from_random_faults() -> None:
    always = SimOptions(rate_5xx=1.0)
    outcome = plan(Directive(sleep_ms=20), model="m", seen=0, draw=Draw(0.5, 0.0),
                   options=always)
    assert (outcome.status, outcome.delay_s) == (200, 0.02)


def test_times_and_model_scope_a_directed_fault() -> None:
    d = Directive(fail=503, times=2, model="sim-small")
    statuses = [plan(d, model="sim-small", seen=n, draw=Draw(0, 0.9), options=OPTS).status
                for n in range(3)]
    assert statuses == [503, 503, 200]
    assert plan(d, model="sim-large", seen=0, draw=Draw(0, 0.9), options=OPTS).status == 200


@pytest.mark.parametrize("bad", [
    {"rate_429": 1.5}, {"rate_reset": -0.1}, {"rate_429": 0.6, "rate_5xx": 0.6},
    {"latency_ms": -1},
])
def test_options_refuse_impossible_values(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must"):
        SimOptions(**bad)


# --- canned content (pure) -----------------------------------------------------


@pytest.mark.parametrize(("review", "label"), [
    ("Absolutely love it, works perfectly and the battery is great.", "positive"),
    ("It broke after two days. Terrible, I want a refund.", "negative"),
    ("It arrived on Tuesday. It does what the box says.", "neutral"),
    ("Not good at all, and not worth the price.", "negative"),
    ("No complaints so far.", "positive"),
])
def test_classify_sentiment_from_cues(review: str, label: str) -> None:
    assert classify_sentiment(review) == label


def test_the_instruction_words_themselves_are_not_cues() -> None:
    prompt = 'Classify the sentiment of this review as positive, negative or neutral: "Fine."'
    assert compose_reply("sim-small", prompt) == "neutral"


def test_other_prompts_get_a_labelled_echo_without_directives() -> None:
    reply = compose_reply("sim-large", "one two three four five six seven eight nine [sim:sleep=1]")
    assert reply == "Simulated reply (sim-large): one two three four five six seven eight…"


def test_embeddings_are_deterministic_unit_vectors() -> None:
    vector = embed("hello")
    assert len(vector) == 8 and vector == embed("hello") and vector != embed("hullo")
    assert sum(x * x for x in vector) == pytest.approx(1.0, abs=1e-4)


def test_the_request_log_keeps_the_last_200000() -> None:
    assert SimState(SimOptions()).log.maxlen == LOG_LIMIT == 200_000


# --- routes ---------------------------------------------------------------------


async def test_chat_completion_shape(make_sim: Any) -> None:
    client = await make_sim()
    resp = await client.post("/v1/chat/completions", json=chat_body("Say hello to the world"))
    body = await resp.json()
    assert resp.status == 200 and resp.headers["X-Relay-Simulated"] == "true"
    assert body["id"].startswith("chatcmpl-") and body["object"] == "chat.completion"
    assert body["model"] == "sim-small" and isinstance(body["created"], int)
    assert body["choices"] == [{
        "index": 0, "logprobs": None, "finish_reason": "stop",
        "message": {"role": "assistant", "refusal": None,
                    "content": "Simulated reply (sim-small): Say hello to the world"}}]
    assert body["usage"] == {"prompt_tokens": 7, "completion_tokens": 8, "total_tokens": 15}


async def test_chat_classifies_when_the_system_prompt_asks(make_sim: Any) -> None:
    client = await make_sim()
    messages = [{"role": "system", "content": "You label review sentiment. One word."},
                {"role": "user", "content": "Awful. It cracked on day one."}]
    resp = await client.post("/v1/chat/completions",
                             json={"model": "sim-large", "messages": messages})
    assert (await resp.json())["choices"][0]["message"]["content"] == "negative"


async def test_completion_shape(make_sim: Any) -> None:
    client = await make_sim()
    resp = await client.post("/v1/completions", json={"model": "sim-small",
                                                      "prompt": ["Once upon", "a time"]})
    body = await resp.json()
    assert body["id"].startswith("cmpl-") and body["object"] == "text_completion"
    assert [c["text"] for c in body["choices"]] == [
        "Simulated reply (sim-small): Once upon", "Simulated reply (sim-small): a time"]
    assert [c["index"] for c in body["choices"]] == [0, 1]
    assert body["usage"]["prompt_tokens"] == 4


async def test_embedding_shape(make_sim: Any) -> None:
    client = await make_sim()
    resp = await client.post("/v1/embeddings", json={"model": "sim-embed", "input": ["a b", "c"]})
    body = await resp.json()
    assert body["object"] == "list" and body["model"] == "sim-embed"
    assert [(d["object"], d["index"], len(d["embedding"])) for d in body["data"]] == [
        ("embedding", 0, 8), ("embedding", 1, 8)]
    assert body["data"][0]["embedding"] == embed("a b")
    assert body["usage"] == {"prompt_tokens": 3, "total_tokens": 3}


async def test_models_and_health(make_sim: Any) -> None:
    client = await make_sim()
    models = await (await client.get("/v1/models")).json()
    assert models["object"] == "list"
    assert {m["id"] for m in models["data"]} >= {"sim-small", "sim-large", "sim-embed"}
    assert all(m["object"] == "model" and m["owned_by"] == "relay-simulator"
               for m in models["data"])
    health = await client.get("/healthz")
    assert health.status == 200 and health.headers["X-Relay-Simulated"] == "true"


@pytest.mark.parametrize(("path", "payload", "param"), [
    ("/v1/chat/completions", b"{not json", None),
    ("/v1/chat/completions", b"[1, 2]", None),
    ("/v1/chat/completions", json.dumps({"messages": []}).encode(), "model"),
    ("/v1/chat/completions", json.dumps({"model": "sim-small"}).encode(), "messages"),
    ("/v1/chat/completions", json.dumps({**chat_body("hi"), "stream": True}).encode(), "stream"),
    ("/v1/completions", json.dumps({"model": "sim-small"}).encode(), "prompt"),
    ("/v1/embeddings", json.dumps({"model": "sim-embed", "input": 3}).encode(), "input"),
])
async def test_bad_requests_get_the_openai_envelope(
        make_sim: Any, path: str, payload: bytes, param: str | None) -> None:
    client = await make_sim()
    resp = await client.post(path, data=payload, headers={"Content-Type": "application/json"})
    error = (await resp.json())["error"]
    assert resp.status == 400 and resp.headers["X-Relay-Simulated"] == "true"
    assert error["type"] == "invalid_request_error" and error["param"] == param
    assert error["message"] and "code" in error


async def test_an_unknown_directive_is_a_400_that_names_it(make_sim: Any) -> None:
    resp = await chat(await make_sim(), "hi [sim:explode]")
    assert resp.status == 400 and "explode" in (await resp.json())["error"]["message"]


# --- directives over HTTP ---------------------------------------------------------


async def test_fail_always_fails_with_the_given_status(make_sim: Any) -> None:
    client = await make_sim()
    for _ in range(3):
        resp = await chat(client, "x [sim:fail=503]")
        assert resp.status == 503
        assert (await resp.json())["error"]["type"] == "server_error"


async def test_fail_429_carries_a_fractional_retry_after(make_sim: Any) -> None:
    resp = await chat(await make_sim(retry_after_s=0.05), "x [sim:fail=429]")
    assert resp.status == 429 and resp.headers["Retry-After"] == "0.05"
    assert (await resp.json())["error"]["code"] == "rate_limit_exceeded"


async def test_times_counts_per_distinct_prompt(make_sim: Any) -> None:
    client = await make_sim()
    a, b = "row a [sim:fail=503 times=2]", "row b [sim:fail=503 times=2]"
    assert [await status_of(client, p) for p in (a, b, a, a, b, b)] == [
        503, 503, 503, 200, 503, 200]


async def test_model_scoped_failure_spares_other_models(make_sim: Any) -> None:
    client = await make_sim()
    prompt = "x [sim:fail=503 model=sim-small]"
    assert (await chat(client, prompt, "sim-small")).status == 503
    assert (await chat(client, prompt, "sim-large")).status == 200
    scoped = "y [sim:fail=500 model=sim-small times=1]"
    statuses = [(await chat(client, scoped, m)).status
                for m in ("sim-large", "sim-small", "sim-small")]
    assert statuses == [200, 500, 200]


async def test_garbage_is_a_200_that_is_not_json(make_sim: Any) -> None:
    resp = await chat(await make_sim(), "x [sim:garbage]")
    assert resp.status == 200
    with pytest.raises(ValueError):
        json.loads(await resp.text())


async def test_reset_is_a_connection_error_for_an_aiohttp_client(make_sim: Any) -> None:
    client = await make_sim()
    with pytest.raises(aiohttp.ClientConnectionError):
        await chat(client, "x [sim:reset]")
    assert (await chat(client, "after the reset")).status == 200


async def test_timeout_hangs_for_timeout_s_then_answers_504(make_sim: Any) -> None:
    client = await make_sim(timeout_s=0.05)
    started = time.perf_counter()
    resp = await chat(client, "x [sim:timeout]")
    assert resp.status == 504 and time.perf_counter() - started >= 0.05


async def test_sleep_adds_latency(make_sim: Any) -> None:
    client = await make_sim()
    started = time.perf_counter()
    resp = await chat(client, "x [sim:sleep=60]")
    assert resp.status == 200 and time.perf_counter() - started >= 0.06


# --- seeded random faults -------------------------------------------------------

FAULTY = {"rate_429": 0.2, "rate_5xx": 0.2, "rate_reset": 0.2, "retry_after_s": 0.01}


async def fault_sequence(client: TestClient, n: int = 30) -> list[int]:
    return [await status_of(client, f"row {i}") for i in range(n)]


async def test_the_same_seed_gives_the_same_faults(make_sim: Any) -> None:
    first = await fault_sequence(await make_sim(seed=7, **FAULTY))
    again = await fault_sequence(await make_sim(seed=7, **FAULTY))
    other = await fault_sequence(await make_sim(seed=8, **FAULTY))
    assert first == again != other
    assert {0, 200, 429, 503} <= set(first)


async def test_directives_are_immune_to_random_faults(make_sim: Any) -> None:
    client = await make_sim(rate_5xx=1.0, seed=1)
    assert (await chat(client, "plain")).status == 503
    assert (await chat(client, "pinned [sim:sleep=0]")).status == 200


# --- introspection ----------------------------------------------------------------


async def test_stats_and_requests_record_arrivals_in_order(make_sim: Any) -> None:
    client = await make_sim()
    await chat(client, "first [sim:fail=429]")
    await client.post("/v1/completions", json={"model": "sim-large", "prompt": "second"})
    await client.post("/v1/embeddings", json={"model": "sim-embed", "input": ["third", "x"]})
    await client.post("/v1/chat/completions", data=b"nope")
    stats = await (await client.get("/_sim/stats")).json()
    assert stats == {"requests": 4,
                     "by_model": {"sim-small": 1, "sim-large": 1, "sim-embed": 1},
                     "by_status": {"429": 1, "200": 2, "400": 1},
                     "in_flight": 0, "peak_in_flight": 0,  # none waited: no latency
                     "mcp_in_flight": 0, "mcp_peak_in_flight": 0}
    data = (await (await client.get("/_sim/requests")).json())["data"]
    assert [(r["model"], r["prompt"], r["status"]) for r in data] == [
        ("sim-small", "first [sim:fail=429]", 429), ("sim-large", "second", 200),
        ("sim-embed", "third", 200), (None, "", 400)]
    assert all(isinstance(r["at"], float) for r in data)
    sent = len(json.dumps({"model": "sim-large", "prompt": "second"}))
    assert data[1]["bytes"] == sent and data[3]["bytes"] is None  # a refusal: not recorded


async def test_stats_count_the_calls_held_open_at_once(make_sim: Any) -> None:
    client = await make_sim()
    await asyncio.gather(*(chat(client, f"wait {i} [sim:sleep=100]") for i in range(5)))
    await chat(client, "at once")
    stats = await (await client.get("/_sim/stats")).json()
    assert (stats["in_flight"], stats["peak_in_flight"]) == (0, 5)


async def test_reset_forgets_everything_and_reseeds(make_sim: Any) -> None:
    client = await make_sim(seed=3, **FAULTY)
    first = await fault_sequence(client, 10)
    assert (await chat(client, "z [sim:fail=503 times=1]")).status == 503
    resp = await client.post("/_sim/reset")
    assert resp.status == 200 and resp.headers["X-Relay-Simulated"] == "true"
    stats = await (await client.get("/_sim/stats")).json()
    assert stats == {"requests": 0, "by_model": {}, "by_status": {}, "in_flight": 0,
                     "peak_in_flight": 0, "mcp_in_flight": 0, "mcp_peak_in_flight": 0}
    assert (await (await client.get("/_sim/requests")).json()) == {"data": []}
    assert await fault_sequence(client, 10) == first
    assert (await chat(client, "z [sim:fail=503 times=1]")).status == 503


# --- command line -------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["--port", "1", "--rate-429", "1.5"],
    ["--port", "1", "--rate-5xx", "0.7", "--rate-reset", "0.7"],
    ["--port", "70000"],
    [],
])
def test_main_refuses_bad_arguments(argv: list[str], capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "error" in capsys.readouterr().err


async def test_main_serves_until_sigterm_and_exits_0() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "daemon.simulator", "--port", "0", "--seed", "1", cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 10)).decode()  # type: ignore[union-attr]
        prefix = "relayd simulate: SIMULATED OpenAI-compatible upstream listening on "
        assert line.startswith(prefix + "http://127.0.0.1:") and line.endswith("/v1\n")
        base = line.removeprefix(prefix).strip()
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{base}/chat/completions", json=chat_body("hi")) as resp:
                assert resp.status == 200
            with pytest.raises(asyncio.TimeoutError):  # a simulated timeout, abandoned
                await session.post(f"{base}/chat/completions", json=chat_body("[sim:timeout]"),
                                   timeout=aiohttp.ClientTimeout(total=0.1))
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 5) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


# --- tool calling: directives and pure helpers --------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("[sim:tool_rounds=3 tool_calls=2]", Directive(tool_rounds=3, tool_calls=2)),
    ("[sim:tool_rounds=0]", Directive(tool_rounds=0)),
    ("[sim:tool_fail=503]", Directive(tool_fail=503)),
    ("[sim:tool_fail=503 times=2]", Directive(tool_fail=503, tool_times=2)),
    ("[sim:tool_fail=429,tool_times=1]", Directive(tool_fail=429, tool_times=1)),
    ("[sim:fail=503 times=1] [sim:tool_fail=400 times=3]",
     Directive(fail=503, times=1, tool_fail=400, tool_times=3)),
    ("[sim:fail=503 tool_fail=400 times=1]", Directive(fail=503, tool_fail=400, times=1)),
    ("[sim:tool_sleep=15]", Directive(tool_sleep_ms=15.0)),
    ("[sim:tool_garbage] [sim:tool_mismatch]", Directive(tool_garbage=True, tool_mismatch=True)),
])
def test_parse_tool_directives(text: str, expected: Directive) -> None:
    assert parse_directive(text) == expected


@pytest.mark.parametrize("text", [
    "[sim:tool_rounds=101]", "[sim:tool_rounds=-1]", "[sim:tool_calls=0]", "[sim:tool_fail=200]",
    "[sim:tool_sleep=x]", "[sim:tool_garbage=1]", "[sim:tool_explode]",
])
def test_parse_tool_directives_refuses_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="sim"):
        parse_directive(text)


def test_tool_directives_are_not_upstream_faults() -> None:
    assert Directive(tool_fail=503, tool_times=1, tool_garbage=True).fault is None


def test_arguments_follow_the_schema() -> None:
    schema = {"type": "object", "properties": {
        "q": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"},
        "flag": {"type": "boolean"}, "maybe": {"type": ["integer", "null"]},
        "unit": {"type": "string", "enum": ["c", "f"]}, "tags": {"type": "array"},
        "untyped": {}}}
    assert arguments_for(schema, "the prompt", 2) == {
        "q": "the prompt", "n": 2, "x": 2, "flag": True, "maybe": 2, "unit": "c", "tags": [],
        "untyped": "the prompt"}


@pytest.mark.parametrize("parameters", [None, {}, {"type": "object", "properties": {}}])
def test_arguments_without_properties_are_the_input(parameters: Any) -> None:
    assert arguments_for(parameters, "p", 1) == {"input": "p"}


def test_tool_call_ids_are_deterministic_and_distinct() -> None:
    ids = {tool_call_id("p", r, i) for r in (1, 2) for i in (0, 1)}
    assert len(ids) == 4 and tool_call_id("p", 1, 0) == tool_call_id("p", 1, 0)
    assert all(i.startswith("call_") and len(i) == 21 for i in ids)


def test_executor_results_keep_call_order() -> None:
    calls = [ExecutorCall("b", "f", '{"x": 1}'), ExecutorCall("a", "g", "{}")]
    assert executor_results(calls, "3") == [
        {"tool_call_id": "b", "content": 'f({"x": 1}) = ok#3 (b)'},
        {"tool_call_id": "a", "content": "g({}) = ok#3 (a)"}]
    assert [r["tool_call_id"] for r in executor_results(calls, "3", mismatch=True)] == [
        "mismatch_b", "mismatch_a"]


# --- tool calling: the simulated model ----------------------------------------------

LOOKUP = {"type": "function", "function": {
    "name": "lookup", "description": "Look something up.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"},
                                                    "page": {"type": "integer"},
                                                    "exact": {"type": "boolean"}},
                   "required": ["query"]}}}
OTHER = {"type": "function", "function": {"name": "other", "parameters": {}}}


def tool_chat_body(prompt: str, tools: list[dict[str, Any]] | None = None,
                   **extra: Any) -> dict[str, Any]:
    return {**chat_body(prompt), "tools": [LOOKUP, OTHER] if tools is None else tools, **extra}


async def model_turn(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    resp = await client.post("/v1/chat/completions", json=body)
    assert resp.status == 200, await resp.text()
    return await resp.json()


def answer_calls(body: dict[str, Any], choice: dict[str, Any],
                 content: Any = None) -> dict[str, Any]:
    """The next request: the assistant turn and one tool message per call, in order."""
    message = choice["message"]
    replies = [{"role": "tool", "tool_call_id": call["id"],
                "content": content(call) if content else f"result of {call['id']}"}
               for call in message["tool_calls"]]
    return {**body, "messages": [*body["messages"], message, *replies]}


async def run_tool_loop(client: TestClient, body: dict[str, Any],
                        content: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Play the tool executor until the model stops: (every tool-call turn, last answer)."""
    turns: list[dict[str, Any]] = []
    for _ in range(20):
        answer = await model_turn(client, body)
        choice = answer["choices"][0]
        if choice["finish_reason"] != "tool_calls":
            return turns, answer
        turns.append(choice)
        body = answer_calls(body, choice, content)
    raise AssertionError("the model never stopped calling tools")


async def test_tools_get_one_round_of_calls_by_default(make_sim: Any) -> None:
    client = await make_sim()
    body = tool_chat_body("Find the capital of France")
    answer = await model_turn(client, body)
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["role"] == "assistant" and message["content"] is message["refusal"] is None
    [call] = message["tool_calls"]
    assert call["id"] == tool_call_id("Find the capital of France", 1, 0)
    assert call["type"] == "function" and call["function"]["name"] == "lookup"
    assert json.loads(call["function"]["arguments"]) == {
        "query": "Find the capital of France", "page": 1, "exact": True}
    assert answer["usage"]["completion_tokens"] > 0 and answer["usage"]["prompt_tokens"] == 7
    assert answer == await model_turn(client, body) | {"id": answer["id"],
                                                       "created": answer["created"]}

    final = await model_turn(client, answer_calls(body, choice))
    assert final["choices"][0]["finish_reason"] == "stop"
    assert final["choices"][0]["message"] == {
        "role": "assistant", "content": f"Tool results: result of {call['id']}", "refusal": None}


async def test_tool_rounds_sets_how_many_rounds_come_before_the_answer(make_sim: Any) -> None:
    client = await make_sim()
    prompt = "Research this [sim:tool_rounds=3]"
    turns, final = await run_tool_loop(client, tool_chat_body(prompt),
                                       content=lambda call: str(json.loads(
                                           call["function"]["arguments"])["page"]))
    assert [json.loads(t["message"]["tool_calls"][0]["function"]["arguments"])["page"]
            for t in turns] == [1, 2, 3]
    assert [t["message"]["tool_calls"][0]["id"] for t in turns] == [
        tool_call_id(prompt, r, 0) for r in (1, 2, 3)]
    assert final["choices"][0]["message"]["content"] == "Tool results: 1 | 2 | 3"


async def test_tool_rounds_0_answers_at_once(make_sim: Any) -> None:
    client = await make_sim()
    answer = await model_turn(client, tool_chat_body("Say hi [sim:tool_rounds=0]"))
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert answer["choices"][0]["message"]["content"] == "Simulated reply (sim-small): Say hi"


async def test_tool_calls_asks_for_parallel_calls_with_distinct_ids(make_sim: Any) -> None:
    client = await make_sim()
    prompt = "Fan out [sim:tool_calls=3]"
    body = tool_chat_body(prompt)
    choice = (await model_turn(client, body))["choices"][0]
    calls = choice["message"]["tool_calls"]
    assert [c["id"] for c in calls] == [tool_call_id(prompt, 1, i) for i in range(3)]
    assert len({c["id"] for c in calls}) == 3
    assert {c["function"]["name"] for c in calls} == {"lookup"}
    assert len({c["function"]["arguments"] for c in calls}) == 1

    # the answer quotes the tool messages in the order they were sent
    reordered = answer_calls(body, choice)
    reordered["messages"][-3:] = reversed(reordered["messages"][-3:])
    final = await model_turn(client, reordered)
    assert final["choices"][0]["message"]["content"] == "Tool results: " + " | ".join(
        f"result of {c['id']}" for c in reversed(calls))


async def test_parallel_tool_calls_false_makes_one_call_a_turn(make_sim: Any) -> None:
    client = await make_sim()
    body = tool_chat_body("x [sim:tool_calls=3]", parallel_tool_calls=False)
    assert len((await model_turn(client, body))["choices"][0]["message"]["tool_calls"]) == 1


async def test_tool_choice_picks_the_tool_or_none(make_sim: Any) -> None:
    client = await make_sim()
    forced = tool_chat_body("x", tool_choice={"type": "function",
                                              "function": {"name": "other"}})
    [call] = (await model_turn(client, forced))["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "other", "arguments": '{"input": "x"}'}
    none = await model_turn(client, tool_chat_body("x", tool_choice="none"))
    assert none["choices"][0]["finish_reason"] == "stop"


async def test_no_tools_no_tool_calls(make_sim: Any) -> None:
    client = await make_sim()
    tools: list[Any] | None
    for tools in ([], None):
        body = chat_body("plain [sim:tool_rounds=2]") | ({"tools": tools} if tools == [] else {})
        assert (await model_turn(client, body))["choices"][0]["finish_reason"] == "stop"


async def test_the_prompt_with_its_directives_flows_into_the_arguments(make_sim: Any) -> None:
    client = await make_sim()
    body = {"model": "sim-small", "tools": [LOOKUP], "messages": [
        {"role": "user", "content": "first [sim:tool_fail=503 times=1]"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "second"}]}
    [call] = (await model_turn(client, body))["choices"][0]["message"]["tool_calls"]
    assert json.loads(call["function"]["arguments"])["query"] == (
        "first [sim:tool_fail=503 times=1]")


@pytest.mark.parametrize(("patch", "param"), [
    ({"tools": {"type": "function"}}, "tools"),
    ({"tools": [{"type": "retrieval"}]}, "tools"),
    ({"tools": [{"type": "function", "function": {"description": "no name"}}]}, "tools"),
    ({"tool_choice": {"type": "function", "function": {"name": "missing"}}}, "tool_choice"),
])
async def test_bad_tools_are_refused(make_sim: Any, patch: dict[str, Any], param: str) -> None:
    client = await make_sim()
    resp = await client.post("/v1/chat/completions", json=tool_chat_body("x") | patch)
    assert resp.status == 400 and (await resp.json())["error"]["param"] == param


async def test_tool_messages_must_answer_the_calls_before_them(make_sim: Any) -> None:
    client = await make_sim()
    body = tool_chat_body("x [sim:tool_calls=2]")
    choice = (await model_turn(client, body))["choices"][0]
    complete = answer_calls(body, choice)
    unanswered = {**complete, "messages": complete["messages"][:-1]}
    stray = {**body, "messages": [*body["messages"],
                                  {"role": "tool", "tool_call_id": "call_x", "content": "?"}]}
    for bad, words in ((unanswered, "did not have response"), (stray, "must answer")):
        resp = await client.post("/v1/chat/completions", json=bad)
        error = (await resp.json())["error"]
        assert resp.status == 400 and error["param"] == "messages" and words in error["message"]


async def test_faults_still_apply_to_tool_requests(make_sim: Any) -> None:
    client = await make_sim()
    body = tool_chat_body("x [sim:fail=503 times=1]")
    assert (await client.post("/v1/chat/completions", json=body)).status == 503
    assert (await model_turn(client, body))["choices"][0]["finish_reason"] == "tool_calls"
    randomly = await make_sim(rate_5xx=1.0)
    assert (await randomly.post("/v1/chat/completions",
                                json=tool_chat_body("plain"))).status == 503


# --- the HTTP tool executor -------------------------------------------------------

TOOL_HEADERS = {"Authorization": "Bearer tool-secret", "Relay-Batch-Id": "batch_1",
                "Relay-Round": "2", "Relay-Call-Id": "rc_1"}


def executor_body(*arguments: str, custom_id: str = "row-1") -> dict[str, Any]:
    return {"custom_id": custom_id, "context": {"tenant": "t1"}, "tool_calls": [
        {"id": f"call_{i}", "type": "function",
         "function": {"name": "lookup", "arguments": json.dumps({"query": a})}}
        for i, a in enumerate(arguments)]}


async def execute(client: TestClient, body: Any, **headers: str) -> aiohttp.ClientResponse:
    resp = await client.post("/_sim/tools", json=body, headers={**TOOL_HEADERS, **headers})
    await resp.read()
    return resp


async def test_the_executor_answers_one_result_per_call_in_order(make_sim: Any) -> None:
    client = await make_sim()
    resp = await execute(client, executor_body("a", "b"))
    assert resp.status == 200 and resp.headers["X-Relay-Simulated"] == "true"
    assert await resp.json() == {"results": [
        {"tool_call_id": "call_0", "content": 'lookup({"query": "a"}) = ok#2 (call_0)'},
        {"tool_call_id": "call_1", "content": 'lookup({"query": "b"}) = ok#2 (call_1)'}]}


async def test_the_executor_records_every_call(make_sim: Any) -> None:
    client = await make_sim()
    body = executor_body("a")
    await execute(client, body, **{"Relay-Extra": "x"})
    await client.post("/_sim/tools", data=b"{oops")
    data = (await (await client.get("/_sim/tool_calls")).json())["data"]
    assert [(r["method"], r["path"], r["status"]) for r in data] == [
        ("POST", "/_sim/tools", 200), ("POST", "/_sim/tools", 400)]
    assert data[0]["headers"] == {**TOOL_HEADERS, "Relay-Extra": "x"}
    assert data[0]["body"] == body and isinstance(data[0]["at"], float)
    assert data[1]["headers"]["Authorization"] is None
    assert data[1]["body"] is None and data[1]["raw"] == "{oops"
    assert (await (await client.get("/_sim/stats")).json())["requests"] == 0
    await client.post("/_sim/reset")
    assert (await (await client.get("/_sim/tool_calls")).json()) == {"data": []}


@pytest.mark.parametrize("body", [[1], {"tool_calls": []}, {"tool_calls": [{"id": "x"}]},
                                  {"tool_calls": [{"function": {"name": "f"}}]}])
async def test_the_executor_refuses_a_broken_contract(make_sim: Any, body: Any) -> None:
    resp = await execute(await make_sim(), body)
    assert resp.status == 400 and (await resp.json())["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("status", [503, 429, 400])
async def test_tool_fail_always_fails(make_sim: Any, status: int) -> None:
    client = await make_sim()
    for _ in range(2):
        resp = await execute(client, executor_body(f"x [sim:tool_fail={status}]"))
        assert resp.status == status and "error" in await resp.json()
        assert resp.headers.get("Retry-After") == ("0" if status == 429 else None)


async def test_tool_fail_times_counts_per_relay_call_id(make_sim: Any) -> None:
    client = await make_sim()
    body = executor_body("x [sim:tool_fail=503 times=2]")
    statuses = [(await execute(client, body, **{"Relay-Call-Id": rc})).status
                for rc in ("a", "b", "a", "a", "b", "b")]
    assert statuses == [503, 503, 503, 200, 503, 200]
    await client.post("/_sim/reset")
    assert (await execute(client, body, **{"Relay-Call-Id": "a"})).status == 503


async def test_tool_sleep_delays_the_answer(make_sim: Any) -> None:
    client = await make_sim()
    started = time.perf_counter()
    resp = await execute(client, executor_body("x [sim:tool_sleep=50]"))
    assert resp.status == 200 and time.perf_counter() - started >= 0.05


async def test_tool_garbage_is_a_200_that_is_not_json(make_sim: Any) -> None:
    resp = await execute(await make_sim(), executor_body("x [sim:tool_garbage]"))
    assert resp.status == 200
    with pytest.raises(ValueError):
        json.loads(await resp.text())


async def test_tool_mismatch_answers_other_ids(make_sim: Any) -> None:
    resp = await execute(await make_sim(), executor_body("a", "b [sim:tool_mismatch]"))
    ids = [r["tool_call_id"] for r in (await resp.json())["results"]]
    assert resp.status == 200 and ids == ["mismatch_call_0", "mismatch_call_1"]


async def test_a_malformed_tool_directive_is_a_400(make_sim: Any) -> None:
    resp = await execute(await make_sim(), executor_body("x [sim:tool_fail=abc]"))
    assert resp.status == 400 and "tool_fail" in (await resp.json())["error"]["message"]


async def test_model_and_executor_together(make_sim: Any) -> None:
    """The loop Relay runs: model → executor → model, the prompt's directives riding along."""
    client = await make_sim()
    body = tool_chat_body("Plan a trip [sim:tool_rounds=2 tool_calls=2] "
                          "[sim:tool_fail=503 times=1]")
    for round_ in (1, 2):
        choice = (await model_turn(client, body))["choices"][0]
        calls = choice["message"]["tool_calls"]
        request = {"custom_id": "row-1", "context": None, "tool_calls": calls}
        headers = {"Relay-Round": str(round_), "Relay-Call-Id": f"row-1/{round_}"}
        assert (await execute(client, request, **headers)).status == 503
        resp = await execute(client, request, **headers)
        results = (await resp.json())["results"]
        assert [r["tool_call_id"] for r in results] == [c["id"] for c in calls]
        body = {**body, "messages": [*body["messages"], choice["message"],
                                     *({"role": "tool", **r} for r in results)]}
    final = await model_turn(client, body)
    content = final["choices"][0]["message"]["content"]
    assert content.startswith("Tool results: lookup(") and content.count(" = ok#") == 4
    assert content.index("ok#1") < content.index("ok#2")


def test_main_refuses_a_bad_mcp_port(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        main(["--port", "0", "--mcp-port", "70000"])
    assert "mcp-port" in capsys.readouterr().err


def test_a_sigterm_as_soon_as_it_listens_is_a_clean_stop() -> None:
    """The signal handlers are in place before the startup lines are printed."""
    for _ in range(3):
        sim = Simulator.start()
        sim.stop()
        assert sim.proc.returncode == 0


def test_tool_round_limits_the_executor_faults_to_one_round() -> None:
    directive = parse_directive("x [sim:tool_sleep=500 tool_round=2]")
    assert directive is not None and (directive.tool_round, directive.tool_sleep_ms) == (2, 500)


@pytest.mark.parametrize("key", ["openrelay", "tool_config"])
def test_relays_own_keys_are_refused_as_a_provider_would(key: str) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_chat({"model": "m", "messages": [{"role": "user", "content": "x"}], key: {}})
    assert refused.value.param == key


# --- the workflow callback --------------------------------------------------------

WF_HEADERS = {"Authorization": "Bearer wf-secret", "Relay-Signature": "t=1700000000,v1=abc"}
TEXT = "One. Two! Three?\n\nFour five\n\nSix. Seven. Eight. Nine. Ten."


def wf_input(text: str, model: str = "sim-small") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "system", "content": "Be brief."},
                                         {"role": "user", "content": "ignored"},
                                         {"role": "user", "content": text}]}


def wf_event(kind: str, step: int, event_id: str, *, custom_id: str = "row-1",
             input_: dict[str, Any] | None = None,
             results: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": f"workflow.{kind}", "event_id": event_id, "batch_id": "batch_1",
        "custom_id": custom_id, "step": step, "context": {"tenant": "t1"},
        "totals": {"steps": step, "requests": 0, "input_tokens": 0, "output_tokens": 0}}
    if input_ is not None:
        event["input"] = input_
    if results is not None:
        event["results"] = results
    return event


async def wf_post(client: TestClient, event: dict[str, Any]) -> aiohttp.ClientResponse:
    resp = await client.post("/_sim/workflow", json=event,
                             headers={**WF_HEADERS, "Relay-Event-Id": event["event_id"]})
    await resp.read()
    return resp


async def wf_answer(client: TestClient, event: dict[str, Any]) -> dict[str, Any]:
    resp = await wf_post(client, event)
    assert resp.status == 200 and resp.headers["X-Relay-Simulated"] == "true"
    answer: dict[str, Any] = await resp.json()
    return answer


async def run_requests(client: TestClient, answer: dict[str, Any]) -> list[dict[str, Any]]:
    """What Relay does with a `continue`: run each request (here, on the simulator)."""
    assert answer["action"] == "continue"
    results = []
    for i, request in enumerate(answer["requests"]):
        assert request["url"] == "/v1/chat/completions"
        resp = await client.post(request["url"], json=request["body"])
        results.append({"index": i, "status_code": resp.status, "body": await resp.json()})
    return results


def prompts(answer: dict[str, Any]) -> list[str]:
    return [r["body"]["messages"][-1]["content"] for r in answer["requests"]]


def content(result: dict[str, Any]) -> str:
    text: str = result["body"]["choices"][0]["message"]["content"]
    return text


@pytest.mark.parametrize(("text", "fanout", "chunks"), [
    (TEXT, None, ["One. Two!", "Three? Four five", "Six. Seven.", "Eight. Nine. Ten."]),
    (TEXT, 3, ["One. Two! Three?", "Four five Six. Seven.", "Eight. Nine. Ten."]),
    (TEXT, 1, [" ".join(TEXT.split())]),
    ("A.  B.", None, ["A.", "B."]),
    ("A. B.", 5, ["A.", "B.", "A.", "B.", "A."]),
    ("no  sentence\nend", None, ["no sentence end"]),
    ("", None, [""]),
    ("  ", 2, ["", ""]),
])
def test_split_chunks(text: str, fanout: int | None, chunks: list[str]) -> None:
    assert split_chunks(text, fanout) == chunks


@pytest.mark.parametrize(("text", "expected"), [
    ("[sim:wf_fanout=256]", Directive(wf_fanout=256)),
    ("[sim:wf_wait=1500]", Directive(wf_wait_ms=1500)),
    ("[sim:wf_fail] [sim:wf_garbage]", Directive(wf_fail=True, wf_garbage=True)),
    ("[sim:wf_http=503]", Directive(wf_http=503)),
    ("[sim:wf_http=429 times=2]", Directive(wf_http=429, wf_times=2)),
    ("[sim:wf_http=503 wf_times=1]", Directive(wf_http=503, wf_times=1)),
    ("[sim:fail=500 wf_http=503 times=1]", Directive(fail=500, wf_http=503, times=1)),
    ("[sim:wf_steps=3, wf_sleep=2.5, wf_stall=4]",
     Directive(wf_steps=3, wf_sleep_ms=2.5, wf_stall=4)),
])
def test_parse_workflow_directives(text: str, expected: Directive) -> None:
    assert parse_directive(text) == expected


@pytest.mark.parametrize("text", [
    "[sim:wf_fanout=0]", "[sim:wf_fanout=257]", "[sim:wf_http=200]", "[sim:wf_wait=-1]",
    "[sim:wf_steps=x]", "[sim:wf_stall=257]", "[sim:wf_fail=1]", "[sim:wf_dance]",
])
def test_parse_workflow_directives_refuses_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="sim"):
        parse_directive(text)


async def test_the_workflow_maps_then_reduces_then_completes(make_sim: Any) -> None:
    client = await make_sim()
    started = await wf_answer(client, wf_event("started", 0, "ev-0", input_=wf_input(
        "One. Two.\n\nThree. [sim:wf_fanout=3]", model="sim-large")))
    assert started == {"action": "continue", "requests": [
        {"url": "/v1/chat/completions", "body": {"model": "sim-large", "messages": [
            {"role": "user", "content": f"Summarise: {chunk}"}]}}
        for chunk in ("One.", "Two.", "Three.")]}
    mapped = await run_requests(client, started)
    reduce = await wf_answer(client, wf_event("results", 1, "ev-1", results=mapped))
    assert [r["body"]["model"] for r in reduce["requests"]] == ["sim-large"]
    assert prompts(reduce) == ["Reduce: " + " | ".join(content(r) for r in mapped)]
    assert prompts(reduce)[0].startswith("Reduce: Simulated reply (sim-large): Summarise: One.")
    [reduced] = await run_requests(client, reduce)
    done = await wf_answer(client, wf_event("results", 2, "ev-2", results=[reduced]))
    assert done == {"action": "completed",
                    "output": {"summary": content(reduced), "chunks": 3}}


async def test_the_reduce_step_reads_results_in_index_order_and_shows_errors(
        make_sim: Any) -> None:
    client = await make_sim()
    await wf_answer(client, wf_event("started", 0, "ev-0", input_=wf_input("A. B. C.")))
    ok = {"status_code": 200, "body": {"choices": [{"message": {"content": "sum-a"}}]}}
    results = [{"index": 2, "status_code": 502, "body": {"error": {}}},
               {"index": 1, "error": {"code": "upstream_timeout", "message": "slow"}},
               {"index": 0, **ok}]
    reduce = await wf_answer(client, wf_event("results", 1, "ev-1", results=results))
    assert prompts(reduce) == ["Reduce: sum-a | [error: upstream_timeout] | [error: http_502]"]
    failed = {"index": 0, "error": {"code": "rate_limited", "message": "no"}}
    done = await wf_answer(client, wf_event("results", 2, "ev-2", results=[failed]))
    assert done["action"] == "failed" and done["error"]["code"] == "sim_reduce_failed"
    assert "[error: rate_limited]" in done["error"]["message"]


async def test_a_repeated_event_gets_the_same_answer(make_sim: Any) -> None:
    client = await make_sim()
    start = wf_event("started", 0, "ev-0", input_=wf_input(TEXT))
    first = await wf_answer(client, start)
    assert await wf_answer(client, start) == first and len(first["requests"]) == 4
    mapped = await run_requests(client, first)
    results = wf_event("results", 1, "ev-1", results=mapped)
    reduce = await wf_answer(client, results)
    assert await wf_answer(client, results) == reduce  # the same Relay-Event-Id
    assert await wf_answer(client, {**results, "event_id": "ev-1b"}) == reduce  # same step
    assert await wf_answer(client, start) == first  # still, after the record moved on
    [reduced] = await run_requests(client, reduce)
    done = await wf_answer(client, wf_event("results", 2, "ev-2", results=[reduced]))
    assert done["action"] == "completed" and done["output"]["chunks"] == 4
    assert await wf_answer(client, wf_event("results", 2, "ev-2", results=[])) == done


async def test_without_a_step_only_the_event_id_marks_a_repeat(make_sim: Any) -> None:
    client = await make_sim()
    start = wf_event("started", 0, "ev-0", input_=wf_input("A. [sim:wf_steps=1]"))
    del start["step"]
    assert prompts(await wf_answer(client, start)) == ["Step 1 of 1: warm up."]
    results = wf_event("results", 0, "ev-1", results=[])
    del results["step"]
    assert prompts(await wf_answer(client, results)) == ["Summarise: A."]
    assert prompts(await wf_answer(client, results)) == ["Summarise: A."]
    reduce = await wf_answer(client, {**results, "event_id": "ev-2"})
    assert prompts(reduce) == ["Reduce: "]


async def test_records_are_kept_apart_and_a_new_started_starts_over(make_sim: Any) -> None:
    client = await make_sim()
    one = await wf_answer(client, wf_event("started", 0, "a-0", custom_id="a",
                                           input_=wf_input("A. [sim:wf_fanout=2]")))
    two = await wf_answer(client, wf_event("started", 0, "b-0", custom_id="b",
                                           input_=wf_input("B.")))
    assert (len(one["requests"]), len(two["requests"])) == (2, 1)
    reduce = await wf_answer(client, wf_event("results", 1, "a-1", custom_id="a", results=[]))
    assert prompts(reduce) == ["Reduce: "]
    again = await wf_answer(client, wf_event("started", 0, "a-0-retry", custom_id="a",
                                             input_=wf_input("C. D. E.")))
    assert prompts(again) == ["Summarise: C.", "Summarise: D.", "Summarise: E."]
    reduce = await wf_answer(client, wf_event("results", 1, "a-1-retry", custom_id="a",
                                              results=[]))
    assert reduce["action"] == "continue" and prompts(reduce) == ["Reduce: "]


async def test_an_event_of_an_unknown_record_is_answered_failed(make_sim: Any) -> None:
    client = await make_sim()
    answer = await wf_answer(client, wf_event("results", 1, "ev-1", results=[]))
    assert answer["action"] == "failed" and answer["error"]["code"] == "sim_unknown_record"


async def test_wf_wait_answers_wait_then_maps_on_the_tick(make_sim: Any) -> None:
    client = await make_sim()
    started = wf_event("started", 0, "ev-0", input_=wf_input("A. B. [sim:wf_wait=1500]"))
    assert await wf_answer(client, started) == {"action": "wait", "delay_ms": 1500}
    tick = await wf_answer(client, wf_event("tick", 1, "ev-1"))
    assert prompts(tick) == ["Summarise: A.", "Summarise: B."]


async def test_wf_steps_runs_small_steps_before_the_map_step(make_sim: Any) -> None:
    client = await make_sim()
    answer = await wf_answer(client, wf_event("started", 0, "ev-0",
                                              input_=wf_input("A. [sim:wf_steps=2]")))
    seen = [prompts(answer)]
    for step in (1, 2):
        answer = await wf_answer(client, wf_event("results", step, f"ev-{step}",
                                                  results=await run_requests(client, answer)))
        seen.append(prompts(answer))
    assert seen == [["Step 1 of 2: warm up."], ["Step 2 of 2: warm up."], ["Summarise: A."]]


@pytest.mark.parametrize(("directive", "expected"), [
    ("[sim:wf_fail]", {"action": "failed", "error": {
        "code": "sim_failed", "message": "SIMULATED workflow failure"}}),
    ("[sim:wf_garbage]", {"action": "dance"}),
    ("[sim:wf_garbage wf_fail wf_wait=1000]", {"action": "failed", "error": {
        "code": "sim_failed", "message": "SIMULATED workflow failure"}}),
])
async def test_wf_fail_and_wf_garbage_are_the_first_answer(
        make_sim: Any, directive: str, expected: dict[str, Any]) -> None:
    client = await make_sim()
    start = wf_event("started", 0, "ev-0", input_=wf_input(f"A. {directive}"))
    assert await wf_answer(client, start) == expected
    assert await wf_answer(client, start) == expected
    assert await wf_answer(client, wf_event("tick", 1, "ev-1")) == expected


@pytest.mark.parametrize("status", [503, 429, 401])
async def test_wf_http_always_fails(make_sim: Any, status: int) -> None:
    client = await make_sim()
    start = wf_event("started", 0, "ev-0", input_=wf_input(f"A. [sim:wf_http={status}]"))
    for _ in range(3):
        resp = await wf_post(client, start)
        assert resp.status == status and "error" in await resp.json()
        assert resp.headers.get("Retry-After") == ("0" if status == 429 else None)


async def test_wf_http_times_counts_deliveries_per_event_id(make_sim: Any) -> None:
    client = await make_sim()
    start = wf_event("started", 0, "ev-0", input_=wf_input("A. [sim:wf_http=503 times=2]"))
    statuses = [(await wf_post(client, start)).status for _ in range(3)]
    tick = wf_event("tick", 1, "ev-1")
    statuses += [(await wf_post(client, tick)).status for _ in range(3)]
    assert statuses == [503, 503, 200, 503, 503, 200]
    assert (await (await wf_post(client, start)).json())["action"] == "continue"


async def test_wf_sleep_delays_every_answer(make_sim: Any) -> None:
    client = await make_sim()
    started = time.perf_counter()
    resp = await wf_post(client, wf_event("started", 0, "ev-0",
                                          input_=wf_input("A. [sim:wf_sleep=50]")))
    assert resp.status == 200 and time.perf_counter() - started >= 0.05


async def test_wf_stall_holds_the_first_map_requests(make_sim: Any) -> None:
    client = await make_sim()
    answer = await wf_answer(client, wf_event("started", 0, "ev-0", input_=wf_input(
        "A. B. C. [sim:wf_stall=2 wf_fanout=3]")))
    assert prompts(answer) == ["Summarise: A. [sim:sleep=3000]",
                               "Summarise: B. [sim:sleep=3000]", "Summarise: C."]


async def test_other_directives_ride_along_on_the_map_requests(make_sim: Any) -> None:
    client = await make_sim()
    answer = await wf_answer(client, wf_event("started", 0, "ev-0", input_=wf_input(
        "A. [sim:fail=400] B. [sim:wf_fanout=2]")))
    assert prompts(answer) == ["Summarise: A. [sim:fail=400]", "Summarise: B. [sim:fail=400]"]
    mapped = [{"index": i, "status_code": r["status_code"], "error": {
        "code": r["body"]["error"]["type"], "message": r["body"]["error"]["message"]}}
        for i, r in enumerate(await run_requests(client, answer))]
    reduce = await wf_answer(client, wf_event("results", 1, "ev-1", results=mapped))
    assert prompts(reduce) == ["Reduce: [error: invalid_request_error] | "
                               "[error: invalid_request_error]"]


@pytest.mark.parametrize(("input_", "code"), [
    (wf_input("A. [sim:wf_fanout=0]"), "sim_bad_directive"),
    (wf_input("A. [sim:explode]"), "sim_bad_directive"),
    ({"messages": [{"role": "user", "content": "A."}]}, "sim_bad_input"),
])
async def test_a_bad_input_is_answered_failed(make_sim: Any, input_: dict[str, Any],
                                              code: str) -> None:
    answer = await wf_answer(await make_sim(), wf_event("started", 0, "ev-0", input_=input_))
    assert answer["action"] == "failed" and answer["error"]["code"] == code


@pytest.mark.parametrize("body", [
    [1], {"type": "workflow.cancelled", "event_id": "e", "batch_id": "b", "custom_id": "c"},
    {"type": "workflow.started", "event_id": "e", "batch_id": "b", "custom_id": "c"},
    {"type": "workflow.tick", "batch_id": "b", "custom_id": "c"},
    {"type": "workflow.tick", "event_id": "e", "batch_id": "b", "custom_id": 7},
    {"type": "workflow.tick", "event_id": "e", "batch_id": "b", "custom_id": "c", "step": -1},
    {"type": "workflow.results", "event_id": "e", "batch_id": "b", "custom_id": "c",
     "results": [1]},
])
async def test_the_callback_refuses_a_broken_contract(make_sim: Any, body: Any) -> None:
    resp = await (await make_sim()).post("/_sim/workflow", json=body)
    assert resp.status == 400 and (await resp.json())["error"]["type"] == "invalid_request_error"


async def test_the_callback_records_every_event(make_sim: Any) -> None:
    client = await make_sim()
    start = wf_event("started", 0, "ev-0", input_=wf_input("A. [sim:wf_http=429 times=1]"))
    await wf_post(client, start)
    answer = await wf_answer(client, start)
    await client.post("/_sim/workflow", data=b"{oops", headers={"Relay-Extra": "x"})
    data = (await (await client.get("/_sim/workflow_events")).json())["data"]
    assert [(r["method"], r["path"], r["status"]) for r in data] == [
        ("POST", "/_sim/workflow", 429), ("POST", "/_sim/workflow", 200),
        ("POST", "/_sim/workflow", 400)]
    assert data[0]["headers"] == {**WF_HEADERS, "Content-Type": "application/json",
                                  "Relay-Event-Id": "ev-0"}
    assert data[0]["body"] == start and json.loads(data[0]["raw"]) == start
    assert data[0]["answer"] is None and data[1]["answer"] == answer
    assert isinstance(data[0]["at"], float)
    assert data[2]["body"] is None and data[2]["raw"] == "{oops"
    assert data[2]["headers"]["Relay-Extra"] == "x" and data[2]["headers"]["Authorization"] is None
    assert (await (await client.get("/_sim/stats")).json())["requests"] == 0
    await client.post("/_sim/reset")
    assert (await (await client.get("/_sim/workflow_events")).json()) == {"data": []}
    forgotten = await wf_answer(client, wf_event("tick", 1, "ev-1"))
    assert forgotten["error"]["code"] == "sim_unknown_record"


def test_the_simulator_process_serves_the_workflow_callback() -> None:
    sim = Simulator.start()
    try:
        assert sim.workflow_url == sim.root + "/_sim/workflow"
        event = wf_event("started", 0, "ev-0", input_=wf_input("A. B."))
        resp = httpx.post(sim.workflow_url, json=event,
                          headers={**WF_HEADERS, "Relay-Event-Id": "ev-0"}, timeout=10)
        assert resp.status_code == 200 and len(resp.json()["requests"]) == 2
        [recorded] = sim.workflow_events()
        assert recorded["body"] == event and recorded["answer"] == resp.json()
        assert recorded["headers"]["Relay-Signature"] == WF_HEADERS["Relay-Signature"]
        sim.reset()
        assert sim.workflow_events() == []
    finally:
        sim.stop()


# --- huge answers (a client's response cap) -------------------------------------------

MiB = 1024 * 1024


@pytest.mark.parametrize(("text", "expected"), [
    ("[sim:huge]", Directive(huge=True)),
    ("[sim:huge=5]", Directive(huge_mb=5)),
    ("[sim:huge=4096 model=sim-large]", Directive(huge_mb=4096, model="sim-large")),
    ("[sim:tool_huge=2]", Directive(tool_huge_mb=2)),
])
def test_parse_huge_directives(text: str, expected: Directive) -> None:
    assert parse_directive(text) == expected


@pytest.mark.parametrize("text", ["[sim:huge=0]", "[sim:huge=4097]", "[sim:huge=big]",
                                  "[sim:tool_huge]"])
def test_parse_huge_directives_refuses_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="sim"):
        parse_directive(text)


def test_huge_is_the_weakest_fault() -> None:
    assert Directive(huge=True).fault == Directive(huge_mb=3).fault == "huge"
    assert Directive(garbage=True, huge=True).fault == "garbage"
    assert Directive(fail=503, huge_mb=3).fault == 503
    assert Directive(tool_huge_mb=3).fault is None  # the executor's, not the upstream's


def test_a_huge_answer_is_planned_at_its_size() -> None:
    options = SimOptions(huge_mb=7)
    sized = plan(Directive(huge_mb=3), model="m", seen=0, draw=Draw(0, 0), options=options)
    default = plan(Directive(huge=True), model="m", seen=0, draw=Draw(0, 0), options=options)
    assert (sized.kind, sized.status, sized.huge_mb) == ("huge", 200, 3)
    assert (default.kind, default.huge_mb) == ("huge", 7)
    scoped = Directive(huge_mb=3, model="sim-large")
    assert plan(scoped, model="sim-small", seen=0, draw=Draw(0, 0), options=options).kind \
        == "answer"


def test_rate_huge_is_the_last_band_of_the_draw() -> None:
    options = SimOptions(rate_reset=0.5, rate_huge=0.25, huge_mb=2)
    assert random_fault(options, 0.6) == "huge" and random_fault(options, 0.8) is None
    outcome = plan(None, model="m", seen=0, draw=Draw(0, 0.6), options=options)
    assert (outcome.kind, outcome.huge_mb) == ("huge", 2)


@pytest.mark.parametrize("bad", [{"huge_mb": 0}, {"huge_mb": 4097}, {"rate_huge": 1.5}])
def test_options_refuse_impossible_huge_values(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must"):
        SimOptions(**bad)


async def test_a_huge_answer_is_valid_json_of_its_size_without_content_length(
        make_sim: Any) -> None:
    client = await make_sim()
    resp = await client.post("/v1/chat/completions", json=chat_body("hi [sim:huge=1]"))
    raw = await resp.read()
    assert resp.status == 200 and "Content-Length" not in resp.headers
    assert len(raw) == MiB
    body = json.loads(raw)
    assert body["object"] == "chat.completion" and body["choices"][0]["message"]["content"]
    assert set(body["padding"]) == {"x"}


async def test_tool_huge_answers_valid_results_of_its_size(make_sim: Any) -> None:
    client = await make_sim()
    resp = await execute(client, executor_body("a [sim:tool_huge=1]"))
    raw = await resp.read()
    assert resp.status == 200 and len(raw) == MiB
    assert [r["tool_call_id"] for r in json.loads(raw)["results"]] == ["call_0"]


def test_the_huge_flags_reach_the_options() -> None:
    from daemon.simulator.cli import build_parser, options_from

    args = build_parser().parse_args(["--port", "0", "--rate-huge", "0.5", "--huge-mb", "3"])
    options = options_from(args)
    assert (options.rate_huge, options.huge_mb) == (0.5, 3)
    assert build_parser().parse_args(["--port", "0"]).huge_mb == 100


@pytest.mark.parametrize("size", ["0", "4097", "1.5"])
def test_main_refuses_a_bad_huge_mb(size: str, capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--port", "1", "--huge-mb", size])
    assert exit_.value.code == 2 and "--huge-mb" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "expected"), [
    ("[sim:prompt_tokens=9223372036854775813]", Directive(usage_prompt=9223372036854775813)),
    ("[sim:completion_tokens=-5 prompt_tokens=0]",
     Directive(usage_prompt=0, usage_completion=-5)),
])
def test_parse_usage_directives(text: str, expected: Directive) -> None:
    assert parse_directive(text) == expected
    assert not expected.applies_to("sim-small")  # a usage is no fault


@pytest.mark.parametrize("text", ["[sim:prompt_tokens=1.5]",
                                  "[sim:prompt_tokens=" + "9" * 31 + "]"])
def test_parse_usage_directives_refuses_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="prompt_tokens"):
        parse_directive(text)


async def test_an_answer_reports_the_usage_a_directive_gives(make_sim: Any) -> None:
    """Any integer, as an untrusted upstream might; scoped by `model=` like a fault."""
    client = await make_sim()
    prompt = "x [sim:prompt_tokens=9223372036854775813 completion_tokens=-7 model=sim-small]"
    body = await (await chat(client, prompt, "sim-small")).json()
    assert body["usage"] == {"prompt_tokens": 9223372036854775813, "completion_tokens": -7,
                             "total_tokens": 9223372036854775806}
    assert body["choices"][0]["message"]["content"].startswith("Simulated reply")
    other = await (await chat(client, prompt, "sim-large")).json()
    assert other["usage"]["completion_tokens"] >= 0  # its own count


# --- big transcripts and workflow states ----------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("[sim:tool_content=300]", Directive(tool_content_kb=300)),
    ("[sim:wf_pad=30 wf_fanout=256]", Directive(wf_pad_kb=30, wf_fanout=256)),
])
def test_parse_size_directives(text: str, expected: Directive) -> None:
    assert parse_directive(text) == expected


@pytest.mark.parametrize("text", ["[sim:tool_content=0]", "[sim:tool_content=8193]",
                                  "[sim:wf_pad=1025]", "[sim:wf_pad=-1]", "[sim:wf_pad]"])
def test_parse_size_directives_refuses_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="sim"):
        parse_directive(text)


async def test_tool_content_makes_each_result_that_big(make_sim: Any) -> None:
    client = await make_sim()
    resp = await execute(client, executor_body("a [sim:tool_content=3]", "b"))
    results = (await resp.json())["results"]
    assert [r["tool_call_id"] for r in results] == ["call_0", "call_1"]
    assert [len(r["content"]) for r in results] == [3 * 1024] * 2
    assert results[0]["content"].startswith('lookup({"query": "a [sim:tool_content=3]"}) = ok#')


async def test_wf_pad_makes_each_map_request_that_much_longer(make_sim: Any) -> None:
    client = await make_sim()
    answer = await wf_answer(client, wf_event("started", 0, "ev-0", input_=wf_input(
        "A. B. [sim:wf_pad=2 wf_fanout=2]")))
    assert prompts(answer) == [f"Summarise: A. {'.' * 2048}", f"Summarise: B. {'.' * 2048}"]
