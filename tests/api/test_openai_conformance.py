"""Every answer of the OpenAI dialect, and every line of its output and error files,
validated against OpenAI's published description (the schemas vendored in
`tests/api/openai_schemas/`, with the cases where OpenAI's real answers differ from it
listed there and in the README). Real answers of the running app: batches of all five
endpoints against a scripted upstream that answers as OpenAI does."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from tests.actors.harness import PRIMARY
from tests.api.conftest import MakeRelay, Relay
from tests.api.openai_answers import MODERATOR, FiveEndpoints, five_endpoint_models
from tests.api.openai_schemas import BEHAVIOUR, conform, problems, vendored

CHAT, RESPONSES, MODERATIONS = "/v1/chat/completions", "/v1/responses", "/v1/moderations"
BODIES = {
    CHAT: lambda text: {"model": PRIMARY, "messages": [{"role": "user", "content": text}]},
    "/v1/completions": lambda text: {"model": PRIMARY, "prompt": text},
    "/v1/embeddings": lambda text: {"model": PRIMARY, "input": text},
    RESPONSES: lambda text: {"model": PRIMARY, "input": [
        {"role": "user", "content": [{"type": "input_text", "text": text}]}]},
    MODERATIONS: lambda text: {"model": MODERATOR, "input": [text, "I will hurt you"]},
}
LINE_BODY = {RESPONSES: "Response", MODERATIONS: "CreateModerationResponse"}


@pytest.fixture
async def relay(make_relay: MakeRelay) -> Relay:
    return await make_relay(FiveEndpoints(), models=five_endpoint_models())


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def records(endpoint: str, *texts: str) -> list[dict[str, Any]]:
    return [{"custom_id": f"{endpoint.rsplit('/', 1)[1]}-{i}", "method": "POST",
             "url": endpoint, "body": BODIES[endpoint](text)}
            for i, text in enumerate(texts, 1)]


async def upload(relay: Relay, data: bytes) -> dict[str, Any]:
    form = aiohttp.FormData()
    form.add_field("purpose", "batch")
    form.add_field("file", data, filename="input.jsonl")
    uploaded: dict[str, Any] = await relay.ok("POST", "/v1/files", data=form)
    conform(uploaded, "OpenAIFile")
    return uploaded


async def run_batch(relay: Relay, endpoint: str, lines: list[dict[str, Any]]
                    ) -> dict[str, Any]:
    """Upload, create and finish a batch, checking each batch object on the way."""
    uploaded = await upload(relay, jsonl(lines))
    created = await relay.submit({"input_file_id": uploaded["id"], "endpoint": endpoint,
                                  "completion_window": "24h"})
    conform(created, "Batch")
    done = await relay.wait_status(created["id"], "completed", "failed")
    conform(done, "Batch")
    return done


async def file_lines(relay: Relay, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    conform(await relay.ok("GET", f"/v1/files/{file_id}"), "OpenAIFile")
    async with relay.client.get(f"/v1/files/{file_id}/content",
                                headers=relay.headers()) as resp:
        assert resp.status == 200
        text = await resp.text()
    lines = [json.loads(line) for line in text.splitlines()]
    for line in lines:
        conform(line, "BatchRequestOutput")
    return lines


@pytest.mark.parametrize("endpoint", list(BODIES))
async def test_a_batch_of_each_endpoint_and_its_output_lines_conform(
        relay: Relay, endpoint: str) -> None:
    done = await run_batch(relay, endpoint, records(endpoint, "hello", "again"))

    assert done["status"] == "completed" and done["request_counts"]["completed"] == 2
    lines = await file_lines(relay, done["output_file_id"])
    assert [line["custom_id"] for line in lines] == [r["custom_id"]
                                                    for r in records(endpoint, "a", "b")]
    if endpoint in LINE_BODY:
        for line in lines:
            conform(line["response"]["body"], LINE_BODY[endpoint])


async def test_refused_records_go_to_the_error_file_in_the_output_line_shape(
        relay: Relay) -> None:
    good = records(RESPONSES, "fine")
    stateful = {**good[0], "custom_id": "stateful",
                "body": {**good[0]["body"], "previous_response_id": "resp_1"}}
    refused = {**records(CHAT, "REFUSE this")[0], "custom_id": "refused-upstream"}
    done = await run_batch(relay, RESPONSES, [*good, stateful])
    chat = await run_batch(relay, CHAT, [refused])

    errors = await file_lines(relay, done["error_file_id"])
    assert [(e["custom_id"], e["error"]["code"]) for e in errors] == [
        ("stateful", "previous_response_unsupported")]
    upstream = await file_lines(relay, chat["error_file_id"])
    assert upstream[0]["response"]["status_code"] == 400 and upstream[0]["error"] is None


async def test_a_batch_whose_file_is_broken_fails_with_an_errors_list(relay: Relay) -> None:
    bad = b'{"custom_id": "a", "method": "POST", "url": "/v1/responses", "body": \n'
    uploaded = await upload(relay, bad)
    created = await relay.submit({"input_file_id": uploaded["id"], "endpoint": RESPONSES,
                                  "completion_window": "24h"})
    failed = await relay.wait_status(created["id"], "failed")
    conform(failed, "Batch")
    assert failed["errors"]["data"][0]["code"] == "invalid_json_line"


async def test_lists_conform_full_and_empty(relay: Relay) -> None:
    for endpoint in (CHAT, RESPONSES):
        await run_batch(relay, endpoint, records(endpoint, "x"))
    other = await relay.new_key("ws-empty")

    page = await relay.ok("GET", "/v1/batches?limit=1")
    empty = await relay.ok("GET", "/v1/batches", key=other)
    files = await relay.ok("GET", "/v1/files")
    no_files = await relay.ok("GET", "/v1/files", key=other)

    conform(page, "ListBatchesResponse")
    assert page["has_more"] is True and len(page["data"]) == 1
    conform(empty, "ListBatchesResponse")
    assert (empty["data"], empty["first_id"], empty["last_id"]) == ([], None, None)
    conform(files, "ListFilesResponse")
    conform(no_files, "ListFilesResponse")
    assert (no_files["first_id"], no_files["last_id"]) == (None, None)


async def test_cancel_and_delete_answers_conform(relay: Relay) -> None:
    uploaded = await upload(relay, jsonl(records(RESPONSES, "BLOCK")))
    created = await relay.submit({"input_file_id": uploaded["id"], "endpoint": RESPONSES,
                                  "completion_window": "24h"})
    cancelled = await relay.ok("POST", f"/v1/batches/{created['id']}/cancel")
    conform(cancelled, "Batch")
    # The cancel may come after validation, with the record already on the wire: no
    # row starts after the answer, and one in flight finishes (here, once let go).
    relay.upstream.gate.set()
    conform(await relay.wait_status(created["id"], "cancelled"), "Batch")

    deleted = await relay.ok("DELETE", f"/v1/files/{uploaded['id']}")
    conform(deleted, "DeleteFileResponse")


async def test_error_answers_conform(relay: Relay) -> None:
    unknown = "batch_" + "0" * 32
    answers = [
        await relay.call("POST", "/v1/batches", json={
            "input_file_id": "file-" + "0" * 32, "endpoint": "/v1/images/generations",
            "completion_window": "24h"}),
        await relay.call("GET", f"/v1/batches/{unknown}"),
        await relay.call("GET", "/v1/files/file-" + "0" * 32),
        await relay.call("GET", "/v1/batches", key="not-a-key"),
    ]
    done = await run_batch(relay, MODERATIONS, records(MODERATIONS, "x"))
    answers.append(await relay.call("POST", f"/v1/batches/{done['id']}/cancel"))

    assert [status for status, _ in answers] == [400, 404, 404, 401, 409]
    for _, body in answers:
        conform(body, "ErrorResponse")


def test_the_vendored_description_is_complete_and_the_behaviour_cases_exist() -> None:
    """Each behaviour case names a property the description has (a re-vendored
    description that renames one fails here, not in a confusing validation)."""
    document = vendored()
    assert document["commit"] and document["date"]
    for name in document["roots"]:
        assert name in document["schemas"], name
    for schema, prop in BEHAVIOUR:
        assert prop in document["schemas"][schema]["properties"], (schema, prop)
    assert problems({"object": "list", "data": [], "has_more": False,
                     "first_id": None, "last_id": None}, "ListBatchesResponse") == []


async def test_the_results_view_shows_a_responses_text_and_a_moderations_results(
        relay: Relay) -> None:
    answered = await run_batch(relay, RESPONSES, records(RESPONSES, "hello"))
    moderated = await run_batch(relay, MODERATIONS, records(MODERATIONS, "kind words"))

    assert await relay.results(answered["id"]) == [
        {"custom_id": "responses-1", "content": "re: hello"}]
    [verdicts] = await relay.results(moderated["id"])
    assert [v["flagged"] for v in verdicts["content"]] == [False, True]
