"""`relayd serve` that cannot bind its port exits non-zero at once, saying why."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from daemon.testing import RELAYD, config_toml

pytestmark = pytest.mark.e2e


def test_a_busy_port_ends_serve_non_zero_within_two_seconds(tmp_path: Path):
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
    assert took < 2.0, f"took {took:.2f} s"  # the whole process, start-up included
