"""The router: retries, fallbacks, limits and outcomes, with a scripted upstream and fake time."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from typing import Any

import pytest

from daemon.config import ModelConfig, RetryConfig
from daemon.domain.outcome import Usage
from daemon.upstream.router import Router, classify, classify_error, upstream_message
from daemon.upstream.transport import FunctionTransport, Reply, TransportError, too_large

ENDPOINT = "/v1/chat/completions"
BODY = {"messages": [{"role": "user", "content": "hi"}]}
START = 1_700_000_000.0
LATENCY = 0.05


class TopRng(random.Random):
    def uniform(self, a: float, b: float) -> float:
        return b


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


class Upstream:
    """Answers each call with the next scripted reply (or raises it), recording what was sent."""

    def __init__(self, clock: Clock, script: dict[str, list[Reply | Exception]]) -> None:
        self.clock = clock
        self.script = {alias: list(replies) for alias, replies in script.items()}
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    async def __call__(self, model: ModelConfig, endpoint: str, payload: bytes) -> Reply:
        self.sent.append((model.alias, endpoint, json.loads(payload)))
        self.clock.now += LATENCY
        reply = self.script[model.alias].pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def ok(content: str = "hello", **usage: Any) -> Reply:
    body: dict[str, Any] = {"choices": [{"message": {"content": content}}]}
    if usage:
        body["usage"] = usage
    return Reply(200, {"Content-Type": "application/json"}, json.dumps(body).encode())


def status(code: int, message: str | None = None, **headers: str) -> Reply:
    body = json.dumps({"error": {"message": message}}).encode() if message else b""
    return Reply(code, headers, body)


def make_model(alias: str = "main", **overrides: Any) -> ModelConfig:
    fields: dict[str, Any] = {
        "alias": alias,
        "base_url": "http://upstream/v1",
        "model": f"{alias}-up",
    }
    return ModelConfig(**(fields | overrides))


def make_router(
    script: dict[str, list[Reply | Exception]],
    models: Sequence[ModelConfig] = (),
    *,
    attempts: int = 3,
) -> tuple[Router, Upstream, list[float]]:
    clock = Clock()
    upstream = Upstream(clock, script)
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        clock.now += seconds

    router = Router(
        models or [make_model()],
        RetryConfig(attempts=attempts, backoff_base_s=0.5, backoff_cap_s=30),
        transport=FunctionTransport(upstream),
        sleep=sleep,
        clock=clock,
        rng=TopRng(),
    )
    return router, upstream, delays


CHAIN = [make_model("main", fallbacks=("backup", "last")), make_model("backup"), make_model("last")]


# classify: one reply on its own


def test_classify_success() -> None:
    verdict = classify(ok(), alias="main")
    assert verdict.kind == "success"
    assert verdict.response is not None and verdict.status == 200


@pytest.mark.parametrize("code", [408, 409, 429, 500, 503])
def test_classify_transient(code: int) -> None:
    verdict = classify(status(code, **{"Retry-After": "3"}), alias="main")
    assert (verdict.kind, verdict.status, verdict.retry_after) == ("transient", code, "3")


@pytest.mark.parametrize("code", [400, 401, 404, 422, 301])
def test_classify_permanent(code: int) -> None:
    assert classify(status(code), alias="main").kind == "permanent"


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'"text"', b"", b"\xff\xfe"])
def test_classify_2xx_without_json_object(body: bytes) -> None:
    verdict = classify(Reply(200, {}, body), alias="main")
    assert verdict.kind == "permanent"
    assert verdict.error == (
        "invalid_response: main answered 200 with a body that is not a JSON object"
    )


def test_classify_reads_error_envelope() -> None:
    verdict = classify(status(400, "invalid model"), alias="main")
    assert verdict.error == "400 invalid model"


def test_classify_finds_retry_after_in_any_case() -> None:
    assert classify(status(429, **{"retry-after": "7"}), alias="main").retry_after == "7"


def test_classify_transport_error() -> None:
    verdict = classify_error(TransportError("timeout", "no answer"))
    assert verdict.kind == "transient" and verdict.status is None
    assert verdict.error == "timeout: no answer"


def test_upstream_message_is_truncated_and_tolerant() -> None:
    long = json.dumps({"error": {"message": "x" * 500}}).encode()
    assert len(upstream_message(long) or "") == 200
    assert upstream_message(b'{"error": "model not found"}') == "model not found"
    assert upstream_message(b'{"error": {"code": 5}}') is None
    assert upstream_message(b"<html>") is None


# Router.call: a row's whole trip


async def test_success_first_try() -> None:
    router, _, delays = make_router({"main": [ok(prompt_tokens=12, completion_tokens=3)]})
    outcome = await router.call("main", ENDPOINT, BODY)
    assert outcome.ok and outcome.model == "main" and outcome.status_code == 200
    assert outcome.response == json.loads(ok().body) | {
        "usage": {"prompt_tokens": 12, "completion_tokens": 3}
    }
    assert (outcome.usage.prompt_tokens, outcome.usage.completion_tokens) == (12, 3)
    [attempt] = outcome.attempts
    assert (attempt.model, attempt.status_code, attempt.error) == ("main", 200, None)
    assert attempt.started_at == START and attempt.duration_ms == 50
    assert delays == []


async def test_usage_missing_is_zero() -> None:
    router, _, _ = make_router({"main": [ok()]})
    outcome = await router.call("main", ENDPOINT, BODY)
    assert outcome.ok and outcome.usage == Usage()


@pytest.mark.parametrize(("usage", "problem"), [
    ({"prompt_tokens": 9223372036854775813},  # as the issue found it
     "usage.prompt_tokens = 9223372036854775813, not an integer from 0 to 1000000000"),
    ({"prompt_tokens": -1_000_000, "completion_tokens": 5},
     "usage.prompt_tokens = -1000000, not an integer from 0 to 1000000000"),
    ({"prompt_tokens": "12"}, 'usage.prompt_tokens = "12", not an integer from 0 to 1000000000'),
    ({"completion_tokens_details": {"reasoning_tokens": 10**16}},
     "usage.completion_tokens_details.reasoning_tokens = 10000000000000000, not an integer "
     "from 0 to 1000000000"),
])
async def test_untrusted_usage_fails_the_row_invalid_response_keeping_the_answer(
        usage: dict[str, Any], problem: str) -> None:
    """Not retried (the same request gets the same answer), the fallback is tried, and the
    answer is kept as the row's error body; nothing of its usage is counted."""
    bad = ok(**usage)
    router, _, delays = make_router({"main": [bad], "backup": [bad]},
                                    [make_model("main", fallbacks=("backup",)),
                                     make_model("backup")])
    outcome = await router.call("main", ENDPOINT, BODY)
    assert (outcome.ok, outcome.error_code, outcome.dead_letter) == (False, "invalid_response",
                                                                     False)
    assert outcome.error == (f"invalid_response: main answered 200 with {problem}; "
                             f"fallback backup: answered 200 with {problem} (not retried)")
    assert outcome.error_body == json.loads(bad.body)
    assert outcome.usage == Usage() and outcome.status_code == 200
    assert [a.model for a in outcome.attempts] == ["main", "backup"] and delays == []
    assert outcome.attempts[0].error == f"invalid_response: main answered 200 with {problem}"


async def test_untrusted_usage_does_not_charge_the_models_token_bucket() -> None:
    """A huge usage would otherwise put the model's tpm bucket in debt for ages."""
    router, _, delays = make_router({"main": [ok(prompt_tokens=10**16), ok(prompt_tokens=3)]},
                                    [make_model(tpm=6000)])
    assert not (await router.call("main", ENDPOINT, BODY)).ok
    assert (await router.call("main", ENDPOINT, BODY)).ok
    assert sum(delays) < 1  # paced by its estimate, not behind 10^16 tokens


async def test_usage_reads_cached_and_reasoning_tokens() -> None:
    router, _, _ = make_router({"main": [ok(prompt_tokens=40, completion_tokens=9,
                                            prompt_tokens_details={"cached_tokens": 32},
                                            completion_tokens_details={"reasoning_tokens": 5})]})
    outcome = await router.call("main", ENDPOINT, BODY)
    assert outcome.usage == Usage(40, 9, cached_tokens=32, reasoning_tokens=5)


async def test_transient_statuses_are_retried_with_backoff() -> None:
    router, _, delays = make_router({"main": [status(503), status(503), ok()]})
    outcome = await router.call("main", ENDPOINT, BODY)
    assert outcome.ok
    assert [a.status_code for a in outcome.attempts] == [503, 503, 200]
    assert [a.transient for a in outcome.attempts] == [True, True, False]
    assert delays == [0.5, 1.0]


class Lost(Exception):
    pass


async def test_the_fence_runs_before_every_try_after_its_waits() -> None:
    """Fencing: a row whose lease lapsed while it waited (a backoff, the model's pace or
    pause) sends nothing more: the fence is the last thing before each try goes out."""
    router, upstream, delays = make_router({"main": [status(503), ok()]})
    checked: list[int] = []

    def fence() -> None:
        checked.append(len(upstream.sent))
        if delays:  # frozen past the lease during the backoff
            raise Lost

    with pytest.raises(Lost):
        await router.call("main", ENDPOINT, BODY, fence=fence)
    assert checked == [0, 1] and len(upstream.sent) == 1


async def test_retry_after_is_honoured() -> None:
    router, _, delays = make_router({"main": [status(429, **{"Retry-After": "2"}), ok()]})
    assert (await router.call("main", ENDPOINT, BODY)).ok
    assert delays == [2.0]


async def test_permanent_failure_is_not_retried_and_falls_back() -> None:
    router, _, delays = make_router({"main": [status(400, "bad request")], "backup": [ok()]}, CHAIN)
    outcome = await router.call("main", ENDPOINT, BODY)
    assert outcome.ok and outcome.model == "backup"
    assert [(a.model, a.status_code) for a in outcome.attempts] == [("main", 400), ("backup", 200)]
    assert delays == []


async def test_fallbacks_are_tried_in_order() -> None:
    script: dict[str, list[Reply | Exception]] = {
        "main": [status(404)],
        "backup": [status(422)],
        "last": [ok()],
    }
    router, upstream, _ = make_router(script, CHAIN)
    outcome = await router.call("main", ENDPOINT, BODY)
    assert outcome.ok and outcome.model == "last"
    assert [alias for alias, _, _ in upstream.sent] == ["main", "backup", "last"]


async def test_only_the_primary_fallbacks_are_followed() -> None:
    models = [
        make_model("main", fallbacks=("backup", "backup")),
        make_model("backup", fallbacks=("hidden", "main")),
        make_model("hidden"),
    ]
    router, upstream, _ = make_router({"main": [status(400)], "backup": [status(400)]}, models)
    outcome = await router.call("main", ENDPOINT, BODY)
    assert not outcome.ok
    assert [alias for alias, _, _ in upstream.sent] == ["main", "backup"]


async def test_all_transient_is_dead_lettered_and_names_every_model() -> None:
    script: dict[str, list[Reply | Exception]] = {
        "main": [status(503)] * 3,
        "backup": [status(503)] * 3,
    }
    models = [make_model("main", fallbacks=("backup",)), make_model("backup")]
    router, _, delays = make_router(script, models)
    outcome = await router.call("main", ENDPOINT, BODY)
    assert not outcome.ok and outcome.dead_letter
    assert outcome.error == (
        "upstream_error: 503 from main after 3 attempts; fallback backup: 503 after 3 attempts"
    )
    assert outcome.status_code == 503 and outcome.model == "backup"
    assert len(outcome.attempts) == 6 and len(delays) == 4  # no sleep after a model's last try


async def test_transient_then_permanent_fallback_is_still_dead_lettered() -> None:
    script: dict[str, list[Reply | Exception]] = {
        "main": [status(503)] * 3,
        "backup": [status(400, "invalid model")],
    }
    models = [make_model("main", fallbacks=("backup",)), make_model("backup")]
    router, _, _ = make_router(script, models)
    outcome = await router.call("main", ENDPOINT, BODY)
    assert outcome.dead_letter and outcome.status_code == 400
    assert outcome.error == (
        "upstream_error: 503 from main after 3 attempts; "
        "fallback backup: 400 (not retried; upstream said: invalid model)"
    )


async def test_all_permanent_is_not_dead_lettered() -> None:
    script: dict[str, list[Reply | Exception]] = {
        "main": [status(401, "bad key")],
        "backup": [status(400)],
        "last": [status(404)],
    }
    router, _, delays = make_router(script, CHAIN)
    outcome = await router.call("main", ENDPOINT, BODY)
    assert not outcome.ok and not outcome.dead_letter
    assert outcome.error == (
        "upstream_error: 401 from main (not retried; upstream said: bad key); "
        "fallback backup: 400 (not retried); fallback last: 404 (not retried)"
    )
    assert delays == []


async def test_garbage_200_fails_the_row_without_retry() -> None:
    router, _, delays = make_router({"main": [Reply(200, {}, b"<html>oops</html>")]})
    outcome = await router.call("main", ENDPOINT, BODY)
    assert not outcome.ok and not outcome.dead_letter and outcome.status_code == 200
    assert (
        outcome.error == "invalid_response: main answered 200 with a body that is not a JSON object"
    )
    assert len(outcome.attempts) == 1 and delays == []


async def test_timeouts_are_retried() -> None:
    router, _, delays = make_router({"main": [TransportError("timeout", "slow"), ok()]})
    outcome = await router.call("main", ENDPOINT, BODY)
    assert outcome.ok
    first = outcome.attempts[0]
    assert (first.status_code, first.error, first.transient) == (None, "timeout: slow", True)
    assert delays == [0.5]


async def test_timeouts_exhausted() -> None:
    router, _, _ = make_router({"main": [TransportError("timeout", "slow")] * 3})
    outcome = await router.call("main", ENDPOINT, BODY)
    assert outcome.dead_letter and outcome.status_code is None
    assert outcome.error == "upstream_error: timeout from main after 3 attempts"


async def test_payload_substitutes_model_and_strips_reserved_key() -> None:
    router, upstream, _ = make_router({"main": [ok()]})
    body = {**BODY, "model": "main", "temperature": 0, "openrelay": {"tools": []}}
    await router.call("main", ENDPOINT, body)
    [(_, endpoint, sent)] = upstream.sent
    assert endpoint == ENDPOINT
    assert sent == {**BODY, "model": "main-up", "temperature": 0}
    assert body["model"] == "main" and "openrelay" in body  # the caller's dict is untouched


async def test_unknown_alias() -> None:
    router, upstream, _ = make_router({})
    outcome = await router.call("nope", ENDPOINT, BODY)
    assert not outcome.ok and not outcome.dead_letter and outcome.attempts == ()
    assert outcome.error is not None and outcome.error.startswith("model_not_found: ")
    assert upstream.sent == []


async def test_per_model_limit_caps_requests_in_flight() -> None:
    gate = asyncio.Event()
    in_flight = peak = 0

    async def handler(model: ModelConfig, endpoint: str, payload: bytes) -> Reply:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await gate.wait()
        in_flight -= 1
        return ok()

    router = Router(
        [make_model(max_concurrency=2)], RetryConfig(), transport=FunctionTransport(handler)
    )
    calls = [asyncio.create_task(router.call("main", ENDPOINT, BODY)) for _ in range(5)]
    for _ in range(10):
        await asyncio.sleep(0)
    assert (in_flight, peak) == (2, 2)
    gate.set()
    outcomes = await asyncio.gather(*calls)
    assert all(o.ok for o in outcomes) and peak == 2


async def test_limit_is_not_held_during_backoff() -> None:
    in_backoff = asyncio.Event()
    leave_backoff = asyncio.Event()
    replies = [status(503), ok(), ok()]

    async def handler(model: ModelConfig, endpoint: str, payload: bytes) -> Reply:
        return replies.pop(0)

    async def sleep(seconds: float) -> None:
        in_backoff.set()
        await leave_backoff.wait()

    router = Router(
        [make_model(max_concurrency=1)],
        RetryConfig(),
        transport=FunctionTransport(handler),
        sleep=sleep,
    )
    first = asyncio.create_task(router.call("main", ENDPOINT, BODY))
    await in_backoff.wait()
    second = await asyncio.wait_for(router.call("main", ENDPOINT, BODY), timeout=1)
    assert second.ok
    leave_backoff.set()
    assert (await first).ok


async def test_aclose_closes_the_transport() -> None:
    closed = []

    class Closing(FunctionTransport):
        async def close(self) -> None:
            closed.append(True)

    router = Router([make_model()], RetryConfig(), transport=Closing(Upstream(Clock(), {})))
    await router.aclose()
    assert closed == [True]


async def test_aclose_without_a_closable_transport_is_harmless() -> None:
    router, _, _ = make_router({})
    await router.aclose()


# An answer over [gateway] max_response_mb

def too_big() -> TransportError:
    return too_large(200, 8 * 1024 * 1024)


def test_classify_an_answer_over_the_cap_as_permanent() -> None:
    verdict = classify_error(too_big())
    assert (verdict.kind, verdict.code, verdict.status) == ("permanent", "response_too_large", 200)
    assert verdict.error == ("response_too_large: answered 200 with a body over the 8 MB "
                             "limit ([gateway] max_response_mb)")


async def test_an_answer_over_the_cap_is_not_retried_and_fails_the_row() -> None:
    router, upstream, delays = make_router({"main": [too_big()]})
    outcome = await router.call("main", ENDPOINT, BODY)
    assert not outcome.ok and not outcome.dead_letter
    assert outcome.error_code == "response_too_large" and outcome.status_code == 200
    assert outcome.error == ("response_too_large: main answered 200 with a body over the "
                             "8 MB limit ([gateway] max_response_mb)")
    assert len(upstream.sent) == 1 and delays == []
    assert outcome.attempts[0].transient is False


async def test_an_answer_over_the_cap_falls_back_like_other_permanent_failures() -> None:
    router, upstream, delays = make_router({"main": [too_big()], "backup": [ok()]}, CHAIN)
    outcome = await router.call("main", ENDPOINT, BODY)
    assert outcome.ok and outcome.model == "backup"
    assert [alias for alias, _, _ in upstream.sent] == ["main", "backup"] and delays == []


async def test_every_model_over_the_cap_names_each() -> None:
    script: dict[str, list[Reply | Exception]] = {"main": [too_big()], "backup": [too_big()],
                                                  "last": [status(400)]}
    router, _, _ = make_router(script, CHAIN)
    outcome = await router.call("main", ENDPOINT, BODY)
    assert not outcome.dead_letter and outcome.error_code == "response_too_large"
    assert outcome.error == (
        "response_too_large: main answered 200 with a body over the 8 MB limit ([gateway] "
        "max_response_mb); fallback backup: answered 200 with a body over the 8 MB limit "
        "([gateway] max_response_mb) (not retried); fallback last: 400 (not retried)")


# rate limits: pacing, pauses shared by every job, 429s that spend no attempt


class VirtualTime:
    """A clock and a sleep for several rows at once: `run` wakes the earliest sleeper
    whenever every task waits."""

    def __init__(self) -> None:
        self.now = START
        self.sleepers: list[tuple[float, int, asyncio.Future[None]]] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        self.sleepers.append((self.now + seconds, len(self.sleepers), future))
        await future

    async def run(self, *calls: Any) -> list[Any]:
        tasks = asyncio.gather(*calls)
        while not tasks.done():
            for _ in range(20):
                await asyncio.sleep(0)
            if self.sleepers:
                self.sleepers.sort(key=lambda s: s[:2])
                wake, _, future = self.sleepers.pop(0)
                self.now = max(self.now, wake)
                future.set_result(None)
        return tasks.result()


def timed_router(answers: list[Reply], models: Sequence[ModelConfig] = (), *,
                 attempts: int = 3) -> tuple[Router, VirtualTime, list[tuple[float, str]]]:
    """A router on virtual time whose upstream answers in arrival order, logging
    (when, alias) per call."""
    time = VirtualTime()
    calls: list[tuple[float, str]] = []

    async def upstream(model: ModelConfig, endpoint: str, payload: bytes) -> Reply:
        calls.append((time.now, model.alias))
        return answers.pop(0) if answers else ok()

    router = Router(models or [make_model()], RetryConfig(attempts=attempts),
                    transport=FunctionTransport(upstream), sleep=time.sleep, clock=time,
                    rng=TopRng())
    return router, time, calls


async def two_rows(router: Router, time: VirtualTime) -> list[Any]:
    """A row now and another a second later, on virtual time; their outcomes."""

    async def later_row() -> Any:
        await time.sleep(1)
        return await router.call("main", ENDPOINT, BODY)

    return await time.run(router.call("main", ENDPOINT, BODY), later_row())


async def test_a_429_pauses_the_model_for_every_job() -> None:
    limited = status(429, **{"Retry-After": "5", "x-ratelimit-remaining-requests": "0"})
    router, time, calls = timed_router([limited])
    first, second = await two_rows(router, time)
    assert first.ok and second.ok
    assert calls[0][0] == START
    assert [when for when, _ in calls[1:]] == [START + 5, START + 5]  # none during the pause
    assert router.model_states()["main"]["rate_limited"] == 1


async def test_a_bare_429_lowers_concurrency_and_only_its_row_waits() -> None:
    overloaded = status(429, **{"Retry-After": "5"})  # a server at capacity names no rate
    router, time, calls = timed_router([overloaded])
    first, second = await two_rows(router, time)
    assert first.ok and second.ok
    assert [when - START for when, _ in calls] == [0, 1, 5]  # the other row did not wait
    state = router.model_states()["main"]
    assert not state["paused"] and state["concurrency"] < make_model().max_concurrency


async def test_a_bare_429_pauses_a_model_whose_concurrency_is_fixed() -> None:
    overloaded = status(429, **{"Retry-After": "5"})
    router, time, calls = timed_router([overloaded], [make_model(adaptive=False)])
    await two_rows(router, time)
    assert [when - START for when, _ in calls] == [0, 5, 5]


async def test_paced_429s_spend_no_attempt_and_do_not_fall_back() -> None:
    limited = [status(429, **{"Retry-After": "1"})] * 3
    router, _, delays = make_router(
        {"main": [*limited, ok()], "backup": []},
        [make_model("main", fallbacks=("backup",)), make_model("backup")], attempts=1)
    outcome = await router.call("main", ENDPOINT, BODY)
    assert outcome.ok and outcome.model == "main"
    assert [a.status_code for a in outcome.attempts] == [429, 429, 429, 200]
    assert delays == [1.0, 1.0, 1.0]  # each the pause the upstream asked for


async def test_a_model_limited_for_good_still_ends_and_is_dead_lettered() -> None:
    from daemon.domain.ratelimit import RATE_LIMITED_TRIES

    limited: list[Reply | Exception] = [status(429, **{"Retry-After": "1"})] * (
        RATE_LIMITED_TRIES + 2)
    router, _, _ = make_router(
        {"main": limited, "backup": [ok()]},
        [make_model("main", fallbacks=("backup",)), make_model("backup")], attempts=2)
    outcome = await router.call("main", ENDPOINT, BODY)
    assert outcome.ok and outcome.model == "backup"  # fallbacks still apply after retries
    assert len([a for a in outcome.attempts if a.model == "main"]) == RATE_LIMITED_TRIES + 2


async def test_rpm_spaces_the_calls() -> None:
    router, time, calls = timed_router([], [make_model(rpm=60)])  # one a second, burst 1
    await time.run(*(router.call("main", ENDPOINT, BODY) for _ in range(4)))
    assert [when - START for when, _ in calls] == pytest.approx([0, 1, 2, 3])


async def test_a_limit_announced_by_the_upstream_paces_the_next_calls() -> None:
    announced = Reply(200, {"x-ratelimit-limit-requests": "120"}, ok().body)
    router, time, calls = timed_router([announced])
    await time.run(router.call("main", ENDPOINT, BODY))
    await time.run(*(router.call("main", ENDPOINT, BODY) for _ in range(3)))
    assert [when - START for when, _ in calls] == pytest.approx([0, 0, 0.5, 1.0])
    state = router.model_states()["main"]
    assert (state["rpm"], state["upstream_rpm"], state["paused"]) == (120, 120, False)


async def test_tpm_paces_by_the_estimate_and_usage_corrects_it() -> None:
    big = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100}
    router, time, calls = timed_router([ok(prompt_tokens=5, completion_tokens=5)] * 3,
                                       [make_model(tpm=6000)])  # 100 a second, burst 50
    await time.run(router.call("main", ENDPOINT, big))
    await time.run(router.call("main", ENDPOINT, big))
    # ~122 estimated (payload ÷ 4 + max_tokens): the first waits for 72 beyond the burst
    assert calls[0][0] - START == pytest.approx(0.72, abs=0.02)
    # it used 10, so the bucket is full again: the second waits as long, not 1.2 s
    assert calls[1][0] - calls[0][0] == pytest.approx(0.69, abs=0.03)
