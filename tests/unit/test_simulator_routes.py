"""What every generation route of the simulator shares, route by route: `times` on a
fail marker, the fault markers that answer no envelope (garbage, reset, huge), the
seeded random faults, which
draw alike whichever route a request takes, and the --rpm/--tpm buckets under each
API's header names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

from tests.unit.simulated import post_json


@dataclass(frozen=True)
class Route:
    path: str
    body: Callable[[str], dict[str, Any]]  # a request whose prompt is the text given
    marker: bytes  # what a huge answer's JSON holds
    remaining: str  # the header of what is left in a bucket, {} its name
    budget: str | None = None  # the field of the answer's token budget
    headers: dict[str, str] | None = None


OPENAI_REMAINING = "x-ratelimit-remaining-{}"
ROUTES = {
    "chat": Route("/v1/chat/completions", lambda p: {
        "model": "sim-small", "messages": [{"role": "user", "content": p}]},
        b'"object": "chat.completion"', OPENAI_REMAINING, "max_tokens"),
    "messages": Route("/v1/messages", lambda p: {
        "model": "sim-small", "max_tokens": 64, "messages": [{"role": "user", "content": p}]},
        b'"type": "message"', "anthropic-ratelimit-{}-remaining", "max_tokens",
        {"anthropic-version": "2023-06-01"}),
    "responses": Route("/v1/responses", lambda p: {"model": "sim-small", "input": p},
                       b'"object": "response"', OPENAI_REMAINING, "max_output_tokens"),
    "moderations": Route("/v1/moderations", lambda p: {"model": "sim-small", "input": [p]},
                         b'"results": [', OPENAI_REMAINING),
}


async def post(client: TestClient, route: Route, prompt: str,
               **fields: Any) -> aiohttp.ClientResponse:
    return await post_json(client, route.path, route.body(prompt) | fields,
                           headers=route.headers)


@pytest.mark.parametrize("name", ROUTES)
async def test_a_fail_marker_fails_times_then_answers(make_sim: Any, name: str) -> None:
    client, route = await make_sim(retry_after_s=2), ROUTES[name]
    answers = [await post(client, route, "Hi [sim:fail=429 times=2]") for _ in range(3)]
    assert [a.status for a in answers] == [429, 429, 200]
    assert answers[0].headers["Retry-After"] == "2"


@pytest.mark.parametrize("name", ROUTES)
async def test_garbage_reset_and_huge_markers(make_sim: Any, name: str) -> None:
    client, route = await make_sim(), ROUTES[name]
    garbage = await post(client, route, "Hi [sim:garbage]")
    assert garbage.status == 200 and not (await garbage.text()).startswith("{")
    with pytest.raises(aiohttp.ClientConnectionError):
        await post(client, route, "Hi [sim:reset]")
    huge = await post(client, route, "Hi [sim:huge=1]")
    body = await huge.read()
    assert len(body) >= 2**20 and route.marker in body


@pytest.mark.parametrize("name", [name for name in ROUTES if name != "chat"])
async def test_random_faults_draw_as_chat_does(make_sim: Any, name: str) -> None:
    async def statuses(route: Route) -> list[int]:
        client = await make_sim(seed=7, rate_5xx=0.5)
        return [(await post(client, route, "Hi")).status for _ in range(12)]
    chat = await statuses(ROUTES["chat"])
    assert await statuses(ROUTES[name]) == chat and {200, 503} == set(chat)


@pytest.mark.parametrize("name", ROUTES)
async def test_past_the_rpm_a_429_at_once(make_sim: Any, name: str) -> None:
    client, route = await make_sim(rpm=60), ROUTES[name]  # one a second, one of burst
    served = await post(client, route, "Hi")
    assert served.status == 200 and served.headers[route.remaining.format("requests")] == "0"
    refused = await post(client, route, "Hi")
    assert refused.status == 429 and refused.headers[route.remaining.format("requests")] == "0"
    assert 0 < float(refused.headers["retry-after"]) <= 1
    assert 0 < int(refused.headers["retry-after-ms"]) <= 1000


@pytest.mark.parametrize("name", [name for name in ROUTES if ROUTES[name].budget])
async def test_tpm_charges_the_budget_and_settles_to_the_usage(make_sim: Any,
                                                               name: str) -> None:
    client, route = await make_sim(tpm=600), ROUTES[name]  # 10 a second, 10 of burst
    assert route.budget is not None
    served = await post(client, route, "one two", **{route.budget: 8})
    # charged 2 + 8 of 10, then 3 given back: it used 2 in + 5 out ("Simulated reply
    # (sim-small): one two")
    assert served.headers[route.remaining.format("tokens")] == "3"
