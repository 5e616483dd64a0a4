"""`relayd config check`: a config validated and its upstreams tried, without starting;
`relayd serve --log-format`."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from daemon.cli import _parser, main

Write = Callable[[str], Path]


@pytest.fixture
def write(tmp_path: Path) -> Write:
    def make(text: str) -> Path:
        path = tmp_path / "relay.toml"
        path.write_text(text, encoding="utf-8")
        return path
    return make


@pytest.fixture
def listening() -> Iterator[int]:
    """A loopback port that accepts connections (the kernel completes them unaccepted)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        yield server.getsockname()[1]


@pytest.fixture
def closed() -> Iterator[int]:
    """A loopback port bound but not listening: a connect is refused, and no other
    process can take the port while the test runs."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield bound.getsockname()[1]


def model(alias: str, port: int) -> str:
    return f'[[models]]\nalias = "{alias}"\nbase_url = "http://127.0.0.1:{port}/v1"\n'


def test_a_valid_config_with_reachable_upstreams_is_0(
        write: Write, listening: int, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(model("a", listening) + model("b", listening))
    assert main(["config", "check", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "config ok" in out and "(2 model(s))" in out
    assert f"a: http://127.0.0.1:{listening}/v1 reachable" in out


def test_a_bad_config_is_1_naming_the_key(write: Write,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = write('[server]\nport = 70000\n')
    assert main(["config", "check", "--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert "config invalid (1 error):\n  server.port: must be 0–65535, got 70000" in err


def test_every_sections_and_every_models_error_is_listed(
        write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    path = write('nonsense = 1\nnoise = 2\n[server]\nport = 70000\n[retry]\nattempts = 99\n'
                 '[[models]]\nalias = "a"\n[[models]]\nalias = "b"\n'
                 'base_url = "http://x/v1"\nmax_concurrency = 0\n')
    assert main(["config", "check", "--config", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    sections = ("cluster, database, gateway, limits, metrics, models, retention, retry, "
                "security, server, tools")
    assert err == ["relayd: config invalid (6 errors):",
                   f"  nonsense: unknown key (known: {sections})",
                   f"  noise: unknown key (known: {sections})",
                   "  server.port: must be 0–65535, got 70000",
                   "  retry.attempts: must be 1–20, got 99",
                   "  models[0].base_url: required, an http:// or https:// URL",
                   "  models[1].max_concurrency: must be at least 1, got 0"]


def test_a_missing_file_is_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", "--config", str(tmp_path / "none.toml")]) == 1
    assert "config file not found" in capsys.readouterr().err


def test_an_unreachable_upstream_is_2(write: Write, listening: int, closed: int,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = write(model("up", listening) + model("down", closed))
    assert main(["config", "check", "--config", str(path), "--timeout", "5"]) == 2
    out = capsys.readouterr().out
    assert "up: " in out and f"{listening}/v1 reachable" in out
    assert (f"down: http://127.0.0.1:{closed}/v1 UNREACHABLE "
            f"(127.0.0.1:{closed}: Connection refused)") in out


def test_no_network_skips_the_upstreams(write: Write, closed: int) -> None:
    path = write(model("down", closed))
    assert main(["config", "check", "--config", str(path), "--no-network"]) == 0


def test_no_config_is_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check"]) == 0
    assert "config ok: built-in defaults (0 model(s))" in capsys.readouterr().out


def test_serve_takes_a_log_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert _parser().parse_args(["serve", "--log-format", "json"]).log_format == "json"
    assert _parser().parse_args(["serve"]).log_format == "text"
    with pytest.raises(SystemExit):
        _parser().parse_args(["serve", "--log-format", "xml"])
    assert "invalid choice: 'xml'" in capsys.readouterr().err
