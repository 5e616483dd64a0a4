"""Seed 002 end to end, driven by the official `openai` SDK: real relayd, real simulator.

Upload, create, poll, download both result files and read every line; the three
endpoints; inline `requests`; cancel; expiry; both price tiers; every refusal."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, Final

import httpx
import openai
import pytest
from openai.types import Batch

from tests.e2e.harness import RELAYD, Relayd, Simulator, wait_until

pytestmark = pytest.mark.e2e

CHAT: Final = "/v1/chat/completions"
TERMINAL = ("completed", "failed", "expired", "cancelled")
LIFECYCLE = ("validating", "in_progress", "finalizing", "completed")
BATCH_FIELDS = {
    "id", "object", "endpoint", "errors", "input_file_id", "completion_window", "status",
    "output_file_id", "error_file_id", "created_at", "in_progress_at", "expires_at",
    "finalizing_at", "completed_at", "failed_at", "expired_at", "cancelling_at",
    "cancelled_at", "request_counts", "metadata", "model", "priority", "usage",
}
# The harness prices gpt-4o-mini (the simulator's sim-small) at 0.15 in / 0.60 out USD
# per million tokens, i.e. 150 / 600 nano-USD per token; `backup` (sim-large) is free.
NANO_PER_TOKEN = {"sim-small": (150, 600), "sim-large": (0, 0)}


# -- helpers ---------------------------------------------------------------------------


def sdk(relayd: Relayd, workspace: str = "acme") -> openai.OpenAI:
    return openai.OpenAI(api_key=relayd.key(workspace), base_url=relayd.url + "/v1",
                         max_retries=0, timeout=30)


def chat(custom_id: str, text: str, *, model: str = "gpt-4o-mini",
         **body: Any) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": CHAT,
            "body": {"model": model, "messages": [{"role": "user", "content": text}],
                     **body}}


def record(custom_id: str, url: str, body: Any) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": url, "body": body}


def jsonl(records: Iterable[Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def upload(client: openai.OpenAI, records: Iterable[Any] | bytes,
           name: str = "requests.jsonl") -> str:
    data = records if isinstance(records, bytes) else jsonl(records)
    return client.files.create(file=(name, data), purpose="batch").id


def create(client: openai.OpenAI, *, file_id: str | None = None,
           requests: list[dict[str, Any]] | None = None, endpoint: str = CHAT,
           **extra: Any) -> Any:
    """A batch from a file, or from inline `requests` (sent in `extra_body`)."""
    body = dict(extra)
    if requests is not None:
        body["requests"] = requests
    return client.batches.create(
        # Relay takes inline requests in place of a file, and any endpoint it serves.
        input_file_id=file_id if file_id is not None else openai.omit,  # type: ignore[arg-type]
        endpoint=endpoint, completion_window="24h",  # type: ignore[arg-type]
        extra_body=body or None)


def finished(client: openai.OpenAI, batch_id: str, *, timeout: float = 20) -> Any:
    return wait_until(lambda: (b := client.batches.retrieve(batch_id)).status in TERMINAL
                      and b, timeout=timeout)


def lines(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    text = client.files.content(file_id).text
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def by_custom_id(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found = {item["custom_id"]: item for item in items}
    assert len(found) == len(items)
    return found


def results(client: openai.OpenAI, batch: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The output and error files by custom_id; each custom_id is in exactly one."""
    output, errors = lines(client, batch.output_file_id), lines(client, batch.error_file_id)
    counts = Counter(item["custom_id"] for item in output + errors)
    assert all(n == 1 for n in counts.values()), counts
    return by_custom_id(output), by_custom_id(errors)


def expected_cost(output: Iterable[dict[str, Any]], *, discount: bool) -> int:
    """Nano-USD from the simulator's token counts in the output file."""
    total = 0
    for item in output:
        body = item["response"]["body"]
        usage = body["usage"]
        price_in, price_out = NANO_PER_TOKEN[body["model"]]
        nano = price_in * usage["prompt_tokens"] + price_out * usage.get("completion_tokens", 0)
        total += nano // 2 if discount else nano
    return total


def token_sums(output: Iterable[dict[str, Any]]) -> tuple[int, int]:
    usages = [item["response"]["body"]["usage"] for item in output]
    return (sum(u["prompt_tokens"] for u in usages),
            sum(u.get("completion_tokens", 0) for u in usages))


def assert_output_line(item: dict[str, Any]) -> None:
    assert set(item) == {"id", "custom_id", "response", "error"}
    assert re.fullmatch(r"batch_req_[0-9a-f]{32}", item["id"])
    assert item["error"] is None
    assert set(item["response"]) == {"status_code", "request_id", "body"}
    assert item["response"]["status_code"] == 200
    assert isinstance(item["response"]["request_id"], str) and item["response"]["request_id"]


def assert_error_line(item: dict[str, Any], code: str) -> None:
    assert set(item) == {"id", "custom_id", "response", "error"}
    assert re.fullmatch(r"batch_req_[0-9a-f]{32}", item["id"])
    assert item["response"] is None
    assert item["error"]["code"] == code, item
    assert item["error"]["message"]


def cli(relayd: Relayd, *args: str) -> None:
    subprocess.run([*RELAYD, *args, "--config", str(relayd.config)], check=True,
                   capture_output=True, text=True)


def raw_create(http: httpx.Client, **body: Any) -> httpx.Response:
    return http.post("/v1/batches", json={"endpoint": CHAT, "completion_window": "24h",
                                          **body})


def prompts_seen(sim: Simulator) -> list[str]:
    return [r["prompt"] for r in sim.requests()]


# -- the whole trip ------------------------------------------------------------------------


def test_a_chat_batch_from_an_uploaded_file(simulator_factory: Callable[..., Simulator],
                                            relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "20")
    relayd = relayd_factory(sim).start()
    client = sdk(relayd)
    records = [
        chat("ok-0", "Classify: great product!"),
        chat("ok-1", "Classify: terrible service, it broke after a day"),
        chat("ok-2", "Classify sentiment: it is a box"),
        chat("ok-3", "Classify: love it, perfect"),
        chat("echo", "Tell me a story about a lighthouse keeper and a storm at sea"),
        chat("refused", "no [sim:fail=400]"),
        chat("fell-back", "Classify: fine [sim:fail=503 model=sim-small]"),
        chat("streamed", "Classify: streaming", stream=True),
        chat("moved", "Classify: tools", tool_config={"url": "https://tools.example.com"}),
        chat("ext-tools", "Classify: tools",
             openrelay={"tool_config": {"url": "https://tools.example.com", "max_rounds": -1}}),
        chat("ext-flow", "Classify: flow",
             openrelay={"workflow": {"url": "https://flow.example.com",
                                     "authorization": "Bearer x"}}),
        record("not-object", CHAT, "Classify: this body is a string"),
    ]
    data = jsonl(records)

    uploaded = client.files.create(file=("requests.jsonl", data), purpose="batch")
    assert re.fullmatch(r"file-[0-9a-f]{32}", uploaded.id)
    assert (uploaded.object, uploaded.bytes, uploaded.filename, uploaded.purpose) == (
        "file", len(data), "requests.jsonl", "batch")

    created = client.batches.create(input_file_id=uploaded.id, endpoint=CHAT,
                                    completion_window="24h", metadata={"name": "October"})
    assert re.fullmatch(r"batch_[0-9a-f]{32}", created.id)
    assert set(created.to_dict()) == BATCH_FIELDS
    assert created.status == "validating"
    assert created.input_file_id == uploaded.id
    assert created.metadata == {"name": "October"}
    assert created.to_dict()["priority"] == "standard"
    assert created.expires_at == created.created_at + 86_400

    seen, deadline = list[str](), time.monotonic() + 20
    while (batch := client.batches.retrieve(created.id)).status not in TERMINAL:
        assert time.monotonic() < deadline, seen
        if not seen or seen[-1] != batch.status:
            seen.append(batch.status)
        assert batch.request_counts is not None
        assert batch.request_counts.completed + batch.request_counts.failed \
            <= batch.request_counts.total
        time.sleep(0.02)
    seen.append(batch.status)
    assert all(s in LIFECYCLE for s in seen), seen
    assert [LIFECYCLE.index(s) for s in seen] == sorted(LIFECYCLE.index(s) for s in seen)

    view = batch.to_dict()
    assert set(view) == BATCH_FIELDS
    assert batch.status == "completed"
    assert batch.model == "gpt-4o-mini"
    assert batch.errors is None
    assert batch.request_counts is not None
    assert batch.request_counts.to_dict() == {"total": 12, "completed": 6, "failed": 6}
    assert batch.in_progress_at and batch.finalizing_at and batch.completed_at
    assert batch.created_at <= batch.in_progress_at <= batch.finalizing_at \
        <= batch.completed_at
    assert (batch.failed_at, batch.expired_at, batch.cancelling_at, batch.cancelled_at) == (
        None, None, None, None)

    output, errors = results(client, batch)
    assert set(output) == {"ok-0", "ok-1", "ok-2", "ok-3", "echo", "fell-back"}
    assert set(errors) == {"refused", "streamed", "moved", "ext-tools", "ext-flow",
                           "not-object"}
    for item in output.values():
        assert_output_line(item)
        assert item["response"]["body"]["object"] == "chat.completion"
    contents = {cid: item["response"]["body"]["choices"][0]["message"]["content"]
                for cid, item in output.items()}
    assert (contents["ok-0"], contents["ok-1"], contents["ok-2"]) == (
        "positive", "negative", "neutral")
    assert contents["echo"].startswith("Simulated reply (sim-small)")
    assert output["fell-back"]["response"]["body"]["model"] == "sim-large"
    assert len({item["id"] for item in [*output.values(), *errors.values()]}) == 12
    assert len({item["response"]["request_id"] for item in output.values()}) == 6

    refused = errors["refused"]
    assert refused["error"] is None
    assert refused["response"]["status_code"] == 400
    assert refused["response"]["body"]["error"]["type"] == "invalid_request_error"
    for cid, code in (("streamed", "stream_unsupported"), ("moved", "tool_config_moved"),
                      ("ext-tools", "invalid_tool_config"),
                      ("ext-flow", "workflow_not_enabled"), ("not-object", "invalid_body")):
        assert_error_line(errors[cid], code)

    # Usage: exact, from the simulator's counts; standard pays half; backup is free.
    assert batch.usage is not None
    assert (batch.usage.input_tokens, batch.usage.output_tokens) == token_sums(
        output.values())
    assert batch.usage.to_dict()["cost_nano_usd"] == expected_cost(output.values(),
                                                                   discount=True)
    assert isinstance(cost := batch.usage.to_dict()["cost_nano_usd"], int) and cost > 0

    # Nothing the validator refused reached the upstream.
    prompts = prompts_seen(sim)
    assert not any("stream" in p or "tools" in p or "flow" in p or "string" in p
                   for p in prompts), prompts

    # The result files are files: listed, described, and never a batch input.
    for file_id, name in ((batch.output_file_id, "output"), (batch.error_file_id, "errors")):
        assert file_id is not None
        described = client.files.retrieve(file_id)
        assert described.purpose == "batch_output"
        assert described.filename == f"{batch.id}_{name}.jsonl"
        assert described.bytes == len(client.files.content(file_id).content)
    listed = {f.id: f.purpose for f in client.files.list()}
    assert listed == {uploaded.id: "batch", batch.output_file_id: "batch_output",
                      batch.error_file_id: "batch_output"}
    assert client.files.content(uploaded.id).content == data
    assert batch.output_file_id is not None
    with pytest.raises(openai.BadRequestError) as refusal:
        client.batches.create(input_file_id=batch.output_file_id, endpoint=CHAT,
                              completion_window="24h")
    assert refusal.value.body["param"] == "input_file_id"  # type: ignore[index]


def test_embeddings_and_completions_batches(simulator_factory: Callable[..., Simulator],
                                            relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "10")
    relayd = relayd_factory(sim).start()
    client = sdk(relayd)
    embed_url, complete_url = "/v1/embeddings", "/v1/completions"
    embeddings = create(client, endpoint=embed_url, file_id=upload(client, [
        record("e-0", embed_url, {"model": "gpt-4o-mini", "input": "the quick brown fox"}),
        record("e-1", embed_url, {"model": "gpt-4o-mini", "input": ["one two", "three"]}),
        record("e-bad", embed_url, {"model": "gpt-4o-mini", "input": "x", "stream": True}),
    ]))
    completions = create(client, endpoint=complete_url, requests=[
        record("c-0", complete_url, {"model": "gpt-4o-mini", "prompt": "Classify: awful"}),
        record("c-1", complete_url, {"model": "gpt-4o-mini", "prompt": "Say hello to me"}),
    ])

    done = finished(client, embeddings.id)
    assert (done.status, done.endpoint, done.model) == ("completed", embed_url, "gpt-4o-mini")
    assert done.request_counts.to_dict() == {"total": 3, "completed": 2, "failed": 1}
    output, errors = results(client, done)
    assert set(output) == {"e-0", "e-1"}
    assert_error_line(errors["e-bad"], "stream_unsupported")
    for item in output.values():
        assert_output_line(item)
        assert item["response"]["body"]["object"] == "list"
    vectors = [d["embedding"] for d in output["e-1"]["response"]["body"]["data"]]
    assert len(vectors) == 2 and all(len(v) == 8 for v in vectors)
    assert (done.usage.input_tokens, done.usage.output_tokens) == (7, 0)
    assert done.usage.to_dict()["cost_nano_usd"] == 7 * 75 == expected_cost(
        output.values(), discount=True)

    done = finished(client, completions.id)
    assert (done.status, done.endpoint) == ("completed", complete_url)
    output, errors = results(client, done)
    assert errors == {} and done.error_file_id is None
    assert output["c-0"]["response"]["body"]["choices"][0]["text"] == "negative"
    assert output["c-1"]["response"]["body"]["object"] == "text_completion"
    assert (done.usage.input_tokens, done.usage.output_tokens) == token_sums(output.values())
    assert done.usage.to_dict()["cost_nano_usd"] == expected_cost(output.values(),
                                                                  discount=True)
    assert sorted(r["model"] for r in sim.requests()) == ["sim-small"] * 4


def test_inline_requests_become_an_input_file(simulator_factory: Callable[..., Simulator],
                                              relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    requests = [chat(f"r-{i}", f"Classify: great product {i}") for i in range(3)]
    created = create(client, requests=requests, metadata={"source": "inline"})
    assert created.status == "validating"
    assert re.fullmatch(r"file-[0-9a-f]{32}", created.input_file_id)
    assert created.metadata == {"source": "inline"}

    stored = lines(client, created.input_file_id)
    assert stored == requests
    assert client.files.retrieve(created.input_file_id).purpose == "batch"

    done = finished(client, created.id)
    assert done.status == "completed"
    output, errors = results(client, done)
    assert list(output) == ["r-0", "r-1", "r-2"] and errors == {}
    assert all(i["response"]["body"]["choices"][0]["message"]["content"] == "positive"
               for i in output.values())


def test_file_lifetimes_expires_after_and_output_expires_after(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    """The SDK's `expires_after` on an upload and `output_expires_after` on a batch set
    `expires_at` on the file objects (anchor: each file's own `created_at`)."""
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    uploaded = client.files.create(
        file=("requests.jsonl", jsonl([chat("ok", "Classify: fine"),
                                       chat("refused", "no [sim:fail=400]")])),
        purpose="batch", expires_after={"anchor": "created_at", "seconds": 7200})
    assert uploaded.expires_at == uploaded.created_at + 7200
    assert client.files.retrieve(uploaded.id).expires_at == uploaded.expires_at

    created = client.batches.create(
        input_file_id=uploaded.id, endpoint=CHAT, completion_window="24h",
        output_expires_after={"anchor": "created_at", "seconds": 3600})
    done = finished(client, created.id)
    assert done.status == "completed"
    for file_id in (done.output_file_id, done.error_file_id):
        assert file_id is not None
        result = client.files.retrieve(file_id)
        assert result.purpose == "batch_output"
        assert result.expires_at == result.created_at + 3600
    assert [line["custom_id"] for line in lines(client, done.output_file_id)] == ["ok"]

    with pytest.raises(openai.BadRequestError) as refused:
        client.files.create(file=("a.jsonl", jsonl([chat("a", "hi")])), purpose="batch",
                            expires_after={"anchor": "created_at", "seconds": 60})
    assert refused.value.body["param"] == "expires_after[seconds]"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as refused:
        client.batches.create(input_file_id=uploaded.id, endpoint=CHAT,
                              completion_window="24h",
                              output_expires_after={"anchor": "created_at",
                                                    "seconds": 2_592_001})
    assert refused.value.body["param"] == "output_expires_after.seconds"  # type: ignore[index]


def test_an_untidy_file_still_runs(simulator_factory: Callable[..., Simulator],
                                   relayd_factory: Callable[..., Relayd]) -> None:
    """Blank lines, CRLF endings, a 10 MB line and a last line without a newline."""
    sim = simulator_factory()
    # The 10 MB call takes the simulator a second or more on a loaded machine; the
    # harness's 5 s request timeout would retry it and the count below would be 4.
    relayd = relayd_factory(sim, retry={"request_timeout_s": 60}).start()
    client = sdk(relayd)
    big = "Classify: " + "fine " * (2 * 1024 * 1024)
    data = (b"\n" + json.dumps(chat("crlf", "Classify: great")).encode() + b"\r\n\n  \n"
            + json.dumps(chat("big", big)).encode() + b"\n\n"
            + json.dumps(chat("last", "Classify: awful")).encode())
    assert len(data) > 10 * 1024 * 1024
    done = finished(client, create(client, file_id=upload(client, data)).id)
    assert done.status == "completed", done.errors
    output, errors = results(client, done)
    assert list(output) == ["crlf", "big", "last"] and errors == {}
    assert output["big"]["response"]["body"]["usage"]["prompt_tokens"] == 2 * 1024 * 1024 + 1
    assert len(sim.requests()) == 3


def test_a_batch_whose_every_record_is_refused_completes(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    client = sdk(relayd)
    done = finished(client, create(client, requests=[
        chat("a", "hi", stream=True), chat("b", "hi", model="not-configured")]).id)
    assert done.status == "completed"
    assert done.request_counts.to_dict() == {"total": 2, "completed": 0, "failed": 2}
    assert done.output_file_id is None
    output, errors = results(client, done)
    assert output == {}
    assert_error_line(errors["a"], "stream_unsupported")
    assert_error_line(errors["b"], "model_not_found")
    assert sim.requests() == []


def test_expedited_goes_first_and_pays_full_price(simulator_factory: Callable[..., Simulator],
                                                  relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "5")
    relayd = relayd_factory(sim, concurrency=1, running=1).start()
    client = sdk(relayd)
    blocker = create(client, requests=[chat("block", "hold the slot [sim:sleep=1200]")])
    wait_until(lambda: "hold the slot [sim:sleep=1200]" in prompts_seen(sim))
    texts = ["Classify: great product and fast delivery", "Classify: broken"]
    standard = create(client, requests=[chat(f"s-{i}", f"standard {t}")
                                        for i, t in enumerate(texts)])
    expedited = create(client, requests=[chat(f"x-{i}", f"expedited {t}")
                                         for i, t in enumerate(texts)],
                       priority="expedited")
    assert (standard.to_dict()["priority"], expedited.to_dict()["priority"]) == (
        "standard", "expedited")
    def in_progress(batch_id: str) -> bool:
        return client.batches.retrieve(batch_id).status == "in_progress"
    for queued in (standard, expedited):  # both validated while the blocker still runs
        wait_until(partial(in_progress, queued.id))
    assert client.batches.retrieve(blocker.id).status == "in_progress"

    std, exp = finished(client, standard.id), finished(client, expedited.id)
    assert prompts_seen(sim)[1:] == [f"expedited {t}" for t in texts] + [
        f"standard {t}" for t in texts]

    std_out, _ = results(client, std)
    exp_out, _ = results(client, exp)
    assert token_sums(std_out.values()) == token_sums(exp_out.values())
    std_cost = std.usage.to_dict()["cost_nano_usd"]
    exp_cost = exp.usage.to_dict()["cost_nano_usd"]
    assert std_cost == expected_cost(std_out.values(), discount=True)
    assert exp_cost == expected_cost(exp_out.values(), discount=False)
    assert exp_cost == 2 * std_cost > 0


def test_cancel_keeps_partial_output(simulator_factory: Callable[..., Simulator],
                                     relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim, concurrency=1, running=1).start()
    client = sdk(relayd)
    slow = {f"slow-{i}" for i in range(8)}
    running = create(client, requests=[chat(f"slow-{i}", f"slow {i} [sim:sleep=400]")
                                       for i in range(8)])
    waiting = create(client, requests=[chat(f"w-{i}", f"waiting {i}") for i in range(2)])
    wait_until(lambda: client.batches.retrieve(waiting.id).status == "in_progress")
    # Counters are live: progress shows while the batch runs.
    def progressed() -> Batch | None:
        b = client.batches.retrieve(running.id)
        return b if b.request_counts is not None and b.request_counts.completed >= 1 else None
    progress = wait_until(progressed)
    assert progress.status == "in_progress" and progress.usage is not None
    assert progress.request_counts.total == 8

    answer = client.batches.cancel(waiting.id)  # not started: it ends before the answer
    assert answer.status == "cancelled" and answer.cancelling_at and answer.cancelled_at
    assert answer.cancelling_at <= answer.cancelled_at
    answer = client.batches.cancel(running.id)
    assert answer.status == "cancelling" and answer.cancelling_at is not None

    done = finished(client, running.id)
    assert done.status == "cancelled"
    assert done.cancelling_at <= done.cancelled_at
    assert done.completed_at is None
    output, errors = results(client, done)
    assert "slow-0" in output and "slow-7" in errors
    assert set(output) | set(errors) == slow
    for item in output.values():
        assert_output_line(item)
    for item in errors.values():
        assert_error_line(item, "batch_cancelled")
    counts = done.request_counts
    assert (counts.total, counts.completed, counts.failed) == (8, len(output), len(errors))
    assert done.usage.to_dict()["cost_nano_usd"] == expected_cost(output.values(),
                                                                  discount=True)
    assert len(sim.requests()) == len(output)

    never_ran = finished(client, waiting.id)
    assert never_ran.status == "cancelled" and never_ran.output_file_id is None
    _, errors = results(client, never_ran)
    assert set(errors) == {"w-0", "w-1"}
    for item in errors.values():
        assert_error_line(item, "batch_cancelled")
    assert not any(p.startswith("waiting") for p in prompts_seen(sim))
    with pytest.raises(openai.APIStatusError):
        client.batches.cancel(never_ran.id)
    assert client.batches.retrieve(never_ran.id).status == "cancelled"


def test_expiry_ends_unfinished_records(simulator_factory: Callable[..., Simulator],
                                        relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim, concurrency=1, running=1,
                            gateway={"completion_window_s": 2}).start()
    client = sdk(relayd)
    running = create(client, requests=[chat(f"fast-{i}", f"fast {i}") for i in range(2)]
                     + [chat(f"slow-{i}", f"slow {i} [sim:sleep=1500]") for i in range(4)])
    queued = create(client, requests=[chat(f"q-{i}", f"queued {i}") for i in range(2)])
    assert running.expires_at - running.created_at == 2

    done = finished(client, running.id, timeout=15)
    assert done.status == "expired"
    assert done.expired_at is not None and done.completed_at is None
    output, errors = results(client, done)
    assert {"fast-0", "fast-1", "slow-0"} <= set(output)
    assert {"slow-2", "slow-3"} <= set(errors)
    assert set(output) | set(errors) == {"fast-0", "fast-1"} | {f"slow-{i}" for i in range(4)}
    for item in output.values():
        assert_output_line(item)
    for item in errors.values():
        assert_error_line(item, "batch_expired")
    assert done.request_counts.to_dict() == {"total": 6, "completed": len(output),
                                             "failed": len(errors)}

    never_ran = finished(client, queued.id, timeout=5)
    assert never_ran.status == "expired" and never_ran.output_file_id is None
    _, errors = results(client, never_ran)
    assert set(errors) == {"q-0", "q-1"}
    for item in errors.values():
        assert_error_line(item, "batch_expired")
    assert not any(p.startswith("queued") for p in prompts_seen(sim))


def test_list_pages_through_every_batch(simulator_factory: Callable[..., Simulator],
                                        relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    made = [create(client, requests=[chat("r", f"Classify: item {i}")]).id for i in range(5)]
    newest_first = made[::-1]

    assert [b.id for b in client.batches.list(limit=2)] == newest_first
    assert [b.id for b in client.batches.list()] == newest_first
    page = client.batches.list(limit=2)
    assert [b.id for b in page.data] == newest_first[:2] and page.has_more

    with relayd.client() as http:
        first = http.get("/v1/batches", params={"limit": 2}).json()
        assert (first["object"], first["has_more"]) == ("list", True)
        assert (first["first_id"], first["last_id"]) == tuple(newest_first[:2])
        rest = http.get("/v1/batches", params={"limit": 10, "after": first["last_id"]}).json()
        assert [b["id"] for b in rest["data"]] == newest_first[2:]
        assert rest["has_more"] is False
        for bad in ("0", "101", "x"):
            reply = http.get("/v1/batches", params={"limit": bad})
            assert reply.status_code == 400 and reply.json()["error"]["param"] == "limit"


def test_the_list_beside_relay_jobs_and_a_retried_batch_are_well_typed(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    """An OpenAI client never reads a Relay job from the list (ISO times, no
    request_counts), and a dead-letter retry reads as a batch like any other."""
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    dead = chat("dead", "Classify: gone [sim:fail=503]")
    source = finished(client, create(client, requests=[chat("ok", "Classify: fine"),
                                                       dead]).id)
    assert source.request_counts.to_dict() == {"total": 2, "completed": 1, "failed": 1}
    with relayd.client() as http:
        native = http.post("/v1/batches", json={"model": "gpt-4o-mini", "requests": [
            {"custom_id": "n-1", "messages": [{"role": "user", "content": "Classify: ok"}]}]})
        retry_id = http.post(f"/v1/batches/{source.id}/dead_letter/retry").json()["id"]
        every = [j["id"] for j in http.get("/v1/batches?dialect=all").json()["data"]]

    retried = client.batches.retrieve(retry_id)
    assert retried.input_file_id and retried.input_file_id != source.input_file_id
    assert retried.expires_at == retried.created_at + 86_400
    assert retried.to_dict()["retry_of"] == source.id
    assert lines(client, retried.input_file_id) == [dead]
    listed = list(client.batches.list())
    assert [b.id for b in client.batches.list(limit=1)] == [b.id for b in listed] == [
        retry_id, source.id]  # one per page: the Relay job between them is not a page
    for b in listed:
        assert isinstance(b.created_at + 1, int)
        assert b.request_counts is not None and b.endpoint == CHAT and b.input_file_id
        Batch.model_validate(b.to_dict(), strict=True)
    assert every == [retry_id, native.json()["id"], source.id]
    done = finished(client, retry_id)
    assert done.status == "completed"  # its one record failed again, and cost nothing
    assert done.usage is not None and done.usage.total_tokens == 0
    assert done.request_counts.to_dict() == {"total": 1, "completed": 0, "failed": 1}


# -- refusals -----------------------------------------------------------------------------


def test_every_create_refusal_names_its_field(simulator_factory: Callable[..., Simulator],
                                              relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    file_id = upload(client, [chat("a", "hi")])
    one = [chat("a", "hi")]
    cases: list[tuple[dict[str, Any], str]] = [
        ({"input_file_id": file_id, "endpoint": "/v1/images/generations"}, "endpoint"),
        ({"input_file_id": file_id, "endpoint": None}, "endpoint"),
        ({"input_file_id": file_id, "completion_window": "48h"}, "completion_window"),
        ({"input_file_id": file_id, "completion_window": None}, "completion_window"),
        ({"input_file_id": file_id, "requests": one}, "input_file_id"),
        ({}, "requests"),
        ({"requests": []}, "requests"),
        ({"requests": one * 50_001}, "requests"),
        ({"input_file_id": "file-" + "0" * 32}, "input_file_id"),
        ({"input_file_id": file_id, "metadata": {f"k{i}": "v" for i in range(17)}},
         "metadata"),
        ({"input_file_id": file_id, "metadata": {"k" * 65: "v"}}, "metadata"),
        ({"input_file_id": file_id, "metadata": {"k": "v" * 513}}, "metadata"),
        ({"input_file_id": file_id, "priority": "urgent"}, "priority"),
        ({"input_file_id": file_id, "model": 7}, "model"),
        ({"input_file_id": file_id, "stream": True}, "stream"),
    ]
    with relayd.client() as http:
        for body, param in cases:
            reply = raw_create(http, **body)
            assert reply.status_code == 400, (body.keys(), reply.text)
            error = reply.json()["error"]
            assert error["type"] == "invalid_request_error"
            assert error["param"].startswith(param), (param, error)
            assert error["message"]
        junk = http.post("/v1/batches", content=b'{"endpoint": ',
                         headers={"Content-Type": "application/json"})
        assert junk.status_code == 400

    with pytest.raises(openai.BadRequestError) as refused:
        client.batches.create(input_file_id=file_id, endpoint="/v1/videos",
                              completion_window="24h")
    assert refused.value.status_code == 400
    assert refused.value.body["param"] == "endpoint"  # type: ignore[index]
    assert client.batches.list().data == []
    assert [f.id for f in client.files.list()] == [file_id]  # no inline file left behind


def test_a_broken_file_fails_the_batch_with_an_errors_list(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    client = sdk(relayd)
    good = json.dumps(chat("a", "hi")).encode() + b"\n"
    cases = {
        "invalid_json_line": (good + b'{"custom_id": "b", \n', 2),
        "bad_utf8": (good + json.dumps(chat("b", "X")).encode().replace(b"X", b"\xff\xfe")
                     + b"\n", 2),
        "duplicate_custom_id": (good + good, 2),
        "url_mismatch": (jsonl([record("a", "/v1/embeddings", {"model": "gpt-4o-mini",
                                                               "input": "x"})]), 1),
        "empty_file": (b"\n\n  \n", None),
        "invalid_request": (good + jsonl([{**chat("b", "hi"), "method": "GET"}]), 2),
        "too_many_tasks": (jsonl(record(f"r{i}", CHAT, {"model": "gpt-4o-mini"})
                                 for i in range(50_001)), None),
    }
    expected_code = {"bad_utf8": "invalid_json_line"}
    made = {name: create(client, file_id=upload(client, data)).id
            for name, (data, _) in cases.items()}
    made["inline_duplicate"] = create(client, requests=[chat("a", "x"), chat("a", "y")]).id

    for name, batch_id in made.items():
        batch = finished(client, batch_id)
        assert batch.status == "failed", name
        assert batch.failed_at is not None and batch.in_progress_at is None
        assert (batch.output_file_id, batch.error_file_id) == (None, None)
        assert batch.request_counts.to_dict() == {"total": 0, "completed": 0, "failed": 0}
        errors = batch.to_dict()["errors"]
        assert errors["object"] == "list"
        first = errors["data"][0]
        assert set(first) == {"code", "line", "message", "param"}, name
        if name == "inline_duplicate":
            assert (first["code"], first["line"]) == ("duplicate_custom_id", 2)
            continue
        assert first["code"] == expected_code.get(name, name)
        assert first["line"] == cases[name][1], (name, first)
    assert sim.requests() == []  # nothing of a failed batch ever ran


def test_auth_and_not_found(simulator_factory: Callable[..., Simulator],
                            relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    acme, globex = sdk(relayd, "acme"), sdk(relayd, "globex")
    file_id = upload(acme, [chat("a", "hi")])
    batch = create(acme, file_id=file_id)

    stranger = openai.OpenAI(api_key="rk_not-a-real-key", base_url=relayd.url + "/v1",
                             max_retries=0)
    for call in (lambda: stranger.batches.list(), lambda: stranger.files.list(),
                 lambda: stranger.batches.retrieve(batch.id),
                 lambda: stranger.files.retrieve(file_id),
                 lambda: stranger.batches.create(input_file_id=file_id, endpoint=CHAT,
                                                 completion_window="24h")):
        with pytest.raises(openai.AuthenticationError):
            call()
    with httpx.Client(base_url=relayd.url) as anonymous:
        for method, path in (("GET", "/v1/batches"), ("POST", "/v1/batches"),
                             ("GET", "/v1/files"), ("POST", "/v1/files"),
                             ("GET", f"/v1/files/{file_id}/content")):
            reply = anonymous.request(method, path)
            assert reply.status_code == 401
            assert reply.json()["error"]["type"] == "authentication_error"

    missing_batch, missing_file = "batch_" + "0" * 32, "file-" + "0" * 32
    for client, batch_id, file in ((acme, missing_batch, missing_file),
                                   (globex, batch.id, file_id)):
        for call in (lambda c=client, b=batch_id: c.batches.retrieve(b),
                     lambda c=client, b=batch_id: c.batches.cancel(b),
                     lambda c=client, f=file: c.files.retrieve(f),
                     lambda c=client, f=file: c.files.content(f),
                     lambda c=client, f=file: c.files.delete(f)):
            with pytest.raises(openai.NotFoundError):
                call()
    assert globex.batches.list().data == [] and globex.files.list().data == []
    with pytest.raises(openai.BadRequestError) as refused:
        globex.batches.create(input_file_id=file_id, endpoint=CHAT, completion_window="24h")
    assert refused.value.body["param"] == "input_file_id"  # type: ignore[index]
    assert acme.files.retrieve(file_id).id == file_id  # globex's delete changed nothing
    assert finished(acme, batch.id).status == "completed"


def test_workspace_switches(simulator_factory: Callable[..., Simulator],
                            relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    batch = create(client, requests=[chat("a", "hi")])
    finished(client, batch.id)

    cli(relayd, "workspaces", "set", "acme", "--batch-access", "off")
    for call in (lambda: client.batches.list(), lambda: client.batches.retrieve(batch.id),
                 lambda: client.batches.cancel(batch.id),
                 lambda: create(client, requests=[chat("b", "hi")])):
        with pytest.raises(openai.NotFoundError):
            call()
    with relayd.client() as http:
        for method, path in (("GET", f"/v1/batches/{batch.id}/results"),
                             ("GET", f"/v1/batches/{batch.id}/dead_letter"),
                             ("POST", f"/v1/batches/{batch.id}/dead_letter/retry"),
                             ("POST", "/v1/batches")):
            reply = http.request(method, path, json={"model": "gpt-4o-mini"})
            assert reply.status_code == 404, (path, reply.text)

    cli(relayd, "workspaces", "set", "acme", "--batch-access", "on", "--expedited", "off")
    assert [b.id for b in client.batches.list()] == [batch.id]
    with pytest.raises(openai.BadRequestError) as refused:
        create(client, requests=[chat("b", "hi")], priority="expedited")
    assert refused.value.body["param"] == "priority"  # type: ignore[index]
    standard = create(client, requests=[chat("b", "hi")], priority="standard")
    assert finished(client, standard.id).status == "completed"
    assert len(client.batches.list().data) == 2


# -- inputs that must not break the daemon ------------------------------------------------


def test_a_lone_surrogate_in_inline_requests_is_not_a_server_error(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    """`"\\ud800"` is valid JSON syntax; Python reads it as a lone surrogate, which
    cannot be written back as UTF-8."""
    relayd = relayd_factory(simulator_factory()).start()
    body = {"endpoint": CHAT, "completion_window": "24h",
            "requests": [chat("a", "hi \ud800 there"), chat("b\udc00", "hi")]}
    with relayd.client() as http:
        reply = http.post("/v1/batches", content=json.dumps(body).encode(),
                          headers={"Content-Type": "application/json"})
        assert reply.status_code in (200, 400), reply.text
        if reply.status_code == 200:
            done = wait_until(lambda: http.get(f"/v1/batches/{reply.json()['id']}").json()
                              ["status"] in TERMINAL, timeout=10)
            assert done


def test_a_lone_surrogate_custom_id_in_a_file_does_not_wedge_the_batch(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    data = jsonl([chat("a\ud800", "hi"), chat("b", "hi")])
    assert b"\\ud800" in data
    batch = create(client, file_id=upload(client, data))
    done = finished(client, batch.id, timeout=5)  # not left `validating` forever
    assert done.status in ("failed", "completed")
