"""Requests to the simulator's app on aiohttp's test client, for its route tests."""

from __future__ import annotations

from typing import Any

import aiohttp
from aiohttp.test_utils import TestClient


async def post_json(client: TestClient, path: str, body: dict[str, Any], *,
                    headers: dict[str, str] | None = None) -> aiohttp.ClientResponse:
    """POST `body`; the answer is read, so its status, headers and body are there."""
    resp = await client.post(path, json=body, headers=headers)
    await resp.read()
    return resp


async def answer_json(client: TestClient, path: str, body: dict[str, Any], *,
                      headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The body of a 200 (anything else fails the test, showing what was answered)."""
    resp = await post_json(client, path, body, headers=headers)
    assert resp.status == 200, await resp.text()
    return dict(await resp.json())
