"""`just cluster`: the runner starts nodes on one PostgreSQL database (a fresh schema of
the test's own), they see each other through `GET /v1/nodes`, and SIGTERM stops them
all, gracefully (each node deletes its row on the way out). Where no PostgreSQL is
reachable the test skips, saying why; under `CI=true` it fails."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import httpx
import psycopg
import pytest

from daemon.testing import closed_port, free_port
from relaytui import cluster
from relaytui.demo import SAMPLES
from tests.store import postgres

pytestmark = pytest.mark.e2e

NODE = re.compile(r"^  node (\d+)  (http://\S+)  pid (\d+)")
SIMULATOR = re.compile(r"^  simulator  \S+ \(pid (\d+)\)")
KEY = re.compile(r"^API key \(workspace demo\): (\S+)$")


def test_two_nodes_see_each_other_and_stop_on_sigterm(tmp_path: Path) -> None:
    with postgres.fresh_schema() as url:
        runner = start(url, tmp_path)
        try:
            lines = read_until(runner, "Ctrl-C stops every node")
            nodes = [node.groups() for line in lines if (node := NODE.match(line))]
            key = next(said[1] for line in lines if (said := KEY.match(line)))
            assert [number for number, _, _ in nodes] == ["1", "2"]
            answer = httpx.get(f"{nodes[1][1]}/v1/nodes", timeout=5,
                               headers={"Authorization": f"Bearer {key}"})
            assert answer.status_code == 200, answer.text
            listed = answer.json()["data"]
            assert sorted(n["address"] for n in listed) == sorted(a for _, a, _ in nodes)
            assert {n["health"] for n in listed} == {"healthy"}
            assert [n["address"] for n in listed if n["self"]] == [nodes[1][1]]
            pids = [int(pid) for _, _, pid in nodes]
            pids += [int(sim[1]) for line in lines if (sim := SIMULATOR.match(line))]
            assert len(pids) == 3
        finally:
            runner.send_signal(signal.SIGTERM)
            out, _ = runner.communicate(timeout=20)
        assert runner.returncode == 0, out
        assert "stopping 2 node(s)" in out
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT id FROM node").fetchall() == []  # each one left


def test_an_unreachable_database_is_said_in_one_line(tmp_path: Path) -> None:
    with closed_port() as closed:  # nothing listens there
        done = subprocess.run(
            [sys.executable, "-m", "relaytui.cluster", "--nodes", "1",
             "--url", f"postgresql://postgres@127.0.0.1:{closed}/test"],
            cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"cluster: PostgreSQL at postgresql://postgres@127.0.0.1:"
                                  f"{closed}/test: cannot migrate the database: ")
    assert "refused" in done.stderr


def test_taken_ports_are_swapped_for_the_next_free_ones_all_different() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", free_port()))
        busy.listen()
        base = busy.getsockname()[1]
        sim, nodes, mcp = cluster.pick_ports(base, 3)
    ports = [sim, *nodes, mcp]
    assert len(set(ports)) == 5 and base not in ports
    assert nodes[0] > base  # the next free one above, not one the OS picks


def test_a_node_config_shares_the_database_and_data_dir() -> None:
    node = cluster.Node(2, 18082)
    text = cluster.node_config((SAMPLES / "demo.toml").read_text(), node,
                               sim_port=19900, url="postgresql://u:secret@db:5432/relay")
    config = tomllib.loads(text)
    assert config["server"]["port"] == 18082
    assert Path(config["server"]["data_dir"]) == (cluster.DATA / "data").resolve()
    assert config["database"] == {"url": "postgresql://u:secret@db:5432/relay"}
    assert config["cluster"] == {"lease_s": cluster.LEASE_S}
    assert {m["base_url"] for m in config["models"]} == {"http://127.0.0.1:19900/v1"}
    assert cluster.shown("postgresql://u:secret@db:5432/relay") == \
        "postgresql://u:***@db:5432/relay"


def start(url: str, home: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "relaytui.cluster", "--nodes", "2", "--url", url,
         "--base-port", str(free_port())],
        cwd=home, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def read_until(proc: subprocess.Popen[str], last: str, timeout: float = 20.0) -> list[str]:
    """The runner's lines up to the one starting with `last`, read on a thread so a
    runner that hangs fails the test rather than blocking it."""
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stream = proc.stdout

    def read() -> None:
        for line in iter(stream.readline, ""):
            lines.put(line.rstrip("\n"))
            if line.startswith(last):
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    seen = list(lines.queue)
    assert seen and seen[-1].startswith(last), f"the runner never said {last!r}: {seen}"
    return seen
