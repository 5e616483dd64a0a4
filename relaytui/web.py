"""`relay web`: the operator TUI in a browser. textual-serve's server (aiohttp) serves a
page with a terminal (xterm.js); each browser session it opens runs the same Textual app
(`python -m relaytui`, with `--read-only` when asked) in a process of its own, its
screen and keys carried over a websocket.

The connection is the one `relay` resolves (flags, RELAY_URL / RELAY_API_KEY, the
config file): the served app reads it from RELAY_URL and RELAY_API_KEY in the
environment it inherits from this process, never from its command line (which `ps`
shows every user). Whoever opens the page drives the TUI with that key, so the server
binds loopback by default and warns when bound elsewhere, and its websocket takes only
sessions from its own page (the Origin check: another site open in the operator's
browser cannot reach the loopback port's TUI, nor can a DNS-rebound name)."""

from __future__ import annotations

import ipaddress
import os
import shlex
import socket
import sys
from collections.abc import Iterable, MutableMapping
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.server import Server

from relaytui.settings import Settings

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8070
TITLE = "Relay"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")  # the page's address, as typed


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server to this machine."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to any interface


def is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def url_host(host: str) -> str:
    """`host` as it goes in a URL (an IPv6 address in brackets)."""
    bare = host.strip("[]")
    try:
        return f"[{bare}]" if ipaddress.ip_address(bare).version == 6 else host
    except ValueError:
        return host


def public_url(host: str, port: int, given: str | None = None) -> str:
    """The address the page tells the browser to open its websocket at: `given`
    (`--public-url`, e.g. behind a proxy), else the bound address; for a wildcard bind
    (0.0.0.0, ::), this machine's name, as 0.0.0.0 is nowhere to connect to."""
    if given:
        return given.rstrip("/")
    name = socket.getfqdn() if is_wildcard(host) else url_host(host)
    return f"http://{name}:{port}"


def allowed_origins(host: str, port: int, public: str) -> frozenset[str]:
    """The Origins a session may come from: the public URL's, and on a loopback bind
    each loopback spelling of it (the page opened as localhost or 127.0.0.1)."""
    parts = urlsplit(public)
    origins = {f"{parts.scheme}://{parts.netloc}".lower()}
    if is_loopback(host):
        origins |= {f"http://{name}:{port}" for name in LOOPBACK_NAMES}
    return frozenset(origins)


def origin_allowed(origin: str | None, allowed: Iterable[str]) -> bool:
    """A websocket may open only from the server's own page: a browser always sends
    Origin, and another site's page (or a DNS-rebound name) sends its own."""
    return origin is not None and origin.rstrip("/").lower() in allowed


def warning(host: str) -> str | None:
    """What `relay web` says before serving on a non-loopback address."""
    if is_loopback(host):
        return None
    return (f"relay web: warning: serving on {host}, not loopback: anyone who can reach "
            "this port drives the TUI with your API key (there is no login). Bind "
            "127.0.0.1 and reach it through an SSH tunnel, or put it behind an "
            "authenticating HTTPS proxy (--public-url).")


def app_command(*, read_only: bool) -> str:
    """The shell command that runs one session's TUI: this Python, this package."""
    return shlex.join([sys.executable, "-m", "relaytui", *(["--read-only"] if read_only
                                                           else [])])


def connection_environment(settings: Settings, environ: MutableMapping[str, str]) -> None:
    """Put the resolved connection where the served app's `resolve()` reads it first
    (it has no flags): RELAY_URL and RELAY_API_KEY. No key: none, so the app asks."""
    environ["RELAY_URL"] = settings.url
    if settings.key:
        environ["RELAY_API_KEY"] = settings.key
    else:
        environ.pop("RELAY_API_KEY", None)


class RelayServer(Server):
    """textual-serve's server with the Origin check on its session websocket."""

    def __init__(self, command: str, *, host: str, port: int, public: str) -> None:
        super().__init__(command, host=host, port=port, title=TITLE, public_url=public)
        self.origins = allowed_origins(host, port, public)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        if not origin_allowed(request.headers.get("Origin"), self.origins):
            raise web.HTTPForbidden(text="relay web: sessions open only from this "
                                    "server's page\n")
        return await super().handle_websocket(request)


def serve(settings: Settings, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          read_only: bool = False, public: str | None = None) -> int:
    """Serve the TUI until interrupted (Ctrl+C, SIGTERM); returns the exit code."""
    note = warning(host)
    if note:
        print(note, file=sys.stderr)
    connection_environment(settings, os.environ)  # inherited by every session's app
    server = RelayServer(app_command(read_only=read_only), host=host, port=port,
                         public=public_url(host, port, public))
    server.serve()
    return 0
