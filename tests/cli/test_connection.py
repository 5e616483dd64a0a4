"""How `relay` finds relayd and what it says when it cannot: settings from flags, the
environment and the config file; unreachable (3), no key (2), a wrong key (1), usage
errors (2); and the bare `relay`, which opens the TUI."""

from __future__ import annotations

import subprocess
import sys
import threading
import types
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from relaytui import cli as relay_cli
from relaytui import progress
from tests.cli.conftest import Run
from tests.e2e.harness import Relayd, closed_port

pytestmark = pytest.mark.e2e

COMMANDS = [("ls",), ("status", "abc"), ("cancel", "abc"), ("results", "abc"),
            ("dead-letter", "abc")]


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unreachable_daemon_exits_3_with_its_address(cli: Callable[..., Run],
                                                       command: tuple[str, ...]) -> None:
    with closed_port() as port:
        url = f"http://127.0.0.1:{port}"
        run = cli(*command, "--url", url, "--key", "k")
        as_json = cli(*command, "--url", url, "--key", "k", "--json")  # the error on stdout
    assert run.code == 3
    assert run.err.startswith(f"relay: cannot reach relayd at {url}")
    assert run.out == ""
    assert "Traceback" not in run.err
    assert (as_json.code, as_json.err) == (3, "")
    error = as_json.json()["error"]
    assert (error["type"], error["exit_code"]) == ("unreachable", 3)
    assert error["message"].startswith(f"cannot reach relayd at {url}")


def test_submit_to_an_unreachable_daemon_exits_3(cli: Callable[..., Run],
                                                 write: Callable[[str, Any], Path]) -> None:
    with closed_port() as port:
        url = f"http://127.0.0.1:{port}"
        run = cli("submit", write("p.csv", "hi\n"), "--model", "m", "--url", url,
                  "--key", "k")
    assert run.code == 3
    assert run.err.startswith(f"relay: cannot reach relayd at {url}")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_key_says_how_to_get_one(cli: Callable[..., Run], shared_relayd: Relayd,
                                           command: tuple[str, ...]) -> None:
    run = cli(*command, "--url", shared_relayd.url)
    assert run.code == 2
    assert run.err.startswith("relay: no API key.")
    assert "relayd keys create --workspace NAME" in run.err
    assert run.out == ""
    error = cli(*command, "--url", shared_relayd.url, "--json").json()["error"]
    assert (error["type"], error["exit_code"]) == ("usage", 2)
    assert "relayd keys create --workspace NAME" in error["message"]


def test_a_wrong_key_is_the_daemons_401_with_the_same_hint(cli: Callable[..., Run],
                                                           shared_relayd: Relayd) -> None:
    run = cli("ls", "--url", shared_relayd.url, "--key", "rk_wrong")
    assert run.code == 1
    assert run.err.startswith("relay: Invalid API key.")
    assert "relayd keys create --workspace NAME" in run.err


def test_url_and_key_come_from_the_config_file(cli: Callable[..., Run], shared_relayd: Relayd,
                                               workspace: str, tmp_path: Path) -> None:
    config = tmp_path / "config" / "relay" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'url = "{shared_relayd.url}"\nkey = "{shared_relayd.key(workspace)}"\n')
    run = cli("ls", "--json")
    assert (run.code, run.json()) == (0, [])


def test_options_go_before_or_after_the_command(cli: Callable[..., Run], shared_relayd: Relayd,
                                                workspace: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    key = shared_relayd.key(workspace)
    monkeypatch.setenv("RELAY_API_KEY", "rk_wrong")  # the flag wins over the environment
    before = cli("--url", shared_relayd.url, "--key", key, "--json", "ls")
    after = cli("ls", "--url", shared_relayd.url, "--key", key, "--json")
    mixed = cli("--url", shared_relayd.url, "ls", "--key", key, "--json")
    assert [r.code for r in (before, after, mixed)] == [0, 0, 0]
    assert before.json() == after.json() == mixed.json() == []


@pytest.fixture
def not_relayd() -> Iterator[str]:
    """A web server that answers 200 with HTML: a wrong --url."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html>hello</html>")

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_server_that_is_not_relayd_exits_3(cli: Callable[..., Run], not_relayd: str) -> None:
    run = cli("ls", "--url", not_relayd, "--key", "k")
    assert run.code == 3
    assert run.err.startswith(f"relay: {not_relayd} answered 200 with a body that is not "
                              "JSON; is it relayd?")


@pytest.mark.parametrize(("argv", "message"), [
    (("status",), "the following arguments are required: id"),
    (("frobnicate",), "invalid choice: 'frobnicate'"),
    (("ls", "--limit", "0"), "--limit: must be at least 1"),
    (("ls", "--url", "localhost:8080", "--key", "k"), "--url must look like http://HOST:PORT"),
])
def test_usage_errors_exit_2(cli: Callable[..., Run], argv: tuple[str, ...],
                            message: str) -> None:
    run = cli(*argv)
    assert run.code == 2
    assert message in run.err


def test_help_exits_0(cli: Callable[..., Run]) -> None:
    run = cli("--help")
    assert run.code == 0
    assert "dead-letter" in run.out and "Exit codes: 0 ok" in run.out


def test_bare_relay_opens_the_tui_with_the_resolved_settings(
        cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str, bool]] = []

    def run(url: str, key: str, read_only: bool = False) -> int:
        calls.append((url, key, read_only))
        return 7
    fake = types.ModuleType("relaytui.app")
    fake.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "relaytui.app", fake)
    monkeypatch.setenv("RELAY_URL", "http://relay.example:9000/")
    assert cli("--key", "rk_1").code == 7
    assert cli("--key", "rk_1", "--read-only").code == 7
    assert calls == [("http://relay.example:9000", "rk_1", False),
                     ("http://relay.example:9000", "rk_1", True)]


def test_bare_relay_without_the_tui_says_so(cli: Callable[..., Run],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "relaytui.app", None)  # import fails
    run = cli()
    assert run.code == 1
    assert "terminal UI is not available" in run.err and "relay --help" in run.err


def test_scripting_commands_do_not_load_textual() -> None:
    probe = "import sys, relaytui.cli; print(any(m.startswith('textual') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_ctrl_c_while_waiting_exits_130_and_leaves_the_job(relay: Callable[..., Run],
                                                           write: Callable[[str, Any], Path],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(progress, "watch", interrupted)
    run = relay("submit", write("p.csv", "hi\n"), "--model", "gpt-4o-mini", "--wait")
    assert run.code == 130
    [job] = relay("ls", "--json").json()
    assert f"relay: stopped waiting; job {job['id']} keeps running on relayd" in run.err


class Jobs:
    """A stand-in client whose job has already ended with `status` and `failed` rows."""

    def __init__(self, status: str, failed: int) -> None:
        self.status = status
        self.failed = failed

    def job(self, job_id: str) -> dict:
        return {"id": job_id, "status": self.status, "total": 1, "completed": 1 - self.failed,
                "failed": self.failed, "dead_letter": 0, "error": "model 'x' left the config"}


@pytest.mark.parametrize(("status", "failed", "code", "shown"), [
    ("completed", 0, 0, "completed (1 completed, 0 failed"),
    ("completed", 1, 4, "completed with errors (0 completed, 1 failed"),
    ("failed", 1, 1, "failed (0 completed, 1 failed"),
    ("canceled", 1, 1, "canceled (0 completed, 1 failed")])
def test_wait_exits_0_only_for_completed_with_no_failed_row(capsys: pytest.CaptureFixture[str],
                                                            status: str, failed: int, code: int,
                                                            shown: str) -> None:
    assert relay_cli.wait_for(Jobs(status, failed), "j1", json_out=False) == code  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert out.startswith(f"j1: {shown}"), out
    assert "error: model 'x' left the config" in out
