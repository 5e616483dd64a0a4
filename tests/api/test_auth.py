"""Auth on every /v1 route, the unauthenticated health check, models and unknown routes."""

from __future__ import annotations

import asyncio

import pytest

from tests.actors.harness import BACKUP, PRIMARY
from tests.api.conftest import Relay, assert_envelope


@pytest.mark.parametrize("headers", [
    {},
    {"Authorization": ""},
    {"Authorization": "Bearer"},
    {"Authorization": "Bearer   "},
])
async def test_missing_key_is_401(relay: Relay, headers: dict[str, str]) -> None:
    async with relay.client.get("/v1/batches", headers=headers) as resp:
        assert resp.status == 401
        error = assert_envelope(await resp.json(), code="missing_api_key")
    assert error["type"] == "authentication_error"


async def test_wrong_scheme_is_401(relay: Relay) -> None:
    async with relay.client.get("/v1/batches",
                                headers={"Authorization": f"Basic {relay.key}"}) as resp:
        assert resp.status == 401
        assert_envelope(await resp.json())


async def test_unknown_key_is_401(relay: Relay) -> None:
    status, body = await relay.call("GET", "/v1/batches", key="rk_not-a-real-key")
    assert status == 401
    assert_envelope(body, code="invalid_api_key")


async def test_revoked_key_is_401(relay: Relay) -> None:
    assert (await relay.call("GET", "/v1/batches"))[0] == 200
    revoked = await asyncio.to_thread(relay.services.repo.revoke_key, relay.key[:10],
                                      now=relay.clock())
    assert revoked == 1

    status, body = await relay.call("GET", "/v1/batches")

    assert status == 401
    assert_envelope(body, code="invalid_api_key")


async def test_auth_is_checked_before_the_route(relay: Relay) -> None:
    async with relay.client.post("/v1/batches", json={"model": PRIMARY}) as resp:
        assert resp.status == 401


async def test_healthz_needs_no_key(relay: Relay) -> None:
    async with relay.client.get("/healthz") as resp:
        assert resp.status == 200
        assert (await resp.json())["status"] == "ok"


async def test_models_lists_the_configured_aliases(relay: Relay) -> None:
    body = await relay.ok("GET", "/v1/models")
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == [PRIMARY, BACKUP]
    assert body["data"][0]["fallbacks"] == [BACKUP]


async def test_models_needs_a_key(relay: Relay) -> None:
    async with relay.client.get("/v1/models") as resp:
        assert resp.status == 401


@pytest.mark.parametrize("path", ["/v1/nothing-here", "/nope", "/v1/batches/x/y/z"])
async def test_unknown_route_is_404_envelope(relay: Relay, path: str) -> None:
    status, body = await relay.call("GET", path)
    assert status == 404
    assert_envelope(body)


async def test_unknown_batch_is_404_envelope(relay: Relay) -> None:
    status, body = await relay.call("GET", "/v1/batches/" + "0" * 32)
    assert status == 404
    assert_envelope(body, code="not_found")
