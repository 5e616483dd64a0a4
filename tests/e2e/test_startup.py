"""`relayd serve` that cannot bind its port, or open its store, exits non-zero at once,
saying why."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from daemon.testing import RELAYD, config_toml

pytestmark = pytest.mark.e2e


def test_a_busy_port_ends_serve_non_zero_at_once(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = tmp_path / "relay.toml"
        config.write_text(config_toml(port=port, data_dir=tmp_path / "data"))
        started = time.monotonic()
        done = subprocess.run([*RELAYD, "serve", "--config", str(config)],
                              capture_output=True, text=True, timeout=30)
        took = time.monotonic() - started
    assert done.returncode != 0
    assert f"cannot serve on 127.0.0.1:{port}" in done.stderr
    assert "address already in use" in done.stderr
    # The whole process, start-up included: about a second of CPU, so the bound leaves
    # room for a loaded machine; what it catches is a retry loop or a lingering stop.
    assert took < 5.0, f"took {took:.2f} s"


def test_a_store_that_cannot_be_opened_ends_serve_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        url = f"postgresql://postgres@127.0.0.1:{closed.getsockname()[1]}/test"
        config = tmp_path / "relay.toml"
        config.write_text(config_toml(port=0, data_dir=tmp_path / "data",
                                      database={"url": url}))
        done = subprocess.run([*RELAYD, "serve", "--config", str(config)],
                              capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    said = done.stderr[done.stderr.index("relayd: cannot serve: the store cannot be opened: "):]
    assert "refused" in said  # the driver's words follow (libpq's span lines)
