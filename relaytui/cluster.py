"""`just cluster N`: scale-out on one machine. N `relayd serve` nodes share one PostgreSQL
database and one data dir and call one simulator (the SIMULATED upstream: no real
provider is called); each node has its own port, from `--base-port` up.

It migrates the database once, makes an API key, starts the simulator and the nodes,
prints their addresses and pids with commands to try (submit through one node, watch
`relay nodes` through another, `kill -9` a third and see its rows taken over), and
waits. Ctrl-C or SIGTERM stops every node (SIGTERM to all at once, so none takes over
rows another is giving back), then the simulator.

The configs (one a node), the shared data dir, an input file of 5,000 rows and the logs
are in `relay-data/cluster/`. The nodes' `[cluster] lease_s` is short, so a killed
node's rows move within seconds. The real thing: docs/deployment.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from urllib.parse import urlsplit

from relaytui.client import RelayClient
from relaytui.demo import (
    BIN,
    MODEL,
    SAMPLES,
    config_text,
    create_key,
    free_port,
    long_job_rows,
    port,
    review_rows,
    say,
    simulator_argv,
    stop,
)

DATA = Path("relay-data/cluster")
URL = "postgresql://postgres@127.0.0.1:5432/test"
BASE_PORT = 8081
LEASE_S = 6  # a killed node's rows move this long after its last heartbeat
ROWS = 5000  # the input file to try: long enough to kill a node while it runs
STOP_S = 15.0  # how long the nodes get to stop before they are killed
Proc = subprocess.Popen[bytes]


class ClusterError(Exception):
    """Something stops the cluster from starting; said in one line."""


@dataclass(frozen=True)
class Node:
    number: int  # 1-based
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def config(self) -> Path:
        return DATA / f"node-{self.number}.toml"

    @property
    def log(self) -> Path:
        return DATA / f"node-{self.number}.log"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops it as Ctrl-C does
    try:
        run(args.nodes, url=args.url, base_port=args.base_port)
    except ClusterError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # before every node was up; what had started is stopped
        return 130
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m relaytui.cluster",
        description="N relayd nodes sharing one PostgreSQL database, on the SIMULATED "
                    "upstream.")
    parser.add_argument("--nodes", type=count, default=3, help="how many nodes (default 3)")
    parser.add_argument("--url", type=postgres_url, default=URL,
                        help=f"the database the nodes share (default {URL})")
    parser.add_argument("--base-port", type=port, default=BASE_PORT,
                        help=f"node 1's port, node 2's the next (default {BASE_PORT}; a "
                             "port that is taken is swapped for the next free one)")
    return parser.parse_args(argv)


def count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 16:
        raise argparse.ArgumentTypeError(f"1 to 16 nodes, got {text!r}")
    return int(text)


def postgres_url(text: str) -> str:
    if not text.startswith(("postgresql://", "postgres://")):
        raise argparse.ArgumentTypeError(
            f"nodes share a PostgreSQL database: postgresql://user@host:port/db, got {text!r}")
    return text


def run(nodes: int, *, url: str, base_port: int) -> None:
    """Start everything, wait for Ctrl-C, SIGTERM or every node gone; stop everything."""
    DATA.mkdir(parents=True, exist_ok=True)
    sim_port, node_ports, mcp_port = pick_ports(base_port, nodes)
    cluster = [Node(n, port) for n, port in enumerate(node_ports, 1)]
    template = (SAMPLES / "demo.toml").read_text()
    for node in cluster:
        node.config.write_text(node_config(template, node, sim_port=sim_port, url=url))
    migrate(cluster[0].config, url=url)  # once, before nodes start: says if it cannot
    key = create_key(cluster[0].config)
    rows = write_rows(DATA / "rows.jsonl")
    with contextlib.ExitStack() as stack:
        sim = stack.enter_context(started_simulator(sim_port, mcp_port))
        procs = stack.enter_context(started_nodes(cluster))
        wait_up(cluster, procs, key)
        print(banner(cluster, procs, url=url, key=key, rows=rows,
                     sim=f"http://127.0.0.1:{sim_port}/v1 (pid {sim.pid})"), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            watch(cluster, procs, sim)


def pick_ports(base_port: int, nodes: int) -> tuple[int, list[int], int]:
    """The simulator's port, each node's (from `base_port` up) and the MCP server's:
    each the one preferred or, if it is taken, the next free one above, all different."""
    taken = [free_port(9900)]
    for n in range(nodes):
        taken.append(free_port(base_port + n, besides=taken))
    taken.append(free_port(9901, besides=taken))
    return taken[0], taken[1:-1], taken[-1]


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


# -- configs, the database, the input file -----------------------------------------------


def node_config(template: str, node: Node, *, sim_port: int, url: str) -> str:
    """The demo's config on this node's port, with the shared database and data dir."""
    text = config_text(template, sim_port=sim_port, api_port=node.port)
    shared = json.dumps(str((DATA / "data").resolve()))  # a JSON string is TOML's too
    text = re.sub(r"(?m)^data_dir = .*$", f"data_dir = {shared}", text)
    return (f"{text.rstrip()}\n\n[database]\nurl = {json.dumps(url)}\n\n"
            f"[cluster]\nlease_s = {LEASE_S}\n")


def migrate(config: Path, *, url: str) -> None:
    """`relayd db migrate`; ClusterError, in one line, if the database cannot be used."""
    done = subprocess.run([str(BIN / "relayd"), "db", "migrate", "--config", str(config)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        said = done.stderr if done.stderr.startswith("relayd:") else \
            (done.stderr.strip().splitlines() or ["no message"])[-1]
        said = " ".join(said.split()).removeprefix("relayd: ")
        raise ClusterError(f"PostgreSQL at {shown(url)}: {said}")


def write_rows(path: Path) -> Path:
    """The input file to try: `ROWS` prompts of the sample CSV, cycled."""
    rows = long_job_rows(review_rows(SAMPLES / "reviews.csv"), count=ROWS)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def shown(url: str) -> str:
    """`url` with its password, if any, hidden."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


# -- processes ----------------------------------------------------------------------------


def spawn(argv: list[str], log_path: Path) -> Proc:
    """In its own process group: Ctrl-C reaches this runner alone, which stops the nodes
    before the simulator they call."""
    with log_path.open("wb") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, process_group=0)


@contextlib.contextmanager
def started_simulator(sim_port: int, mcp_port: int) -> Iterator[Proc]:
    argv = simulator_argv(sim_port, mcp_port=mcp_port)
    proc = spawn(argv, DATA / "simulator.log")
    try:
        yield proc
    finally:
        stop(proc, "simulator")


@contextlib.contextmanager
def started_nodes(cluster: Sequence[Node]) -> Iterator[list[Proc]]:
    procs: list[Proc] = []
    try:
        for node in cluster:
            procs.append(spawn([str(BIN / "relayd"), "serve", "--config", str(node.config)],
                               node.log))
        yield procs
    finally:
        stop_nodes(cluster[:len(procs)], procs)


def stop_nodes(cluster: Sequence[Node], procs: Sequence[Proc]) -> None:
    """SIGTERM to every node at once, then wait; a node still there after `STOP_S` is
    killed. A second Ctrl-C or SIGTERM meanwhile is ignored: the stop is under way."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    running = [(node, proc) for node, proc in zip(cluster, procs, strict=True)
               if proc.poll() is None]
    for _, proc in running:
        proc.send_signal(signal.SIGTERM)
    if running:
        say(f"stopping {len(running)} node(s) (pids "
            f"{', '.join(str(p.pid) for _, p in running)})…")
    deadline = time.monotonic() + STOP_S
    for node, proc in running:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            say(f"node {node.number} did not stop within {STOP_S:.0f} s; killed it")
            proc.kill()
            proc.wait()


def wait_up(cluster: Sequence[Node], procs: Sequence[Proc], key: str,
            timeout: float = 30.0) -> None:
    """Every node answers `/healthz`."""
    deadline = time.monotonic() + timeout
    for node, proc in zip(cluster, procs, strict=True):
        with RelayClient(node.url, key) as client:
            while not client.healthy():
                if proc.poll() is not None:
                    raise ClusterError(f"node {node.number} exited with {proc.returncode}; "
                                       f"see {node.log}")
                if time.monotonic() > deadline:
                    raise ClusterError(f"node {node.number} did not come up; see {node.log}")
                time.sleep(0.1)


def watch(cluster: Sequence[Node], procs: Sequence[Proc], sim: Proc) -> None:
    """Say when a node exits (a `kill -9`, say); return once none is left or the
    simulator is gone."""
    gone: set[int] = set()
    while len(gone) < len(procs):
        if sim.poll() is not None:
            print(f"the simulator exited with {sim.returncode}; see {DATA}/simulator.log")
            return
        for node, proc in zip(cluster, procs, strict=True):
            if node.number not in gone and proc.poll() is not None:
                gone.add(node.number)
                print(exit_note(node, proc.returncode), flush=True)
        time.sleep(0.5)
    print("every node has exited.")


def exit_note(node: Node, code: int) -> str:
    how = "was killed (kill -9)" if code == -signal.SIGKILL else f"exited with {code}"
    after = (f"its leases lapse {LEASE_S} s after its last heartbeat; then the other "
             "nodes take its rows" if code == -signal.SIGKILL else
             "a node that stops gracefully gives its rows back at once")
    return (f"node {node.number} {how}: {after}. To start it again (this runner will "
            f"not stop it):\n  {tool('relayd')} serve --config {node.config}")


# -- what to print --------------------------------------------------------------------------


def banner(cluster: Sequence[Node], procs: Sequence[Proc], *, url: str, key: str, rows: Path,
           sim: str) -> str:
    first, second, last = cluster[0], cluster[min(1, len(cluster) - 1)], cluster[-1]
    victim = procs[-1].pid
    lines = [f"\n{len(cluster)} relayd node(s) sharing {shown(url)}, one SIMULATED upstream:"]
    lines += [f"  node {node.number}  {node.url}  pid {proc.pid}  log {node.log}"
              for node, proc in zip(cluster, procs, strict=True)]
    lines += [f"  simulator  {sim}",
              f"shared data dir: {(DATA / 'data').resolve()}; [cluster] lease_s = {LEASE_S}",
              f"API key (workspace demo): {key}",
              "",
              f"Submit {ROWS:,} rows through node {first.number}; every node takes a share:",
              f"  {tool('relay')} --url {first.url} --key {key} submit {rows} "
              f"--model {MODEL} --wait",
              f"Watch the nodes and the jobs each runs, through node {second.number} "
              "(nodes --json prints relayd's own answer):",
              f"  watch -n1 {tool('relay')} --url {second.url} --key {key} nodes",
              f"Lose node {last.number} the hard way: it is lost {LEASE_S} s later and the "
              "others take its rows:",
              f"  kill -9 {victim}",
              "or stop it gracefully (it gives its rows back at once):",
              f"  kill {victim}",
              "The TUI, through any node (press n for the nodes):",
              f"  {tool('relay')} --url {last.url} --key {key}",
              "",
              "Ctrl-C stops every node, then the simulator."]
    return "\n".join(lines)


def tool(name: str) -> str:
    """How to run one of this venv's commands: its name if that is what the PATH finds."""
    path = BIN / name
    return name if shutil.which(name) == str(path) else str(path)


if __name__ == "__main__":
    sys.exit(main())
