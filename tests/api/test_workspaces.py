"""A key sees only its workspace's jobs: anything else is 404, never 403."""

from __future__ import annotations

import pytest

from tests.api.conftest import Relay, assert_envelope, batch


@pytest.mark.parametrize("method,suffix", [
    ("GET", ""),
    ("GET", "/results"),
    ("GET", "/dead_letter"),
    ("POST", "/dead_letter/retry"),
    ("POST", "/cancel"),
])
async def test_another_workspaces_job_is_404(relay: Relay, method: str,
                                             suffix: str) -> None:
    other_key = await relay.new_key("ws-b")
    theirs = await relay.submit(batch("secret OUTAGE"), key=other_key)
    await relay.wait_status(theirs["id"], "completed", key=other_key)
    path = f"/v1/batches/{theirs['id']}{suffix}"

    status, body = await relay.call(method, path)

    assert status == 404
    assert_envelope(body, code="not_found")
    assert (await relay.call(method, path, key=other_key))[0] != 404  # 409 for cancel


async def test_cancel_from_another_workspace_changes_nothing(relay: Relay) -> None:
    other_key = await relay.new_key("ws-b")
    theirs = await relay.submit(batch("waiting BLOCK"), key=other_key)
    await relay.wait_status(theirs["id"], "running", key=other_key)
    assert (await relay.call("POST", f"/v1/batches/{theirs['id']}/cancel"))[0] == 404
    status, job = await relay.call("GET", f"/v1/batches/{theirs['id']}", key=other_key)
    assert (status, job["status"]) == (200, "running")


async def test_lists_show_only_the_keys_workspace(relay: Relay) -> None:
    other_key = await relay.new_key("ws-b")
    mine = await relay.submit(batch("mine"))
    theirs = await relay.submit(batch("theirs"), key=other_key)

    assert [j["id"] for j in (await relay.listing())["data"]] == [mine["id"]]
    page = await relay.ok("GET", "/v1/batches?dialect=relay", key=other_key)
    assert [j["id"] for j in page["data"]] == [theirs["id"]]
    assert (await relay.listing(f"?after={theirs['id']}"))["data"] == []
