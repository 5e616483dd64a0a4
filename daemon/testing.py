"""Real relayd processes for the end-to-end tests and the benchmarks.

This module owns what both of them need to run Relay for real: the one polling helper
(`wait_until`, and `wait_until_async` for code on an event loop), ports for a program
that must be told its own and one held closed, a relayd config whose models point at
a simulator, `relayd simulate` (`Simulator`) and `relayd serve` (`Relayd`) as
subprocesses, each on a port the OS picks and names in its banner (start, health
check, API keys, stop).

It ships in the package so `bench/` can use it; it imports no test framework. The
pytest fixtures live in tests/e2e/harness.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, LiteralString, Self
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

_SCRIPT = Path(sys.executable).parent / "relayd"
# The installed console script, as a user runs it; `python -m daemon` is the same entry point.
RELAYD = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "daemon"]
_BANNER_PORT = re.compile(r"SIMULATED .*:(\d+)/v1\s*$")
_BANNER_MCP = re.compile(r"SIMULATED MCP .* (http://\S+/mcp)\s*$")
_BANNER_LINES = 50  # what `Simulator.start` reads, at most, looking for its lines
_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")  # where port-0 binds land
FIXED_PORTS_FROM = 20000  # `free_port` draws from here to the ephemeral range
_BANNER_SERVING = re.compile(rb"^relayd: serving http://\S+:(\d+) ", re.MULTILINE)


class ProcessError(RuntimeError):
    """A relayd or simulator process that did not start, or died while awaited."""


# --- polling ------------------------------------------------------------------------


# Ten tries a second: each try of a test's wait is a request both sides pay for in CPU,
# which the suite, run on two cores, is short of.
EVERY_S = 0.1


def wait_until(check: Callable[[], Any], *, timeout: float, every: float = EVERY_S,
               message: str = "the condition") -> Any:
    """Call `check` every `every` seconds until it returns something truthy, and return
    that. Raise TimeoutError ("... waiting for <message>") once `timeout` seconds pass."""
    for _ in _tries(timeout, message):
        if value := check():
            return value
        time.sleep(every)


async def wait_until_async(check: Callable[[], Any], *, timeout: float, every: float = EVERY_S,
                           message: str = "the condition") -> Any:
    """`wait_until` on an event loop: `check` may return an awaitable, and the pauses
    between tries let the loop run."""
    for _ in _tries(timeout, message):
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        await asyncio.sleep(every)


def _tries(timeout: float, message: str) -> Iterator[None]:
    """The loop both waits share: one item per try, then TimeoutError once a try would
    start after the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        yield
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {message}")


# --- ports and config ---------------------------------------------------------------


def free_port() -> int:
    """A loopback port nothing listens on now, for a program that must be told its port
    before it binds (the demo, `just cluster`). It lies below the OS's ephemeral range,
    where no port-0 bind can land (every relayd and simulator the tests start binds port
    0), and is drawn at random, so two test workers asking at once rarely meet."""
    low, _ = (int(n) for n in _EPHEMERAL.read_text().split()) if _EPHEMERAL.exists() \
        else (32768, 60999)
    for _ in range(100):
        port = random.randrange(FIXED_PORTS_FROM, low)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise ProcessError(f"no free port in {FIXED_PORTS_FROM}-{low}")


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections while the block runs: bound here and
    never listened on, so no other process can take it meanwhile (a port found free,
    then let go, can be taken by the next test worker that asks the OS for one)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


def simulated_model(alias: str, sim: Simulator, *, model: str = "sim-small",
                    **keys: Any) -> dict[str, Any]:
    """A `[[models]]` entry: `alias` served by the simulator's `model`, plus `keys`."""
    return {"alias": alias, "base_url": sim.base_url, "model": model, **keys}


def config_toml(*, port: int, data_dir: Path, models: Sequence[Mapping[str, Any]] = (),
                server: Mapping[str, Any] | None = None,
                **tables: Mapping[str, Any]) -> str:
    """A relayd config: `[server]` with `port`, `data_dir` and `server`'s keys, then each
    of `tables` (`gateway={...}`, `retry={...}`, ...), then one `[[models]]` per model."""
    head = {"port": port, "data_dir": str(data_dir), **(server or {})}
    blocks = [_table("[server]", head)]
    blocks += [_table(f"[{name}]", keys) for name, keys in tables.items()]
    blocks += [_table("[[models]]", model) for model in models]
    return "\n".join(blocks)


def _table(header: str, keys: Mapping[str, Any]) -> str:
    return "".join([f"{header}\n", *(f"{key} = {_toml(value)}\n" for key, value in keys.items())])


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))  # a JSON string is a TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


# --- PostgreSQL schemas -------------------------------------------------------------


def with_params(url: str, **params: str) -> str:
    """`url` with more libpq parameters in its query string, URL-encoded (a schema of
    its own: `options="-csearch_path=<schema>"`)."""
    parts = urlsplit(url)
    added = "&".join(f"{key}={quote(value, safe='')}" for key, value in params.items())
    query = f"{parts.query}&{added}" if parts.query else added
    return urlunsplit(parts._replace(query=query))


def create_schema(server: str, prefix: str) -> str:
    """A new, empty schema on the server at `server`, named `prefix` and random hex;
    its name."""
    name = prefix + secrets.token_hex(6)
    _schema_ddl(server, "CREATE SCHEMA {}", name)
    return name


def drop_schema(server: str, name: str, *, lock_timeout_s: float | None = None) -> None:
    """Drop a schema and everything in it, if it is there; waiting at most
    `lock_timeout_s` for a lock."""
    _schema_ddl(server, "DROP SCHEMA IF EXISTS {} CASCADE", name, lock_timeout_s)


def _schema_ddl(server: str, template: LiteralString, name: str,
                lock_timeout_s: float | None = None) -> None:
    import psycopg  # the simulator and relayd on SQLite never need it
    from psycopg import sql

    with psycopg.connect(server, autocommit=True) as admin:
        if lock_timeout_s is not None:
            admin.execute(sql.SQL("SET lock_timeout = {}").format(
                sql.Literal(f"{lock_timeout_s:g}s")))
        admin.execute(sql.SQL(template).format(sql.Identifier(name)))


# --- processes ----------------------------------------------------------------------


def create_key(config: Path, workspace: str) -> str:
    """A new API key of `workspace` (created if needed), written to the store of the
    relayd at `config` as `relayd keys create` writes it, without starting a process
    for it (half a second each, hundreds of times a test run; tests/cli runs the
    command itself)."""
    from daemon import config as configuration
    from daemon.store import open_store

    store = open_store(configuration.load(config).store_url)
    try:
        return store.create_key(workspace, now=time.time())
    finally:
        store.close()


def stop_process(proc: subprocess.Popen[Any], timeout: float = 15) -> None:
    """SIGTERM, then SIGKILL if it lingers past `timeout` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@dataclass
class Simulator:
    """One `relayd simulate` process: the SIMULATED upstream, its HTTP tool executor
    (`tools_url`), its workflow callback (`workflow_url`) and, when started with an MCP
    port, its MCP tool server (`mcp_url`)."""

    port: int
    proc: subprocess.Popen[str]
    mcp_url: str | None = None  # http://127.0.0.1:PORT/mcp, with an MCP port

    @classmethod
    def start(cls, *args: str, mcp_port: int | None = None) -> Simulator:
        """Start `relayd simulate ARGS` on a port the OS picks; return once it listens.
        `mcp_port` (0: a free one), or `--mcp-port` in ARGS, starts the MCP server too;
        without them it is started with `--no-mcp` (the MCP SDK costs a second of CPU
        to load, which most tests and benchmarks do not need)."""
        argv = [*RELAYD, "simulate", "--port", "0", *args]
        if mcp_port is not None:
            argv += ["--mcp-port", str(mcp_port)]
        want_mcp = any(a == "--mcp-port" or a.startswith("--mcp-port=") for a in argv)
        if not want_mcp and "--no-mcp" not in argv:
            argv.append("--no-mcp")
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        assert proc.stdout is not None
        port: int | None = None
        mcp_url: str | None = None
        seen: list[str] = []
        while len(seen) < _BANNER_LINES and (port is None or (want_mcp and mcp_url is None)):
            line = proc.stdout.readline()  # "" once it exited
            if not line:
                break
            seen.append(line)
            if found := _BANNER_MCP.search(line):
                mcp_url = found.group(1)
            elif found := _BANNER_PORT.search(line):
                port = int(found.group(1))
        if port is None or (want_mcp and mcp_url is None):
            stop_process(proc, timeout=5)
            raise ProcessError(f"relayd simulate did not start: {''.join(seen)!r}")
        return cls(port, proc, mcp_url)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.root + "/v1"

    @property
    def tools_url(self) -> str:
        """The HTTP tool executor: a `tool_config` url of type "http"."""
        return self.root + "/_sim/tools"

    @property
    def workflow_url(self) -> str:
        """The map-reduce workflow callback: an `openrelay.workflow` url."""
        return self.root + "/_sim/workflow"

    def stats(self) -> dict[str, Any]:
        answer: dict[str, Any] = httpx.get(self.root + "/_sim/stats", timeout=10).json()
        return answer

    def requests(self) -> list[dict[str, Any]]:
        return self._data("/_sim/requests")

    def tool_calls(self) -> list[dict[str, Any]]:
        """What the HTTP tool executor received, in arrival order."""
        return self._data("/_sim/tool_calls")

    def mcp_calls(self) -> list[dict[str, Any]]:
        """The tools/call requests the MCP server received, in arrival order."""
        return self._data("/_sim/mcp_calls")

    def workflow_events(self) -> list[dict[str, Any]]:
        """The events the workflow callback received, in arrival order: `headers`
        (Authorization, Content-Type, Relay-Event-Id, Relay-Signature, any other Relay-*),
        `body` (the JSON), `raw` (the body as sent), `status` and `answer` (what it
        answered; `answer` is None for an HTTP fault), `at`."""
        return self._data("/_sim/workflow_events")

    def _data(self, path: str) -> list[dict[str, Any]]:
        """The `data` list of a `/_sim/...` listing."""
        data: list[dict[str, Any]] = httpx.get(self.root + path, timeout=30).json()["data"]
        return data

    def reset(self) -> None:
        httpx.post(self.root + "/_sim/reset", timeout=10).raise_for_status()

    def stop(self) -> None:
        stop_process(self.proc, timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@dataclass(kw_only=True)
class Relayd:
    """One `relayd serve` in its own `home` (relay.toml, data/, relayd.log). Unless
    `port` is given, its config says port 0 and it listens where the OS puts it: the
    port is read from its banner ("relayd: serving http://127.0.0.1:PORT ..."), as
    `Simulator` reads its own, so two test workers never pick the same one. The
    config is then rewritten with that port, so `start()` again after `stop()` or
    `kill()` restarts it on the same data, at the same URL."""

    home: Path
    port: int = 0  # 0: the OS picks it at the first start
    serve_args: Sequence[str] = ()  # added to `relayd serve --config ...`
    # What runs `serve`: relayd, or a wrapper of its entry point (a test seam).
    command: Sequence[str] = tuple(RELAYD)
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0  # time.time() just before the last spawn
    _tables: dict[str, Any] | None = field(default=None, init=False, repr=False)
    _log_from: int = field(default=0, init=False, repr=False)  # the last spawn's output

    @property
    def config(self) -> Path:
        return self.home / "relay.toml"

    @property
    def data(self) -> Path:
        return self.home / "data"

    @property
    def log(self) -> Path:
        return self.home / "relayd.log"

    @property
    def url(self) -> str:
        if not self.port and not self._read_port():
            raise ProcessError("relayd's port is not known yet: it is read from its banner "
                               "once it listens (start() returns after that)")
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def write_config(self, **tables: Any) -> Self:
        """Write relay.toml: `config_toml`'s keywords (`models=[...]`, `gateway={...}`, ...)
        on this daemon's port (0 until the first start has read it) and data dir."""
        self.home.mkdir(parents=True, exist_ok=True)
        self._tables = tables
        self.config.write_text(config_toml(port=self.port, data_dir=self.data, **tables))
        return self

    def spawn(self) -> None:
        """Start the process and return at once; its output goes to relayd.log.
        `healthy()` (which `start()` waits for) reads the port from it."""
        with open(self.log, "ab") as log:
            self._log_from = log.tell()
            self.started_at = time.time()
            self.proc = subprocess.Popen(
                [*self.command, "serve", "--config", str(self.config), *self.serve_args],
                stdout=log, stderr=subprocess.STDOUT)

    def start(self, *, timeout: float = 30) -> Self:
        """Spawn, then wait until `/healthz` answers."""
        self.spawn()
        wait_until(self.healthy, timeout=timeout, message=f"relayd in {self.home} to listen")
        return self

    def healthy(self) -> bool:
        """Whether `/healthz` answers 200; ProcessError if the process has exited."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise ProcessError(f"relayd exited with {self.proc.returncode}: {self.log_tail()}")
        if not self.port and not self._read_port():
            return False  # not listening yet
        try:
            return httpx.get(self.url + "/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def _read_port(self) -> int:
        """The port the last spawn's banner names (0 before it is printed), kept for
        the restarts: the config written by `write_config` is rewritten with it."""
        if self.proc is None or not self.log.exists():
            return 0
        with open(self.log, "rb") as log:
            log.seek(self._log_from)
            found = _BANNER_SERVING.search(log.read())
        if found is None:
            return 0
        self.port = int(found.group(1))
        if self._tables is not None:
            self.write_config(**self._tables)
        return self.port

    def create_key(self, workspace: str) -> str:
        return create_key(self.config, workspace)

    def kill(self) -> None:
        """SIGKILL (a crash), if it is running."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def terminate(self, timeout: float = 15) -> float:
        """SIGTERM; return how long the process took to exit (TimeoutExpired if longer
        than `timeout`)."""
        assert self.proc is not None
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=timeout)
        return time.monotonic() - started

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        if self.proc is not None:
            stop_process(self.proc, timeout)

    def log_tail(self, chars: int = 2000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""
