"""The budget for request bodies read at once (`[server] max_parsing_mb`,
daemon/api/body_budget.py): what a request reserves, 429 + Retry-After past the
budget, and every reservation given back however its handler ends."""

from __future__ import annotations

import gzip
import json
from typing import Any
from unittest import mock

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from daemon.api.body_budget import BODY_BUDGET, BodyBudget, body_size
from daemon.api.middleware import OWNERS
from tests.actors.harness import wait_for
from tests.api.conftest import MakeRelay, Relay, assert_envelope, batch
from tests.api.raw_http import Raw, chunk, post_head

MB = 1024 * 1024
CAP = 1 * MB  # max_body_mb = 1
HELD = 700_000  # two of these fit a 2 MB budget, three do not


# --- what a request reserves --------------------------------------------------------


def request(method: str = "POST", path: str = "/v1/batches", *, length: int | None = 10,
            body: bool = True, encoding: str | None = None) -> web.Request:
    headers = {} if length is None else {"Content-Length": str(length)}
    if encoding is not None:
        headers["Content-Encoding"] = encoding
    payload: Any = mock.Mock() if body else None
    kwargs = {"payload": payload} if body else {}
    app = web.Application()
    app[OWNERS] = {}  # no route matched: the path's dialect (the native one) owns it
    return make_mocked_request(method, path, headers=headers, client_max_size=CAP, app=app,
                               **kwargs)


@pytest.mark.parametrize(("req", "size"), [
    (request(length=5_000), 5_000),
    (request(length=CAP), CAP),
    (request(length=50 * CAP), CAP),  # read() stops at the cap with a 413
    (request(length=None), CAP),  # chunked: the length is unknown
    (request(length=5_000, encoding="gzip"), CAP),  # decoded, its length is unknown too
    (request(length=5_000, encoding="br"), CAP),
    (request(length=5_000, encoding="identity"), 5_000),
    (request("PUT", "/v1/anything", length=3), 3),
    (request("GET", "/v1/batches", body=False), 0),
    (request("POST", "/v1/files", length=100 * MB), 0),  # streamed to disk
])
def test_what_a_request_reserves(req: web.Request, size: int) -> None:
    assert body_size(req) == size


def test_the_budget_takes_reservations_up_to_its_limit_and_back() -> None:
    budget = BodyBudget(100)
    assert budget.reserve(60) and budget.reserve(40)
    assert not budget.reserve(1)
    budget.release(40)
    assert not budget.reserve(41)
    assert budget.reserve(40)
    budget.release(60)
    budget.release(40)
    assert budget.reserved == 0


# --- over HTTP ----------------------------------------------------------------------


@pytest.fixture
async def relay(make_relay: MakeRelay) -> Relay:
    return await make_relay(server={"max_body_mb": 1, "max_parsing_mb": 2})


def port(relay: Relay) -> int:
    assert relay.client.server.port is not None
    return relay.client.server.port


async def hold_body(relay: Relay, length: int) -> Raw:
    """A submit whose head is in and whose body has begun, then waits."""
    raw = await Raw.open(port(relay))
    await raw.send(post_head("/v1/batches", relay.key, length=length) + b"{")
    return raw


async def refused_as_busy(relay: Relay, *, length: int | None) -> None:
    raw = await Raw.open(port(relay))
    try:
        await raw.send(post_head("/v1/batches", relay.key, length=length))
        answer = await raw.answer()  # before any of its body is sent
        assert answer.status == 429
        assert answer.headers["Retry-After"] == "1"
        error = assert_envelope(answer.json(), code="server_busy")
        assert error["type"] == "rate_limit_error"
        assert "server.max_parsing_mb = 2 MB" in error["message"]
    finally:
        raw.close()


async def test_bodies_past_the_budget_are_429_while_one_within_it_is_served(
        relay: Relay) -> None:
    budget = relay.client.app[BODY_BUDGET]
    held = [await hold_body(relay, HELD), await hold_body(relay, HELD)]
    try:
        await wait_for(lambda: budget.reserved == 2 * HELD, what="two reservations")
        await refused_as_busy(relay, length=HELD)
        await refused_as_busy(relay, length=None)  # chunked reserves the whole cap
        job = await relay.submit(batch("small enough"))  # a few hundred bytes still fit
        assert job["status"] in ("queued", "in_progress", "completed")
        assert budget.reserved == 2 * HELD
    finally:
        for raw in held:
            raw.close()


async def test_reservations_come_back_on_success_handler_error_and_disconnect(
        relay: Relay) -> None:
    budget = relay.client.app[BODY_BUDGET]
    broken, dropped = await hold_body(relay, HELD), await hold_body(relay, HELD)
    await wait_for(lambda: budget.reserved == 2 * HELD, what="two reservations")
    await broken.send(b"x" * (HELD - 1))  # not JSON: the handler refuses it
    answer = await broken.answer()
    assert answer.status == 400
    assert_envelope(answer.json(), code=None)
    broken.close()
    dropped.close()  # the client goes away mid-body
    await wait_for(lambda: budget.reserved == 0, what="both reservations back")

    big = batch("p" * (HELD - 300))  # the size that was refused while two were held
    assert len(json.dumps(big)) > HELD - 300
    await relay.submit(big)
    assert budget.reserved == 0


async def test_a_chunked_body_that_ends_gives_its_reservation_back(relay: Relay) -> None:
    budget = relay.client.app[BODY_BUDGET]
    raw = await Raw.open(port(relay))
    try:
        await raw.send(post_head("/v1/batches", relay.key, length=None))
        await wait_for(lambda: budget.reserved == CAP, what="the cap reserved")
        await raw.send(chunk(json.dumps(batch("chunked")).encode()) + chunk(b""))
        assert (await raw.answer()).status == 200
        assert budget.reserved == 0
    finally:
        raw.close()


async def test_a_compressed_body_reserves_the_cap_and_is_read_decoded(relay: Relay) -> None:
    budget = relay.client.app[BODY_BUDGET]
    seen: list[int] = []
    reserve = budget.reserve

    def reserve_seen(size: int) -> bool:
        seen.append(size)
        return reserve(size)
    with mock.patch.object(budget, "reserve", reserve_seen):
        status, job = await post_gzip(relay, json.dumps(batch("compressed")).encode())
    assert status == 200, job
    assert seen == [CAP] and budget.reserved == 0


async def test_a_compressed_body_that_decodes_past_the_cap_is_413(relay: Relay) -> None:
    status, answer = await post_gzip(relay, b"[" + b" " * (3 * CAP) + b"]")  # a few KB
    assert status == 413
    assert_envelope(answer, code="request_too_large")
    assert relay.client.app[BODY_BUDGET].reserved == 0


async def post_gzip(relay: Relay, body: bytes) -> tuple[int, Any]:
    headers = {**relay.headers(), "Content-Type": "application/json",
               "Content-Encoding": "gzip"}
    async with relay.client.post("/v1/batches", headers=headers,
                                 data=gzip.compress(body)) as resp:
        return resp.status, await resp.json()
