"""The route table as clients meet it: GET routes answer HEAD, JSON says its charset, a
key is asked for before anything else, and Anthropic's paging takes one cursor."""

from __future__ import annotations

from tests.api.conftest import MakeRelay, batch

VERSION = {"anthropic-version": "2023-06-01"}


async def test_every_get_route_answers_head(make_relay: MakeRelay) -> None:
    relay = await make_relay()
    async with relay.client.head("/healthz") as resp:
        assert resp.status == 200
    async with relay.client.head("/v1/models", headers=relay.headers()) as resp:
        assert resp.status == 200
    async with relay.client.post("/v1/models", headers=relay.headers()) as resp:
        assert resp.status == 405 and set(resp.headers["Allow"].split(",")) == {"GET", "HEAD"}


async def test_json_answers_say_their_charset(make_relay: MakeRelay) -> None:
    relay = await make_relay()
    async with relay.client.post("/v1/batches", headers=relay.headers(),
                                 json=batch("fine")) as resp:
        assert resp.headers["Content-Type"] == "application/json; charset=utf-8"


async def test_a_key_is_asked_for_before_the_method_or_the_version(
        make_relay: MakeRelay) -> None:
    relay = await make_relay()
    for method, path in (("PUT", "/v1/batches"), ("TRACE", "/v1/messages/batches"),
                         ("GET", "/v1/messages/batches")):
        async with relay.client.request(method, path) as resp:
            assert resp.status == 401, (method, path)
    # with a key: the method no route takes is a 405, whatever Anthropic's routes ask
    async with relay.client.request("TRACE", "/v1/messages/batches",
                                    headers=relay.headers()) as resp:
        assert resp.status == 405
        assert (await resp.json())["type"] == "error"  # in the path's dialect's envelope


async def test_anthropic_paging_takes_one_cursor(make_relay: MakeRelay) -> None:
    relay = await make_relay()
    async with relay.client.get("/v1/messages/batches?after_id=a&before_id=b",
                                headers={**relay.headers(), **VERSION}) as resp:
        assert resp.status == 400
        body = await resp.json()
    assert body == {"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "Send one of after_id and before_id, not both."}}
