"""`/v1/files` end to end: upload, list, describe, download, delete; refusals; the 413
size cap (streamed, never held in memory, no partial file left) and the 429 cap on
concurrent uploads per workspace."""

from __future__ import annotations

import json
import re
import resource
import threading
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from daemon.testing import Simulator
from tests.e2e.harness import Relayd, wait_until

pytestmark = pytest.mark.e2e

MiB = 1024 * 1024
BOUNDARY = "relay-test-boundary-7d1c"
FILE_FIELDS = {"id", "object", "bytes", "created_at", "filename", "purpose", "status"}


def sdk(relayd: Relayd, workspace: str = "acme") -> openai.OpenAI:
    return openai.OpenAI(api_key=relayd.key(workspace), base_url=relayd.url + "/v1",
                         max_retries=0, timeout=60)


def files_dir(relayd: Relayd) -> Path:
    data_dir = tomllib.loads(relayd.config.read_text())["server"]["data_dir"]
    return Path(data_dir) / "files"


def stored(relayd: Relayd) -> set[str]:
    folder = files_dir(relayd)
    return {p.name for p in folder.iterdir()} if folder.exists() else set()


def records(n: int) -> bytes:
    return b"".join(json.dumps({
        "custom_id": f"r-{i}", "method": "POST", "url": "/v1/chat/completions",
        "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"hi {i}"}]},
    }).encode() + b"\n" for i in range(n))


def multipart(chunks: Iterator[bytes], *, purpose: str = "batch",
              filename: str = "big.jsonl") -> Iterator[bytes]:
    """A multipart/form-data body built by hand, so the file part can be a generator."""
    yield (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n"
           f"{purpose}\r\n").encode()
    yield (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; "
           f"filename=\"{filename}\"\r\nContent-Type: application/jsonl\r\n\r\n").encode()
    yield from chunks
    yield f"\r\n--{BOUNDARY}--\r\n".encode()


MULTIPART = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}


def upload_stream(relayd: Relayd, chunks: Iterator[bytes], *, workspace: str = "acme",
                  **options: Any) -> httpx.Response:
    with httpx.Client(base_url=relayd.url, timeout=60,
                      headers={"Authorization": f"Bearer {relayd.key(workspace)}"}) as http:
        return http.post("/v1/files", content=multipart(chunks, **options), headers=MULTIPART)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


# -- the ordinary life of a file ---------------------------------------------------------


def test_upload_describe_list_download_delete(simulator_factory: Callable[..., Simulator],
                                              relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    data = records(3)

    made = client.files.create(file=("requests.jsonl", data), purpose="batch")
    view = made.to_dict()
    assert set(view) >= FILE_FIELDS
    assert re.fullmatch(r"file-[0-9a-f]{32}", made.id)
    assert (view["object"], view["bytes"], view["filename"], view["purpose"],
            view["status"]) == ("file", len(data), "requests.jsonl", "batch", "processed")
    assert isinstance(view["created_at"], int)
    assert client.files.retrieve(made.id).to_dict() == view
    assert stored(relayd) == {made.id}
    assert (files_dir(relayd) / made.id).read_bytes() == data

    with relayd.client() as http:
        reply = http.get(f"/v1/files/{made.id}/content")
        assert reply.status_code == 200 and reply.content == data
        assert reply.headers["content-type"].startswith("application/jsonl")
        with http.stream("GET", f"/v1/files/{made.id}/content") as streamed:
            assert b"".join(streamed.iter_bytes(64)) == data
    assert client.files.content(made.id).content == data

    second = client.files.create(file=("more.jsonl", records(1)), purpose="batch")
    assert [f.id for f in client.files.list()] == [second.id, made.id]
    page = client.files.list(limit=1)
    assert [f.id for f in page.data] == [second.id] and page.has_more
    assert [f.id for f in client.files.list(limit=1)] == [second.id, made.id]  # auto-pages
    assert [f.id for f in client.files.list(after=second.id)] == [made.id]
    assert [f.id for f in client.files.list(purpose="batch_output")] == []

    deleted = client.files.delete(made.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (made.id, "file", True)
    assert stored(relayd) == {second.id}
    for call in (lambda: client.files.retrieve(made.id), lambda: client.files.content(made.id),
                 lambda: client.files.delete(made.id)):
        with pytest.raises(openai.NotFoundError):
            call()
    assert [f.id for f in client.files.list()] == [second.id]
    with pytest.raises(openai.BadRequestError) as refused:
        client.batches.create(input_file_id=made.id, endpoint="/v1/chat/completions",
                              completion_window="24h")
    assert refused.value.body["param"] == "input_file_id"  # type: ignore[index]


def test_upload_refusals_leave_nothing_behind(simulator_factory: Callable[..., Simulator],
                                              relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    with pytest.raises(openai.BadRequestError) as refused:
        client.files.create(file=("requests.jsonl", records(1)), purpose="fine-tune")
    assert refused.value.body["param"] == "purpose"  # type: ignore[index]

    with relayd.client() as http:
        cases: list[tuple[dict[str, Any], str]] = [
            ({"files": {"file": ("a.jsonl", records(1))}}, "purpose"),
            ({"files": {"file": ("a.jsonl", records(1))},
              "data": {"purpose": "batch_output"}}, "purpose"),
            ({"files": {"file": ("a.jsonl", records(1))}, "data": {"purpose": "assistants"}},
             "purpose"),
            ({"files": {"other": ("a.jsonl", records(1))}, "data": {"purpose": "batch"}},
             "file"),
            ({"files": {"file": ("a.jsonl", b"")}, "data": {"purpose": "batch"}}, "file"),
            ({"json": {"purpose": "batch", "file": "x"}}, "file"),
            ({"content": records(1), "headers": {"Content-Type": "application/jsonl"}},
             "file"),
        ]
        for options, param in cases:
            reply = http.post("/v1/files", **options)
            assert reply.status_code == 400, (options.keys(), reply.text)
            error = reply.json()["error"]
            assert (error["type"], error["param"]) == ("invalid_request_error", param), error
        assert http.get("/v1/files").json()["data"] == []
    assert stored(relayd) == set()


def test_another_workspace_never_sees_a_file(simulator_factory: Callable[..., Simulator],
                                             relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    acme, globex = sdk(relayd, "acme"), sdk(relayd, "globex")
    made = acme.files.create(file=("requests.jsonl", records(2)), purpose="batch")
    for call in (lambda: globex.files.retrieve(made.id), lambda: globex.files.content(made.id),
                 lambda: globex.files.delete(made.id)):
        with pytest.raises(openai.NotFoundError) as missing:
            call()
        assert missing.value.body["type"] == "not_found_error"  # type: ignore[index]
    assert globex.files.list().data == []
    assert acme.files.content(made.id).content == records(2)
    assert stored(relayd) == {made.id}


def test_result_files_are_batch_output_files(simulator_factory: Callable[..., Simulator],
                                             relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    client = sdk(relayd)
    batch = client.batches.create(
        input_file_id=client.files.create(file=("in.jsonl", records(2)), purpose="batch").id,
        endpoint="/v1/chat/completions", completion_window="24h")
    done = wait_until(lambda: (b := client.batches.retrieve(batch.id)).status == "completed"
                      and b)
    assert done.error_file_id is None  # no failed record: no error file
    results = client.files.list(purpose="batch_output").data
    assert [f.id for f in results] == [done.output_file_id]
    assert results[0].filename == f"{batch.id}_output.jsonl"
    assert stored(relayd) == {batch.input_file_id, done.output_file_id}
    assert len(client.files.content(done.output_file_id).text.splitlines()) == 2


def test_a_multipart_body_cut_short_is_a_client_error(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    """A body whose file part never reaches its closing boundary is the client's mistake."""
    relayd = relayd_factory(simulator_factory()).start()
    body = b"".join(multipart(iter([records(2)])))
    truncated = body[:body.rindex(b"\r\n--")]
    with relayd.client() as http:
        reply = http.post("/v1/files", content=truncated, headers=MULTIPART)
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["param"] == "file"
        assert http.get("/v1/files").json()["data"] == []
    assert stored(relayd) == set()


@pytest.mark.parametrize("disposition", [
    'filename="we\\"ird.jsonl"',  # a quote in the name
    "filename*=UTF-8''%D0%BE%D1%82%D1%87%D1%91%D1%82.jsonl",  # non-ASCII
    "filename*=UTF-8''a%0D%0Ab.jsonl",  # CR LF in the name
])
def test_whatever_the_filename_the_content_downloads(simulator_factory: Callable[..., Simulator],
                                                     relayd_factory: Callable[..., Relayd],
                                                     disposition: str) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    data = records(1)
    body = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n"
            f"batch\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"{disposition}\r\n\r\n").encode() + data + f"\r\n--{BOUNDARY}--\r\n".encode()
    with relayd.client() as http:
        made = http.post("/v1/files", content=body, headers=MULTIPART)
        assert made.status_code == 200, made.text
        reply = http.get(f"/v1/files/{made.json()['id']}/content")
        assert reply.status_code == 200
        assert reply.content == data


# -- size cap ---------------------------------------------------------------------------


def test_an_upload_over_the_cap_is_413_and_leaves_no_file(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory(), server={"max_upload_mb": 1}).start()
    client = sdk(relayd)
    at_cap = client.files.create(file=("cap.jsonl", b"x" * MiB), purpose="batch")
    assert at_cap.bytes == MiB

    with pytest.raises(openai.APIStatusError) as too_big:
        client.files.create(file=("big.jsonl", b"x" * (MiB + 1)), purpose="batch")
    assert too_big.value.status_code == 413
    assert too_big.value.body["param"] == "file"  # type: ignore[index]

    streamed = upload_stream(relayd, (b"y" * 256 * 1024 for _ in range(12)))
    assert streamed.status_code == 413, streamed.text
    assert "1 MB" in streamed.json()["error"]["message"]

    assert stored(relayd) == {at_cap.id}
    assert [f.id for f in client.files.list()] == [at_cap.id]
    after = client.files.create(file=("small.jsonl", records(1)), purpose="batch")
    assert stored(relayd) == {at_cap.id, after.id}


def test_the_default_200_mb_cap_streams(simulator_factory: Callable[..., Simulator],
                                        relayd_factory: Callable[..., Relayd]) -> None:
    """Over 200 MB, sent from a generator: neither side ever holds the body."""
    relayd = relayd_factory(simulator_factory()).start()
    assert relayd.proc is not None
    client_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    server_before = peak_rss_mb(relayd.proc.pid)
    block = b"z" * MiB
    sent = [0]

    def chunks() -> Iterator[bytes]:
        for _ in range(202):
            sent[0] += len(block)
            yield block

    reply = upload_stream(relayd, chunks())
    assert reply.status_code == 413, reply.text
    error = reply.json()["error"]
    assert (error["param"], error["code"]) == ("file", "file_too_large")
    assert "200 MB" in error["message"]
    assert sent[0] > 200 * MiB
    assert stored(relayd) == set()
    assert relayd.key("acme") and sdk(relayd).files.list().data == []
    assert peak_rss_mb(relayd.proc.pid) - server_before < 100
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - client_before < 100


# -- concurrent uploads --------------------------------------------------------------------


def test_too_many_uploads_at_once_is_429(simulator_factory: Callable[..., Simulator],
                                         relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()  # max_concurrent_uploads = 4
    client = sdk(relayd)
    release = threading.Event()
    replies: list[httpx.Response] = []

    def held() -> Iterator[bytes]:
        yield b'{"custom_id": "held", '
        release.wait(timeout=20)
        yield (b'"method": "POST", "url": "/v1/chat/completions", '
               b'"body": {"model": "gpt-4o-mini", "messages": []}}\n')

    def hold() -> None:
        replies.append(upload_stream(relayd, held()))

    threads = [threading.Thread(target=hold) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        # All four hold their slot (each writes its partial file) before any probe: a
        # probe in progress as a held upload arrived would have it refused instead.
        wait_until(lambda: len(list(files_dir(relayd).glob("*.partial"))) == 4)

        def probe() -> openai.RateLimitError | None:
            try:
                extra = client.files.create(file=("x.jsonl", records(1)), purpose="batch")
            except openai.RateLimitError as exc:
                return exc
            client.files.delete(extra.id)  # raced ahead of the held uploads
            return None

        limited = wait_until(probe, timeout=10)
        assert limited.status_code == 429 and limited.response.headers["Retry-After"] == "1"
        assert limited.body["type"] == "rate_limit_error"
        # The cap is per workspace.
        other = sdk(relayd, "globex").files.create(file=("x.jsonl", records(1)),
                                                    purpose="batch")
        assert other.bytes == len(records(1))
    finally:
        release.set()
        for thread in threads:
            thread.join(timeout=30)

    assert [r.status_code for r in replies] == [200] * 4, [r.text for r in replies]
    held_ids = {r.json()["id"] for r in replies}
    assert {f.id for f in client.files.list()} == held_ids
    assert all(f.bytes > 0 for f in client.files.list())
    after = client.files.create(file=("x.jsonl", records(1)), purpose="batch")
    assert after.purpose == "batch"
