"""The four URL fields an API client supplies (the completion webhook, HTTP and MCP tool
executors, workflow callbacks) refuse every IPv6 spelling of an internal IPv4 address,
through the real API: the SIIT form `[::ffff:0:127.0.0.1]` was once accepted in all four."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.api.conftest import Relay, assert_envelope, batch, openai_batch

HOSTS = ["[::ffff:0:127.0.0.1]", "[::ffff:0:169.254.169.254]", "[::ffff:127.0.0.1]",
         "[::127.0.0.1]", "[64:ff9b:1::a00:1]", "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
         "[64:ff9b::127.0.0.1]", "[2002:a00:1::1]"]


def tool_row(url: str, kind: str) -> dict[str, Any]:
    body = {"messages": [{"role": "user", "content": "hi"}],
            "openrelay": {"tool_config": {"url": url, "type": kind}}}
    return {"custom_id": "t", "method": "POST", "url": "/v1/chat/completions", "body": body}


async def refusal(relay: Relay, body: dict[str, Any], *, code: str) -> dict[str, Any]:
    status, answer = await relay.call("POST", "/v1/batches", json=body)
    assert status == 400, answer
    return assert_envelope(answer, code=code)


@pytest.mark.parametrize("host", HOSTS)
async def test_the_webhook_url_refuses_it(relay: Relay, host: str) -> None:
    error = await refusal(relay, batch("hi", webhookUrl=f"https://{host}/hook"),
                          code="forbidden_target")
    assert error["param"] == "webhookUrl"


@pytest.mark.parametrize("kind", ["http", "mcp"])
@pytest.mark.parametrize("host", HOSTS)
async def test_a_tool_executor_url_refuses_it(relay: Relay, host: str, kind: str) -> None:
    body = batch(requests=[tool_row(f"https://{host}/tools", kind)])
    error = await refusal(relay, body, code="invalid_tool_config")
    assert error["param"] == "requests[0].body.openrelay.tool_config.url"
    assert "non-public address" in error["message"]


async def test_a_workflow_callback_url_refuses_it(relay: Relay) -> None:
    await asyncio.to_thread(relay.services.repo.set_workspace, "ws-a", now=relay.clock(),
                            workflows=True)
    body = openai_batch(*["hi"] * len(HOSTS))
    for record, host in zip(body["requests"], HOSTS, strict=True):
        record["body"]["openrelay"] = {"workflow": {"url": f"https://{host}/flow",
                                                    "authorization": "Bearer s3cret"}}
    made = await relay.submit(body)
    done = await relay.wait_status(made["id"], "completed", "failed")
    errors = await error_lines(relay, done)
    assert len(errors) == len(HOSTS)
    for line in errors:
        error = line["error"]
        assert error["code"] == "invalid_workflow", line
        assert "non-public address" in error["message"], line


async def error_lines(relay: Relay, done: dict[str, Any]) -> list[dict[str, Any]]:
    async with relay.client.get(f"/v1/files/{done['error_file_id']}/content",
                                headers=relay.headers()) as resp:
        assert resp.status == 200
        text = await resp.text()
    return [json.loads(line) for line in text.splitlines() if line]
