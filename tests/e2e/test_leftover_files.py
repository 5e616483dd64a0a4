"""Defect 5 end to end: `kill -9` in the middle of an upload leaves a `.partial` file,
and the next start sweeps it, with the other leftovers of a crash (a result file whose
job never recorded it), while files in use stay: recorded ones whatever their age,
and fresh partial files (another node's upload in progress)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from daemon.domain.leftovers import STALE_AFTER_S
from daemon.testing import Simulator
from tests.e2e.harness import Relayd, wait_until

pytestmark = pytest.mark.e2e

MiB = 1024 * 1024
BOUNDARY = "relay-crash-boundary"


def files_dir(relayd: Relayd) -> Path:
    return relayd.data / "files"


def on_disk(relayd: Relayd) -> set[str]:
    folder = files_dir(relayd)
    return {p.name for p in folder.iterdir()} if folder.exists() else set()


def age(path: Path, seconds: float) -> None:
    """Make `path` look untouched for `seconds` (no waiting for an hour)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def start_upload(relayd: Relayd, *, declared: int) -> socket.socket:
    """A raw HTTP upload that promises `declared` bytes of file and sends 2 MiB of them."""
    head = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n"
            f"batch\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"big.jsonl\"\r\n\r\n").encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()
    conn = socket.create_connection(("127.0.0.1", relayd.port), timeout=10)
    conn.sendall((f"POST /v1/files HTTP/1.1\r\nHost: 127.0.0.1:{relayd.port}\r\n"
                  f"Authorization: Bearer {relayd.key('acme')}\r\n"
                  f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
                  f"Content-Length: {len(head) + declared + len(tail)}\r\n\r\n").encode()
                 + head)
    for _ in range(2):
        conn.sendall(b"x" * MiB)
    return conn


def test_a_crash_mid_upload_leaves_a_partial_file_the_next_start_sweeps(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    with relayd.client() as http:
        kept = http.post("/v1/files", data={"purpose": "batch"},
                         files={"file": ("in.jsonl", b'{"x": 1}\n')}).json()["id"]

    conn = start_upload(relayd, declared=41 * MiB)
    partial = wait_until(lambda: next((p for p in files_dir(relayd).glob("*.partial")
                                       if p.stat().st_size >= MiB), None))
    relayd.kill()
    conn.close()
    assert partial.exists(), "kill -9 mid-upload leaves its partial file"
    assert on_disk(relayd) == {kept, partial.name}

    # The other leftovers a crash can leave, and what must survive a start.
    orphan = files_dir(relayd) / ("file-" + "0" * 32)  # a result file never recorded
    orphan.write_bytes(b"")
    in_progress = files_dir(relayd) / ("file-" + "1" * 32 + ".partial")  # another node's
    in_progress.write_bytes(b"{")
    unrelated = files_dir(relayd) / "operator-notes.txt"
    unrelated.write_text("not Relay's")
    for path in (partial, orphan, files_dir(relayd) / kept, unrelated):
        age(path, STALE_AFTER_S + 60)

    relayd.start()
    assert on_disk(relayd) == {kept, in_progress.name, unrelated.name}
    with relayd.client() as http:
        assert http.get(f"/v1/files/{kept}/content").content == b'{"x": 1}\n'
        again = http.post("/v1/files", data={"purpose": "batch"},
                          files={"file": ("again.jsonl", b'{"y": 2}\n')})
        assert again.status_code == 200, again.text
    assert on_disk(relayd) == {kept, in_progress.name, unrelated.name, again.json()["id"]}


def test_a_fresh_partial_file_survives_a_restart(simulator_factory: Callable[..., Simulator],
                                                 relayd_factory: Callable[..., Relayd]) -> None:
    """A partial file written to within the hour may be another node's live upload."""
    relayd = relayd_factory(simulator_factory()).start()
    conn = start_upload(relayd, declared=8 * MiB)
    partial = wait_until(lambda: next(files_dir(relayd).glob("*.partial"), None))
    relayd.kill()
    conn.close()
    relayd.start()
    assert partial.exists()
