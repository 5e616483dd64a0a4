"""`/v1/responses` and `/v1/moderations` batches end to end, driven by the unmodified
`openai` SDK against real `relayd serve` and `relayd simulate`: upload a file of
records, run it as a batch, download the output, and parse each `response.body` with
the SDK's own `Response` and `ModerationCreateResponse` (and validate it against
OpenAI's published schemas). Then one kill -9 in the middle of a Responses batch.

These need the simulator's `/v1/responses` and `/v1/moderations` and the router's
`[[models]] endpoints` (pass-through, translation to chat, moderations), built beside
the dialect's side of issue 25: they run once those are in (`NEEDS`)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import openai
import pytest
from openai.types import Batch, ModerationCreateResponse
from openai.types.responses import Response

from daemon.config import ModelConfig
from tests.api.openai_schemas import conform
from tests.e2e.harness import Relayd, Simulator, config_tables, simulated_model, wait_until

RESPONSES: Final = "/v1/responses"
MODERATIONS: Final = "/v1/moderations"
CHAT: Final = "/v1/chat/completions"
SERVED = [CHAT, "/v1/completions", "/v1/embeddings", RESPONSES, MODERATIONS]
ROUTED = "endpoints" in {f.name for f in dataclasses.fields(ModelConfig)}
SIMULATED = importlib.util.find_spec("daemon.simulator.responses") is not None
NEEDS = pytest.mark.skipif(not (ROUTED and SIMULATED), reason=(
    "needs the simulator and upstream branches (the simulator's /v1/responses and "
    "/v1/moderations, the router's [[models]] endpoints)"))
pytestmark = pytest.mark.e2e

# `strict` given: a Response's function tools must carry it (OpenAI fills it in), and the
# simulator echoes the request's tools as they came.
LOOKUP = {"type": "function", "name": "lookup", "description": "Look up a product's facts.",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                         "required": ["query"]}, "strict": False}
SCHEMA = {"format": {"type": "json_schema", "name": "verdict", "strict": True, "schema": {
    "type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"],
    "additionalProperties": False}}}


def record(custom_id: str, url: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": url, "body": body}


def responses_records(model: str, sim: Simulator) -> list[dict[str, Any]]:
    tools = {"url": sim.tools_url, "authorization": "Bearer e2e", "max_rounds": 4}
    return [
        record("text", RESPONSES, {"model": model, "input": "Label: great kettle",
                                   "instructions": "One word."}),
        record("items", RESPONSES, {"model": model, "max_output_tokens": 50, "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Summarise it"}]}]}),
        record("schema", RESPONSES, {"model": model, "input": "Label: awful", "text": SCHEMA}),
        record("calls", RESPONSES, {"model": model, "tools": [LOOKUP],
                                    "input": "Is the K2 safe? [sim:tool_rounds=1]"}),
        record("looped", RESPONSES, {"model": model, "tools": [LOOKUP],
                                     "input": "Is the K2 safe? [sim:tool_rounds=2]",
                                     "openrelay": {"tool_config": tools}}),
        record("stateful", RESPONSES, {"model": model, "input": "go on",
                                       "previous_response_id": "resp_yesterday"}),
    ]


MODERATION_RECORDS = [
    record("one", MODERATIONS, {"model": "moderator", "input": "Thanks, lovely service."}),
    record("many", MODERATIONS, {"model": "moderator",
                                 "input": ["Nice blender.", "I will kill you for this."]}),
    record("images", MODERATIONS, {"model": "moderator", "input": [
        {"type": "text", "text": "Fine to post?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}),
]


@pytest.fixture
def five(tmp_path: Path, simulator_factory: Callable[..., Simulator]
         ) -> Iterator[tuple[Relayd, Simulator]]:
    """relayd on the simulator: `gpt-4o-mini` serves every endpoint (Responses records
    pass through), `translated` only chat (they are translated to chat and back), and
    `moderator` moderations."""
    sim = simulator_factory()
    tables = config_tables(sim)
    tables["models"] = [
        simulated_model("gpt-4o-mini", sim, endpoints=SERVED, input_usd_per_mtok=0.15,
                        output_usd_per_mtok=0.60),
        simulated_model("translated", sim),
        simulated_model("moderator", sim, model="omni-moderation-latest",
                        endpoints=[MODERATIONS]),
    ]
    relayd = Relayd(home=tmp_path / "relayd").write_config(**tables).start()
    try:
        yield relayd, sim
    finally:
        relayd.stop()


def sdk(relayd: Relayd) -> openai.OpenAI:
    return openai.OpenAI(api_key=relayd.key("acme"), base_url=relayd.url + "/v1",
                         max_retries=0, timeout=30)


def run(client: openai.OpenAI, endpoint: str, records: list[dict[str, Any]]) -> Batch:
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    uploaded = client.files.create(file=("records.jsonl", data), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint=endpoint,  # type: ignore[arg-type]
                                  completion_window="24h")
    assert batch.endpoint == endpoint
    done: Batch = wait_until(lambda: (b := client.batches.retrieve(batch.id)).status in (
        "completed", "failed", "expired", "cancelled") and b, timeout=60)
    Batch.model_validate(done.to_dict(), strict=True)
    return done


def lines(client: openai.OpenAI, file_id: str | None) -> dict[str, dict[str, Any]]:
    if file_id is None:
        return {}
    parsed = [json.loads(line) for line in client.files.content(file_id).text.splitlines()]
    for line in parsed:
        conform(line, "BatchRequestOutput")
    by_id = {line["custom_id"]: line for line in parsed}
    assert len(by_id) == len(parsed), "a custom_id appears twice"
    return by_id


@NEEDS
@pytest.mark.parametrize("model", ["gpt-4o-mini", "translated"])
def test_a_responses_batch_reads_back_as_the_sdks_response_objects(
        five: tuple[Relayd, Simulator], model: str) -> None:
    relayd, sim = five
    client = sdk(relayd)
    done = run(client, RESPONSES, responses_records(model, sim))

    assert done.status == "completed" and done.request_counts is not None
    assert (done.request_counts.completed, done.request_counts.failed) == (5, 1)
    output, errors = lines(client, done.output_file_id), lines(client, done.error_file_id)
    answers = {cid: Response.model_validate(line["response"]["body"])
               for cid, line in output.items()}
    for line in output.values():
        conform(line["response"]["body"], "Response")
    assert set(answers) == {"text", "items", "schema", "calls", "looped"}
    assert all(a.id.startswith("resp_") and a.object == "response" for a in answers.values())
    assert answers["text"].output_text and answers["items"].output_text
    if model == "gpt-4o-mini":  # the simulator's chat route does not shape JSON
        assert "label" in json.loads(answers["schema"].output_text)
    assert [item.type for item in answers["calls"].output] == ["function_call"]
    assert answers["looped"].output_text  # the tool loop ran to a final answer
    assert errors["stateful"]["error"]["code"] == "previous_response_unsupported"
    assert done.usage is not None and done.usage.input_tokens > 0
    assert done.usage.output_tokens > 0 and answers["text"].usage is not None
    assert len(sim.tool_calls()) == 2


@NEEDS
def test_a_moderation_batch_reads_back_as_the_sdks_moderation_objects(
        five: tuple[Relayd, Simulator]) -> None:
    relayd, _ = five
    client = sdk(relayd)
    done = run(client, MODERATIONS, MODERATION_RECORDS)

    assert done.request_counts is not None and done.request_counts.completed == 3
    output = lines(client, done.output_file_id)
    verdicts = {cid: ModerationCreateResponse.model_validate(line["response"]["body"])
                for cid, line in output.items()}
    for line in output.values():
        conform(line["response"]["body"], "CreateModerationResponse")
    assert [len(verdicts[c].results) for c in ("one", "many", "images")] == [1, 2, 1]
    assert [r.flagged for r in verdicts["many"].results] == [False, True]
    assert verdicts["one"].model == "omni-moderation-latest"


@NEEDS
def test_a_moderation_record_for_a_model_that_does_not_serve_it_fails_alone(
        five: tuple[Relayd, Simulator]) -> None:
    relayd, _ = five
    client = sdk(relayd)
    wrong = record("chat-only", MODERATIONS, {"model": "translated", "input": "hi"})
    done = run(client, MODERATIONS, [MODERATION_RECORDS[0], wrong])

    assert done.request_counts is not None and done.request_counts.failed == 1
    error = lines(client, done.error_file_id)["chat-only"]
    assert error["error"] is not None and error["error"]["code"]


@NEEDS
def test_chat_output_lines_conform_to_the_published_chat_completion(
        five: tuple[Relayd, Simulator]) -> None:
    relayd, _ = five
    client = sdk(relayd)
    chat = record("c", CHAT, {"model": "gpt-4o-mini",
                              "messages": [{"role": "user", "content": "hi"}]})
    done = run(client, CHAT, [chat])
    body = lines(client, done.output_file_id)["c"]["response"]["body"]
    conform(body, "CreateChatCompletionResponse")  # choices[].message.refusal: null
    assert body["choices"][0]["message"]["refusal"] is None


# -- kill -9 mid-batch -------------------------------------------------------------------

ROWS, CONCURRENCY, LATENCY_MS = 300, 8, 40


@pytest.mark.skipif(not (ROUTED or SIMULATED), reason=(
    "needs the simulator or upstream branch (a simulator that serves /v1/responses, or "
    "the router's translation to chat)"))
def test_kill_9_mid_responses_batch_then_restart_finishes_each_record_once(
        tmp_path: Path, simulator_factory: Callable[..., Simulator]) -> None:
    """Without `endpoints`, Responses records are translated to chat where the router
    knows how, and go to the simulator's own /v1/responses where only it does."""
    sim = simulator_factory("--latency-ms", str(LATENCY_MS))
    relayd = Relayd(home=tmp_path / "relayd").write_config(
        **config_tables(sim, concurrency=CONCURRENCY)).start()
    try:
        client = sdk(relayd)
        records = [record(f"r-{n:03d}", RESPONSES, {"model": "gpt-4o-mini",
                                                      "input": f"Label review {n}"})
                   for n in range(ROWS)]
        data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
        uploaded = client.files.create(file=("big.jsonl", data), purpose="batch")
        batch = client.batches.create(input_file_id=uploaded.id, endpoint=RESPONSES,
                                      completion_window="24h")
        wait_until(lambda: (c := client.batches.retrieve(batch.id).request_counts)
                   is not None and c.completed >= 100, timeout=60)
        relayd.kill()
        relayd.start()
        done = wait_until(lambda: (b := client.batches.retrieve(batch.id)).status
                          == "completed" and b, timeout=90)
        output = lines(client, done.output_file_id)
    finally:
        relayd.stop()
    assert done.request_counts is not None and done.request_counts.completed == ROWS
    assert sorted(output) == [r["custom_id"] for r in records]  # each exactly once
    assert done.error_file_id is None
    for line in output.values():
        assert Response.model_validate(line["response"]["body"]).output_text
    seen = Counter(r["prompt"] for r in sim.requests())
    repeated = sum(n - 1 for n in seen.values())
    assert len(seen) == ROWS and repeated <= 3 * CONCURRENCY, repeated
