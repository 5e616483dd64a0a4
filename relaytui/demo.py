"""`just demo`: start the simulator and relayd, submit the sample batches, show progress
until they end, print what came back, then stop what it started.

Everything runs against the SIMULATED upstream (`relayd simulate`); no real
provider is called. The daemon's data stays in `relay-data/demo/`.
"""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from relaytui.client import RelayClient, RelayError
from relaytui.formats import read_rows

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_data"
DATA = Path("relay-data/demo")
BIN = Path(sys.executable).parent


def main() -> int:
    sim_port, api_port = _port(9900), _port(8080)
    config = _write_config(sim_port, api_port)
    with _process("simulator", [str(BIN / "relayd"), "simulate", "--port", str(sim_port),
                                "--latency-ms", "120", "--jitter-ms", "80",
                                "--rate-429", "0.02", "--rate-5xx", "0.02", "--seed", "7"]):
        key = _create_key(config)
        with _process("relayd", [str(BIN / "relayd"), "serve", "--config", str(config)]):
            client = RelayClient(f"http://127.0.0.1:{api_port}", key)
            _wait_healthy(client)
            jobs = _submit_samples(client)
            _watch(client, jobs)
            _report(client, jobs)
            print(f"\nAPI key for this demo workspace: {key}")
            print(f"Data kept in {DATA}/ — run `just serve` to keep relayd up "
                  f"(the simulator with `just simulate`).")
    return 0


def _port(preferred: int) -> int:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])


def _write_config(sim_port: int, api_port: int) -> Path:
    text = (SAMPLES / "demo.toml").read_text()
    text = text.replace("127.0.0.1:9900", f"127.0.0.1:{sim_port}")
    text = re.sub(r"(?m)^port = 8080", f"port = {api_port}", text)
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / "demo-run.toml"
    path.write_text(text)
    return path


@contextlib.contextmanager
def _process(label: str, argv: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    log = open(DATA / f"{label}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    print(f"started {label} (pid {proc.pid}, log {DATA / (label + '.log')})")
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _create_key(config: Path) -> str:
    out = subprocess.run([str(BIN / "relayd"), "keys", "create", "--workspace", "demo",
                          "--config", str(config)], check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def _wait_healthy(client: RelayClient, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not client.healthy():
        if time.monotonic() > deadline:
            raise SystemExit(f"relayd did not come up; see {DATA}/relayd.log")
        time.sleep(0.1)


def _submit_samples(client: RelayClient) -> dict[str, str]:
    jobs = {}
    for name, priority in (("reviews.jsonl", 5), ("reviews.csv", 0)):
        job = client.submit(model="gpt-4o-mini", requests=read_rows(SAMPLES / name),
                            name=f"Demo: {name}", priority=priority)
        jobs[name] = job["id"]
        print(f"submitted {name}: {job['total']} rows as job {job['id']} (priority {priority})")
    return jobs


def _watch(client: RelayClient, jobs: dict[str, str]) -> None:
    live = sys.stdout.isatty()
    while True:
        views = {name: client.job(job_id) for name, job_id in jobs.items()}
        line = "   ".join(_progress(name, v) for name, v in views.items())
        print(("\r" + line) if live else line, end="" if live else "\n", flush=True)
        if all(v["status"] in ("completed", "failed", "canceled") for v in views.values()):
            print()
            return
        time.sleep(0.5 if live else 2.0)


def _progress(name: str, view: dict[str, object]) -> str:
    total = int(view["total"] or 1)  # type: ignore[call-overload]
    done = int(view["completed"]) + int(view["failed"])  # type: ignore[call-overload]
    filled = round(20 * done / total)
    return (f"{name:<14} {view['status']:<9} [{'#' * filled}{'.' * (20 - filled)}] "
            f"{done:>3}/{total} failed {view['failed']} dead-letter {view['dead_letter']}")


def _report(client: RelayClient, jobs: dict[str, str]) -> None:
    for name, job_id in jobs.items():
        results = client.results(job_id)["data"]
        print(f"\n{name}: first results")
        for item in results[:3]:
            print(f"  {item['custom_id']}: {item.get('content') or item.get('error')}")
        dead = client.dead_letter(job_id)["data"]
        for entry in dead:
            print(f"  dead-letter {entry['custom_id']}: {entry['attempts']} attempts on "
                  f"{', '.join(entry['models'])}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RelayError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
