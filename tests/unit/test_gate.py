"""A model's gate: slots that resize under waiting calls, and the adaptive limit wired to
the router's verdicts (`load_signal`). Virtual time; nothing sleeps."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from daemon.config import RetryConfig
from daemon.upstream.gate import Slots
from daemon.upstream.router import Router, Verdict, load_signal
from daemon.upstream.transport import FunctionTransport, TransportError
from tests.unit.test_router import BODY, ENDPOINT, make_model, ok, status


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.mark.parametrize(("verdict", "signal"), [
    (Verdict("success", status=200), "ok"),
    (Verdict("transient", status=429), "overload"),
    (Verdict("transient", what="timeout"), "overload"),
    (Verdict("transient", status=503, what="503"), "neutral"),
    (Verdict("transient", what="connection error"), "neutral"),
    (Verdict("permanent", status=400, what="400"), "neutral"),
])
def test_load_signal(verdict: Verdict, signal: str) -> None:
    assert load_signal(verdict) == signal


async def test_slots_serve_waiters_in_order_and_follow_a_resize() -> None:
    slots = Slots(2)
    await slots.acquire()
    await slots.acquire()
    order: list[int] = []

    async def wait(n: int) -> None:
        await slots.acquire()
        order.append(n)

    waiters = [asyncio.create_task(wait(n)) for n in range(3)]
    await settle()
    slots.resize(1)
    slots.release()  # 1 taken, limit 1: nobody goes
    await settle()
    assert order == [] and slots.taken == 1
    slots.resize(3)  # two go, in order
    await settle()
    assert order == [0, 1] and slots.taken == 3
    slots.release()
    await settle()
    assert order == [0, 1, 2]
    await asyncio.gather(*waiters)


async def test_a_cancelled_waiter_gives_up_its_place() -> None:
    slots = Slots(1)
    await slots.acquire()
    first = asyncio.create_task(slots.acquire())
    second = asyncio.create_task(slots.acquire())
    await settle()
    first.cancel()
    await settle()
    slots.release()
    await settle()
    assert first.cancelled() and second.done() and slots.taken == 1


def burst_router(replies: list[Any], **model: Any) -> tuple[Router, asyncio.Event, list[int]]:
    """A router whose upstream holds each call until `release` is set, then answers the
    next reply; it logs how many calls it held at once."""
    release = asyncio.Event()
    held = [0, 0]  # now, peak

    async def upstream(*_: Any) -> Any:
        held[0] += 1
        held[1] = max(held)
        await release.wait()
        held[0] -= 1
        reply = replies.pop(0) if replies else ok()
        if isinstance(reply, Exception):
            raise reply
        return reply

    async def no_sleep(_: float) -> None:
        await asyncio.sleep(0)

    router = Router([make_model(max_concurrency=8, **model)],
                    RetryConfig(retry_after_cap_s=0), transport=FunctionTransport(upstream),
                    sleep=no_sleep)
    return router, release, held


async def test_a_burst_of_429s_halves_the_concurrency_once() -> None:
    limited = status(429, **{"x-ratelimit-remaining-requests": "0"})
    router, release, held = burst_router([limited] * 4)
    calls = [asyncio.create_task(router.call("main", ENDPOINT, BODY)) for _ in range(8)]
    await settle()
    assert held == [8, 8]
    release.set()
    outcomes = await asyncio.gather(*calls)
    assert all(o.ok for o in outcomes)
    state = router.model_states()["main"]
    # 8 → 4 once; the four retried rows then filled 4 and all succeeded: halfway back up
    assert (state["concurrency_good"], state["concurrency_failed"]) == (4, 8)
    assert (state["concurrency"], state["adaptive"], state["in_flight"]) == (6, True, 0)


async def test_a_timeout_is_an_overload_too() -> None:
    router, release, _ = burst_router([TransportError("timeout", "read timed out")])
    calls = [asyncio.create_task(router.call("main", ENDPOINT, BODY)) for _ in range(8)]
    await settle()
    release.set()
    await asyncio.gather(*calls)
    assert router.model_states()["main"]["concurrency_failed"] == 8


async def test_the_level_that_failed_is_what_was_in_flight() -> None:
    router, release, _ = burst_router([status(429)])  # 8 allowed, 3 sent, one refused
    calls = [asyncio.create_task(router.call("main", ENDPOINT, BODY)) for _ in range(3)]
    await settle()
    release.set()
    await asyncio.gather(*calls)
    state = router.model_states()["main"]
    assert state["concurrency_failed"] == 3  # not 8, an allowance never filled
    assert state["concurrency"] < 3


async def test_adaptive_false_keeps_max_concurrency() -> None:
    router, release, _ = burst_router([status(429)] * 4, adaptive=False)
    release.set()
    await asyncio.gather(*(router.call("main", ENDPOINT, BODY) for _ in range(8)))
    state = router.model_states()["main"]
    assert (state["concurrency"], state["adaptive"], state["concurrency_failed"]) == (
        8, False, None)


async def test_a_lower_limit_holds_the_next_calls() -> None:
    router, release, held = burst_router([status(429)])
    first = [asyncio.create_task(router.call("main", ENDPOINT, BODY)) for _ in range(8)]
    await settle()
    release.set()
    await asyncio.gather(*first)  # the 429 at 8 in flight halved the limit to 4
    assert router.model_states()["main"]["concurrency"] == 4
    release.clear()
    calls = [asyncio.create_task(router.call("main", ENDPOINT, BODY)) for _ in range(8)]
    await settle()
    assert held[0] == 4
    release.set()
    await asyncio.gather(*calls)


async def test_a_waiter_cancelled_as_a_slot_frees_leaves_quietly() -> None:
    slots = Slots(1)
    await slots.acquire()
    waiting = asyncio.create_task(slots.acquire())
    await asyncio.sleep(0)  # it waits for the slot
    waiting.cancel()
    slots.release()  # drops the cancelled waiter before its task resumes
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert slots.taken == 0
    await slots.acquire()  # the slot is free for the next call
    assert slots.taken == 1
