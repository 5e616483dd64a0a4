"""The outbound client for user-supplied URLs: the URL policy before sending, the policy
resolver at connect time (DNS pinning), and the failure kinds, against a real aiohttp
server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpServer

from daemon.outbound.body import MAX_BYTES
from daemon.outbound.http import (
    OutboundClient,
    OutboundError,
    OutboundReply,
    PolicyResolver,
    TargetRefused,
)
from daemon.testing import closed_port

PUBLIC = "93.184.216.34"
PUBLIC6 = "2606:2800:220:1:248:1893:25c8:1946"
NAME = "hooks.example.test"

Server = Callable[..., Any]


class Receiver:
    """A local endpoint that records what it is sent and answers as told."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.release = asyncio.Event()  # what /slow waits for

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/hook", self.hook)
        app.router.add_post("/status/{code}", self.status)
        app.router.add_post("/redirect", self.redirect)
        app.router.add_post("/target", self.hook)
        app.router.add_post("/slow", self.slow)
        app.router.add_post("/big/{size}", self.big)
        app.router.add_post("/stream/{size}", self.stream)
        app.router.add_post("/gzip/{size}", self.gzipped)
        app.router.add_post("/cookie", self.cookie)
        return app

    async def record(self, request: web.Request) -> None:
        self.requests.append((request.path, dict(request.headers), await request.read()))

    async def hook(self, request: web.Request) -> web.Response:
        await self.record(request)
        return web.json_response({"ok": True}, headers={"X-Seen": "yes"})

    async def status(self, request: web.Request) -> web.Response:
        await self.record(request)
        return web.Response(status=int(request.match_info["code"]), text="nope")

    async def redirect(self, request: web.Request) -> web.Response:
        await self.record(request)
        return web.Response(status=302, headers={"Location": "/target"})

    async def slow(self, request: web.Request) -> web.Response:
        await self.record(request)
        await asyncio.wait_for(self.release.wait(), 5)
        return web.Response(text="late")

    async def big(self, request: web.Request) -> web.Response:
        await self.record(request)
        return web.Response(body=b"x" * int(request.match_info["size"]))

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """A chunked answer with no Content-Length: the cap must hold while reading."""
        await self.record(request)
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        left = int(request.match_info["size"])
        while left > 0:
            await response.write(b"y" * min(left, 1000))
            left -= 1000
        await response.write_eof()
        return response

    async def gzipped(self, request: web.Request) -> web.Response:
        """`size` bytes once decoded, a few hundred on the wire."""
        await self.record(request)
        body = gzip.compress(b"z" * int(request.match_info["size"]))
        return web.Response(body=body, headers={"Content-Encoding": "gzip"})

    async def cookie(self, request: web.Request) -> web.Response:
        await self.record(request)
        response = web.Response(text="ok")
        response.set_cookie("session", "secret-of-another-tenant")
        return response


class Lookups:
    """An injected blocking resolver that answers from a script and records its calls."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.calls: list[str] = []
        self.threads: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        self.threads.append(threading.current_thread().name)
        if len(self.answers) > 1:
            return self.answers.pop(0)
        return self.answers[0]


@pytest.fixture
async def receiver(aiohttp_server: Server) -> AsyncIterator[tuple[Receiver, int]]:
    receiver = Receiver()
    server = await aiohttp_server(receiver.app())
    yield receiver, server.port
    receiver.release.set()


@pytest.fixture
async def clients() -> AsyncIterator[Callable[..., OutboundClient]]:
    made: list[OutboundClient] = []

    def make(**kwargs: Any) -> OutboundClient:
        client = OutboundClient(**kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


async def refusal(client: OutboundClient, url: str, **kwargs: Any) -> OutboundError:
    with pytest.raises(OutboundError) as info:
        await client.post_json(url, {"x": 1}, **kwargs)
    return info.value


# --- allowed ---------------------------------------------------------------------------


async def test_allow_private_posts_json_to_loopback(receiver: tuple[Receiver, int],
                                                    clients: Callable[..., OutboundClient]) -> None:
    rec, port = receiver
    client = clients(allow_private=True)
    reply = await client.post_json(f"http://127.0.0.1:{port}/hook", {"id": "j1", "n": 2},
                                   headers={"X-Relay": "1"}, param="webhookUrl")
    assert isinstance(reply, OutboundReply)
    assert (reply.status, reply.ok) == (200, True)
    assert json.loads(reply.body) == {"ok": True}
    assert reply.headers["x-seen"] == "yes"
    ((path, headers, body),) = rec.requests
    assert path == "/hook"
    assert json.loads(body) == {"id": "j1", "n": 2}
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Relay"] == "1"


async def test_bytes_payload_is_sent_verbatim_and_headers_override(
        receiver: tuple[Receiver, int], clients: Callable[..., OutboundClient]) -> None:
    rec, port = receiver
    client = clients(allow_private=True)
    raw = b'{"a": 1,   "b": [2]}'
    await client.post_json(f"http://127.0.0.1:{port}/hook", raw,
                           headers={"content-type": "application/json; charset=utf-8",
                                    "User-Agent": "relayd-test/1"})
    ((_, headers, body),) = rec.requests
    assert body == raw
    assert headers["Content-Type"] == "application/json; charset=utf-8"
    assert headers["User-Agent"] == "relayd-test/1"


async def test_one_session_serves_many_parallel_calls(
        receiver: tuple[Receiver, int], clients: Callable[..., OutboundClient]) -> None:
    rec, port = receiver
    client = clients(allow_private=True)
    replies = await asyncio.gather(*(client.post_json(f"http://127.0.0.1:{port}/hook",
                                                      {"i": i}) for i in range(20)))
    assert [r.status for r in replies] == [200] * 20
    assert sorted(json.loads(body)["i"] for _, _, body in rec.requests) == list(range(20))


async def test_aclose_then_use_opens_a_new_session(receiver: tuple[Receiver, int],
                                                   clients: Callable[..., OutboundClient]) -> None:
    _, port = receiver
    client = clients(allow_private=True)
    assert (await client.post_json(f"http://127.0.0.1:{port}/hook", {})).status == 200
    await client.aclose()
    await client.aclose()  # idempotent
    assert (await client.post_json(f"http://127.0.0.1:{port}/hook", {})).status == 200


# --- refused by the policy ---------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]", "10.0.0.1", "169.254.169.254",
                                  "[::ffff:127.0.0.1]"])
async def test_non_public_literal_is_refused_before_sending(receiver: tuple[Receiver, int],
                                                            clients: Callable[..., OutboundClient],
                                                            host: str) -> None:
    rec, port = receiver
    lookups = Lookups([PUBLIC])
    client = clients(allow_private=False, resolve=lookups)
    error = await refusal(client, f"https://{host}:{port}/hook", param="webhookUrl")
    assert (error.kind, error.code) == ("refused", "forbidden_target")
    assert "'webhookUrl'" in error.message and "non-public" in error.message
    assert rec.requests == [] and lookups.calls == []


async def test_name_resolving_to_loopback_is_refused_at_resolve_time(
        receiver: tuple[Receiver, int], clients: Callable[..., OutboundClient]) -> None:
    """The name is refused by the connector's resolver, from the addresses it looked up:
    the connection is never made, whatever the URL looked like."""
    rec, port = receiver
    lookups = Lookups(["127.0.0.1"])
    client = clients(allow_private=False, resolve=lookups)
    error = await refusal(client, f"https://{NAME}:{port}/hook", param="webhookUrl")
    assert (error.kind, error.code) == ("refused", "forbidden_target")
    assert "non-public address (127.0.0.1)" in error.message
    assert isinstance(error.__cause__, TargetRefused)
    assert lookups.calls == [NAME]
    assert rec.requests == []


async def test_one_private_address_among_public_ones_refuses(
        clients: Callable[..., OutboundClient]) -> None:
    lookups = Lookups([PUBLIC, "10.0.0.7"])
    client = clients(allow_private=False, resolve=lookups)
    error = await refusal(client, f"https://{NAME}/hook")
    assert (error.kind, error.code) == ("refused", "forbidden_target")
    assert "10.0.0.7" in error.message


@pytest.mark.parametrize("url", [f"http://{NAME}/hook", f"http://{PUBLIC}/hook"])
async def test_http_is_refused_when_strict(clients: Callable[..., OutboundClient],
                                           url: str) -> None:
    lookups = Lookups([PUBLIC])
    client = clients(allow_private=False, resolve=lookups)
    error = await refusal(client, url, param="tools[0].url")
    assert (error.kind, error.code) == ("refused", "invalid_url")
    assert "'tools[0].url' must use https://" in error.message
    assert lookups.calls == []


@pytest.mark.parametrize("url", ["ftp://example.com/x", "not a url", "https://",
                                 f"https://{PUBLIC}:abc/hook", f"https://{PUBLIC}:99999/h",
                                 "https://2130706433/hook", "https://127.1/hook"])
@pytest.mark.parametrize("allow_private", [False, True])
async def test_malformed_urls_are_refused(clients: Callable[..., OutboundClient], url: str,
                                          allow_private: bool) -> None:
    client = clients(allow_private=allow_private, resolve=Lookups(["127.0.0.1"]))
    error = await refusal(client, url)
    assert error.kind == "refused"
    assert error.code in ("invalid_url", "forbidden_target")


# --- DNS pinning -------------------------------------------------------------------------


async def test_the_resolver_returns_exactly_the_checked_addresses() -> None:
    lookups = Lookups([PUBLIC, PUBLIC6])
    resolver = PolicyResolver(lookups, allow_private=False)
    results = await resolver.resolve(NAME, 8443, family=socket.AF_UNSPEC)
    assert [(r["host"], r["family"]) for r in results] == [
        (PUBLIC, socket.AF_INET), (PUBLIC6, socket.AF_INET6)]
    assert {r["hostname"] for r in results} == {NAME}  # the name stays for TLS and Host
    assert {r["port"] for r in results} == {8443}
    assert lookups.calls == [NAME]
    assert lookups.threads[0] != threading.current_thread().name  # off the loop
    only4 = await resolver.resolve(NAME, 443, family=socket.AF_INET)
    assert [r["host"] for r in only4] == [PUBLIC]


async def test_the_resolver_refuses_non_public_answers() -> None:
    resolver = PolicyResolver(Lookups([PUBLIC, "192.168.1.9"]), allow_private=False)
    with pytest.raises(TargetRefused) as info:
        await resolver.resolve(NAME, 443, family=socket.AF_UNSPEC)
    assert (info.value.host, info.value.address) == (NAME, "192.168.1.9")


async def test_the_resolver_with_allow_private_returns_any_answer() -> None:
    resolver = PolicyResolver(Lookups(["127.0.0.1", "::1"]), allow_private=True)
    results = await resolver.resolve("localhost", 80, family=socket.AF_UNSPEC)
    assert [r["host"] for r in results] == ["127.0.0.1", "::1"]


async def test_the_resolver_checks_an_ip_literal_without_looking_it_up() -> None:
    lookups = Lookups([PUBLIC])
    resolver = PolicyResolver(lookups, allow_private=False)
    assert [r["host"] for r in await resolver.resolve(PUBLIC, 443)] == [PUBLIC]
    with pytest.raises(TargetRefused):
        await resolver.resolve("127.0.0.1", 443)
    assert lookups.calls == []


@pytest.mark.parametrize("answer", [OSError("Name or service not known"), []])
async def test_the_resolver_reports_a_failed_lookup_as_oserror(answer: Any) -> None:
    def resolve(host: str) -> list[str]:
        if isinstance(answer, Exception):
            raise answer
        return list(answer)

    resolver = PolicyResolver(resolve, allow_private=False)
    with pytest.raises(OSError):
        await resolver.resolve(NAME, 443, family=socket.AF_UNSPEC)


async def test_a_name_connects_to_the_looked_up_address_once(
        receiver: tuple[Receiver, int], clients: Callable[..., OutboundClient]) -> None:
    """One lookup per connection: a second answer (a rebinding attempt) is never asked
    for, the connection goes where the first answer said, and Host keeps the name."""
    rec, port = receiver
    lookups = Lookups(["127.0.0.1"], ["192.0.2.1"])  # TEST-NET: unreachable if used
    client = clients(allow_private=True, resolve=lookups)
    reply = await client.post_json(f"http://{NAME}:{port}/hook", {"a": 1})
    assert reply.status == 200
    assert lookups.calls == [NAME]
    ((_, headers, _),) = rec.requests
    assert headers["Host"] == f"{NAME}:{port}"


async def test_an_unresolvable_name_is_a_connection_error(
        clients: Callable[..., OutboundClient]) -> None:
    def resolve(host: str) -> list[str]:
        raise OSError("Name or service not known")

    client = clients(allow_private=False, resolve=resolve)
    error = await refusal(client, f"https://{NAME}/hook")
    assert error.kind == "connection"
    assert NAME in error.message


def make_cert(directory: Path, name: str) -> Path:
    """A self-signed certificate (its own CA) for `name`, with its key, in one PEM."""
    pem = directory / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", f"/CN={name}",
         "-addext", f"subjectAltName=DNS:{name}", "-keyout", str(directory / "key.pem"),
         "-out", str(pem)],
        check=True, capture_output=True, timeout=30)
    pem.write_text(pem.read_text() + (directory / "key.pem").read_text())
    return pem


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")
async def test_tls_keeps_the_name_for_sni_and_the_certificate(
        aiohttp_server: AiohttpServer, clients: Callable[..., OutboundClient],
        tmp_path: Path) -> None:
    """Connected to the looked-up address, TLS still speaks to the name: SNI is the
    name, and the certificate (valid for the name only) verifies."""
    pem = make_cert(tmp_path, NAME)
    seen_sni: list[str | None] = []
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(pem)

    def record_sni(sock: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        seen_sni.append(name)

    server_ctx.sni_callback = record_sni
    rec = Receiver()
    server = await aiohttp_server(rec.app(), ssl=server_ctx)
    client_ctx = ssl.create_default_context(cafile=str(pem))
    client = clients(allow_private=True, resolve=Lookups(["127.0.0.1"]),
                     ssl_context=client_ctx)

    reply = await client.post_json(f"https://{NAME}:{server.port}/hook", {"a": 1})
    assert reply.status == 200
    assert seen_sni == [NAME]
    assert rec.requests[0][1]["Host"] == f"{NAME}:{server.port}"

    # The same certificate does not cover the bare address: the check is by name.
    error = await refusal(client, f"https://127.0.0.1:{server.port}/hook")
    assert error.kind == "connection"
    assert "certificate" in error.message.lower()


# --- failures ----------------------------------------------------------------------------


async def test_timeout(receiver: tuple[Receiver, int],
                       clients: Callable[..., OutboundClient]) -> None:
    rec, port = receiver
    client = clients(allow_private=True)
    error = await refusal(client, f"http://127.0.0.1:{port}/slow", timeout_s=0.1)
    assert error.kind == "timeout"
    assert "0.1 s" in error.message
    rec.release.set()


async def test_connection_refused(clients: Callable[..., OutboundClient]) -> None:
    client = clients(allow_private=True)
    with closed_port() as port:
        error = await refusal(client, f"http://127.0.0.1:{port}/hook")
    assert error.kind == "connection"


@pytest.mark.parametrize("path", ["big", "stream"])
async def test_body_over_max_bytes_is_too_large(receiver: tuple[Receiver, int],
                                                clients: Callable[..., OutboundClient],
                                                path: str) -> None:
    _, port = receiver
    client = clients(allow_private=True)
    error = await refusal(client, f"http://127.0.0.1:{port}/{path}/5000", max_bytes=4999)
    assert (error.kind, error.status) == ("too_large", 200)
    assert "4999 bytes" in error.message
    reply = await client.post_json(f"http://127.0.0.1:{port}/{path}/5000", {},
                                   max_bytes=5000)
    assert reply.body == (b"x" if path == "big" else b"y") * 5000


async def test_default_cap_is_8_mib() -> None:
    assert MAX_BYTES == 8 * 1024 * 1024


@pytest.mark.parametrize("path", ["big", "stream", "gzip"])
async def test_the_clients_cap_holds_for_every_call(receiver: tuple[Receiver, int],
                                                    clients: Callable[..., OutboundClient],
                                                    path: str) -> None:
    _, port = receiver
    client = clients(allow_private=True, max_bytes=5000)
    error = await refusal(client, f"http://127.0.0.1:{port}/{path}/5001")
    assert (error.kind, error.status) == ("too_large", 200)
    assert error.message.endswith("is over the 5000 bytes limit ([gateway] max_response_mb)")
    reply = await client.post_json(f"http://127.0.0.1:{port}/{path}/5000", {})
    assert len(reply.body) == 5000


async def test_a_call_may_lower_the_cap_but_never_raise_it(
        receiver: tuple[Receiver, int], clients: Callable[..., OutboundClient]) -> None:
    _, port = receiver
    client = clients(allow_private=True, max_bytes=5000)
    raised = await refusal(client, f"http://127.0.0.1:{port}/stream/6000", max_bytes=10_000)
    assert "5000 bytes limit ([gateway] max_response_mb)" in raised.message
    lowered = await refusal(client, f"http://127.0.0.1:{port}/big/200", max_bytes=100)
    assert lowered.message.endswith("is over the 100 bytes limit")  # not the setting's


async def test_the_cap_is_named_in_megabytes(receiver: tuple[Receiver, int],
                                             clients: Callable[..., OutboundClient]) -> None:
    _, port = receiver
    client = clients(allow_private=True, max_bytes=1024 * 1024)
    error = await refusal(client, f"http://127.0.0.1:{port}/big/{1024 * 1024 + 1}")
    assert "over the 1 MB limit ([gateway] max_response_mb)" in error.message


def test_a_negative_cap_is_refused() -> None:
    with pytest.raises(ValueError):
        OutboundClient(allow_private=True, max_bytes=-1)


async def test_redirect_is_returned_not_followed(receiver: tuple[Receiver, int],
                                                 clients: Callable[..., OutboundClient]) -> None:
    rec, port = receiver
    client = clients(allow_private=True)
    reply = await client.post_json(f"http://127.0.0.1:{port}/redirect", {})
    assert (reply.status, reply.ok) == (302, False)
    assert reply.headers["Location"] == "/target"
    assert [path for path, _, _ in rec.requests] == ["/redirect"]


@pytest.mark.parametrize("code", [400, 404, 500, 503])
async def test_error_status_is_an_answer_not_an_exception(receiver: tuple[Receiver, int],
                                                          clients: Callable[..., OutboundClient],
                                                          code: int) -> None:
    _, port = receiver
    reply = await clients(allow_private=True).post_json(
        f"http://127.0.0.1:{port}/status/{code}", {})
    assert (reply.status, reply.ok, reply.body) == (code, False, b"nope")


async def test_cookies_are_never_kept(receiver: tuple[Receiver, int],
                                      clients: Callable[..., OutboundClient]) -> None:
    rec, port = receiver
    client = clients(allow_private=True)
    await client.post_json(f"http://127.0.0.1:{port}/cookie", {})
    await client.post_json(f"http://127.0.0.1:{port}/hook", {})
    assert "Cookie" not in rec.requests[1][1]
