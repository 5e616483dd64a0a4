"""Defects the schema-driven fuzzing (tests/e2e/test_api_fuzz.py) found, kept fixed."""

from __future__ import annotations

from tests.api.conftest import Relay, assert_envelope, batch


async def test_a_multipart_part_header_with_control_characters_is_a_400(relay: Relay):
    """aiohttp's multipart reader raises its own BadHttpMessage (not a ValueError) for a
    part header it cannot parse: that was a 500."""
    body = (b'--B\r\nContent-Disposition: form-data; name="a\x10b\x00"\r\n\r\n{}\r\n'
            b'--B\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--B--\r\n')
    async with relay.client.post("/v1/files", data=body, headers={
            **relay.headers(), "Content-Type": "multipart/form-data; boundary=B"}) as resp:
        assert resp.status == 400
        assert assert_envelope(await resp.json())["param"] == "file"


async def test_a_405_names_the_methods_the_route_has(relay: Relay):
    """RFC 9110: a 405 carries Allow. The error envelope used to drop it."""
    for path, key in (("/healthz", None), ("/v1/batches", relay.key)):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with relay.client.request("PUT", path, headers=headers) as resp:
            assert resp.status == 405
            assert_envelope(await resp.json())
            assert "GET" in resp.headers["Allow"]


async def test_a_cron_with_a_one_value_range_runs_when_it_says(relay: Relay):
    """croniter reads `1-1` as `*`: this template would have run every day."""
    job = await relay.submit(batch("weekly", cron="0 9 * * 1-1"))
    assert job["next_run_at"] == "2026-10-05T09:00:00Z"  # the harness clock: Sun 4 Oct
    status, answer = await relay.call("POST", "/v1/batches",
                                      json=batch("never", cron="0 0 31 4-4 *"))
    assert status == 400 and assert_envelope(answer, code="invalid_cron")
