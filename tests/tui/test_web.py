"""`relay web`'s rules without a browser: what it binds and warns about, how the served
app gets its connection (environment, never its command line), and the websocket's
Origin check (in-process aiohttp). The browser test is tests/cli/test_web.py."""

from __future__ import annotations

import shlex
import sys
from typing import Any

import pytest

from relaytui import cli
from relaytui.settings import Settings
from relaytui.web import (
    RelayServer,
    allowed_origins,
    app_command,
    connection_environment,
    is_loopback,
    origin_allowed,
    public_url,
    warning,
)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"])
def test_loopback_binds_need_no_warning(host: str) -> None:
    assert is_loopback(host)
    assert warning(host) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "relay.example.com"])
def test_any_other_bind_is_warned_about(host: str) -> None:
    assert not is_loopback(host)
    text = warning(host)
    assert text is not None and host in text and "API key" in text


def test_the_public_url_is_the_bound_address_or_the_given_one() -> None:
    assert public_url("127.0.0.1", 8070) == "http://127.0.0.1:8070"
    assert public_url("::1", 8070) == "http://[::1]:8070"
    assert public_url("0.0.0.0", 8070) not in ("http://0.0.0.0:8070",)
    assert public_url("0.0.0.0", 8070, "https://relay.example.com/") \
        == "https://relay.example.com"


def test_sessions_come_only_from_the_servers_own_page() -> None:
    loopback = allowed_origins("127.0.0.1", 8070, "http://127.0.0.1:8070")
    assert origin_allowed("http://127.0.0.1:8070", loopback)
    assert origin_allowed("http://localhost:8070", loopback)
    assert not origin_allowed("http://localhost:9999", loopback)
    assert not origin_allowed("https://evil.example", loopback)
    assert not origin_allowed("http://rebound.example:8070", loopback)  # DNS rebinding
    assert not origin_allowed(None, loopback)
    proxied = allowed_origins("0.0.0.0", 8070, "https://relay.example.com")
    assert origin_allowed("https://relay.example.com", proxied)
    assert not origin_allowed("http://localhost:8070", proxied)


def test_the_served_app_takes_its_connection_from_the_environment() -> None:
    environ = {"RELAY_API_KEY": "rk_old"}
    connection_environment(Settings(url="http://relayd:8080", key="rk_secret"), environ)
    assert environ == {"RELAY_URL": "http://relayd:8080", "RELAY_API_KEY": "rk_secret"}
    connection_environment(Settings(url="http://relayd:8080", key=None), environ)
    assert "RELAY_API_KEY" not in environ  # no key: the app asks for one
    command = shlex.split(app_command(read_only=True))
    assert command == [sys.executable, "-m", "relaytui", "--read-only"]
    assert "--read-only" not in app_command(read_only=False)


def test_relay_web_parses_its_options() -> None:
    args = cli.build_parser().parse_args(["web", "--port", "9000", "--host", "0.0.0.0",
                                          "--read-only"])
    assert (args.command, args.port, args.host, args.read_only) \
        == ("web", 9000, "0.0.0.0", True)
    args = cli.build_parser().parse_args(["--read-only", "web"])
    assert (args.port, args.host, args.read_only) == (8070, "127.0.0.1", True)
    assert cli.build_parser().parse_args(["web"]).read_only is False
    assert cli.main(["web", "--port", "0"]) == cli.USAGE


async def test_a_session_from_another_origin_is_refused(aiohttp_client: Any) -> None:
    server = RelayServer(app_command(read_only=True), host="127.0.0.1", port=8070,
                         public="http://127.0.0.1:8070")
    client = await aiohttp_client(await server._make_app())
    refused = await client.get("/ws", headers={"Origin": "https://evil.example"})
    assert refused.status == 403
    assert "only from this server's page" in await refused.text()
    page = await client.get("/")
    assert page.status == 200
    assert "ws://127.0.0.1:8070/ws" in await page.text()
