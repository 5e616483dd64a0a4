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
import pytest
from aiohttp.test_utils import TestClient

from daemon.simulator import (
    LOG_LIMIT,
    Directive,
    Draw,
    SimOptions,
    SimState,
    build_app,
    classify_sentiment,
    compose_reply,
    embed,
    latency_s,
    main,
    parse_directive,
    plan,
    random_fault,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def make_sim(aiohttp_client: Any) -> Any:
    async def make(**overrides: Any) -> TestClient:
        return await aiohttp_client(build_app(SimOptions(**overrides)))
    return make


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
def test_options_refuse_impossible_values(bad: dict[str, float]) -> None:
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
        "message": {"role": "assistant",
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
                     "by_status": {"429": 1, "200": 2, "400": 1}}
    data = (await (await client.get("/_sim/requests")).json())["data"]
    assert [(r["model"], r["prompt"], r["status"]) for r in data] == [
        ("sim-small", "first [sim:fail=429]", 429), ("sim-large", "second", 200),
        ("sim-embed", "third", 200), (None, "", 400)]
    assert all(isinstance(r["at"], float) for r in data)


async def test_reset_forgets_everything_and_reseeds(make_sim: Any) -> None:
    client = await make_sim(seed=3, **FAULTY)
    first = await fault_sequence(client, 10)
    assert (await chat(client, "z [sim:fail=503 times=1]")).status == 503
    resp = await client.post("/_sim/reset")
    assert resp.status == 200 and resp.headers["X-Relay-Simulated"] == "true"
    stats = await (await client.get("/_sim/stats")).json()
    assert stats == {"requests": 0, "by_model": {}, "by_status": {}}
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
