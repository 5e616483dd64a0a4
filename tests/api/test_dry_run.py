"""`?dry_run=true`: the estimate of a batch in each dialect, with nothing stored."""

from __future__ import annotations

from typing import Any

from tests.actors.harness import PRIMARY
from tests.api.conftest import Relay, assert_envelope, batch, openai_batch

ANTHROPIC = {"x-api-key": "", "anthropic-version": "2023-06-01"}


async def test_relay_dry_run_estimates_and_stores_nothing(relay: Relay) -> None:
    body = batch("one", "two", "three")  # Relay rows set no max_tokens
    status, answer = await relay.call("POST", "/v1/batches?dry_run=true", json=body)
    assert status == 200, answer
    assert answer["object"] == "batch.estimate" and answer["dry_run"] is True
    assert answer["rows"] == 3 and answer["problems"] == [] and answer["budget"] is None
    (model,) = answer["by_model"]
    assert model["model"] == PRIMARY and model["rows"] == 3
    assert model["output_tokens"]["sources"] == {"default": 3}
    assert model["input_tokens"]["source"] == "rate_limiter"
    assert model["drain_s"] > 0 and answer["discount"] == "0"
    assert (await relay.listing())["data"] == []


async def test_a_refused_body_is_a_problem_in_the_envelope(relay: Relay) -> None:
    status, answer = await relay.call("POST", "/v1/batches?dry_run=true",
                                      json={"model": "nope", "requests": []})
    assert status == 200 and answer["rows"] == 0
    (problem,) = answer["problems"]
    assert assert_envelope(problem)["param"]


async def test_openai_inline_dry_run_takes_the_batch_rate(relay: Relay) -> None:
    status, answer = await relay.call("POST", "/v1/batches?dry_run=true",
                                      json=openai_batch("a", "b"))
    assert status == 200, answer
    assert answer["rows"] == 2 and answer["discount"] == "0.5"
    assert [m["model"] for m in answer["by_model"]] == [PRIMARY]
    assert (await relay.listing())["data"] == []  # no job, and no inline input file


async def test_openai_file_dry_run_reads_the_file_without_validating(relay: Relay) -> None:
    lines = b"".join(
        b'{"custom_id": "%d", "method": "POST", "url": "/v1/chat/completions", '
        b'"body": {"model": "%s", "messages": [{"role": "user", "content": "hi"}]}}\n'
        % (i, PRIMARY.encode()) for i in range(4)) + b"not json\n"
    status, uploaded = await relay.call("POST", "/v1/files", data={
        "purpose": "batch", "file": lines})
    assert status == 200, uploaded
    body = {"endpoint": "/v1/chat/completions", "completion_window": "24h",
            "input_file_id": uploaded["id"]}
    status, answer = await relay.call("POST", "/v1/batches?dry_run=true", json=body)
    assert status == 200, answer
    assert answer["rows"] == 4
    (problem,) = answer["problems"]
    assert "line 5" in assert_envelope(problem)["message"]


async def test_anthropic_dry_run_in_its_envelope(relay: Relay) -> None:
    headers = {**ANTHROPIC, "x-api-key": relay.key}
    params: dict[str, Any] = {"model": PRIMARY, "max_tokens": 64,
                              "messages": [{"role": "user", "content": "hi"}]}
    body = {"requests": [{"custom_id": "a", "params": params},
                         {"custom_id": "b", "params": {**params, "model": "gone"}}]}
    async with relay.client.post("/v1/messages/batches?dry_run=true", json=body,
                                 headers=headers) as resp:
        assert resp.status == 200
        answer = await resp.json()
    assert answer["rows"] == 1 and answer["output_tokens"] == 64
    (problem,) = answer["problems"]
    assert problem["type"] == "error" and problem["error"]["type"]


async def test_dry_run_takes_true_or_false(relay: Relay) -> None:
    status, answer = await relay.call("POST", "/v1/batches?dry_run=maybe", json=batch("a"))
    assert status == 400
    assert assert_envelope(answer)["param"] == "dry_run"
