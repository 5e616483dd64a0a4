"""`just demo`: start the simulator and relayd, submit the sample batches, open the TUI
on them, and stop what it started when the TUI quits.

The batches: `reviews.jsonl` (three rows are rigged to dead-letter), `tools.jsonl`
(tool-calling records: the simulator's HTTP tool executor and its MCP server, one
record rigged to an executor that is down), `workflows.jsonl` (workflow records on
the simulator's map-reduce callback, one waiting 5 s, one over its step budget; the
demo workspace is enabled for them), `responses.jsonl` (Responses API records, one
calling tools, one refused for its `previous_response_id`), `structured.jsonl` (records
with a JSON Schema checked by Relay, one answered wrongly at first and repaired),
`anthropic_batch.json` (an
Anthropic Message Batch, translated to the simulator's chat route), a cron template
(a few rows of `reviews.csv` every 5 minutes) and a long job (3,000 rows of
`reviews.csv`, a minute or two against the simulator), so the TUI has live work to
show. Without a terminal (CI, pipes), with `--no-tui`, or while the TUI is not built,
it prints progress until the jobs end, then the first results and the dead letters.

Everything runs against the SIMULATED upstream (`relayd simulate`); no real provider
is called. The daemon's data and both logs stay in `relay-data/demo/`, the demo's own
data dir: a `relayd serve --config sample_data/demo.toml` (the README's "Running relayd
yourself", data in `relay-data/serve/`) runs beside it, each on its own database. The
user's relay config file is never touched: the TUI gets the URL and key directly.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relaytui import progress
from relaytui.client import RelayClient, RelayError
from relaytui.formats import jsonl_rows, read_rows
from relaytui.rows import attempts_text
from relaytui.table_batch import parse_template, render_template
from relaytui.tables import read_table

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_data"
DATA = Path("relay-data/demo")
BIN = Path(sys.executable).parent
MODEL = "gpt-4o-mini"
CHAT, RESPONSES = "/v1/chat/completions", "/v1/responses"
CRON = "*/5 * * * *"
CRON_NAME = "Demo: every 5 minutes"
LONG_NAME = "Demo: long job"
LONG_ROWS = 3000

Tui = Callable[..., int]


@dataclass(frozen=True)
class DemoJobs:
    watched: dict[str, str]  # label -> id of the jobs that end
    template: str  # the cron template's id


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    tui = choose_tui(no_tui=args.no_tui, interactive=sys.stdout.isatty())
    api_port = args.port or free_port(8080)
    sim_port = args.sim_port or free_port(9900, besides={api_port})
    mcp_port = free_port(sim_port + 1, besides={api_port, sim_port})  # the simulator's own
    DATA.mkdir(parents=True, exist_ok=True)
    config = DATA / "demo-run.toml"
    config.write_text(config_text((SAMPLES / "demo.toml").read_text(),
                                  sim_port=sim_port, api_port=api_port))
    url = f"http://127.0.0.1:{api_port}"
    with started("simulator", simulator_argv(sim_port, mcp_port=mcp_port)):
        key = create_key(config)
        enable_workflows(config)
        print(start_banner(url=url, sim_port=sim_port, key=key), flush=True)
        with started("relayd", [str(BIN / "relayd"), "serve", "--config", str(config)]) \
                as relayd, RelayClient(url, key) as client:
            wait_healthy(client, relayd)
            jobs = submit_samples(client, ports=Ports(sim_port, mcp_port))
            code = tui(url=url, key=key) if tui else print_run(client, jobs)
    print(closing_hint(url=url, sim_port=sim_port, config=config, key=key,
                       mcp_port=mcp_port))
    return code


def start_banner(*, url: str, sim_port: int, key: str) -> str:
    return (f"relayd:    {url}\n"
            f"simulator: http://127.0.0.1:{sim_port}/v1 (SIMULATED upstream)\n"
            f"API key:   {key}")


def closing_hint(*, url: str, sim_port: int, config: Path, key: str,
                 mcp_port: int | None = None) -> str:
    """How to look again: the same ports, config and key this run used (the simulator
    serves MCP on the port after its own unless told another)."""
    mcp = "" if mcp_port in (None, sim_port + 1) else f" --mcp-port {mcp_port}"
    return (f"\nStopped the simulator and relayd. Data and logs are in {DATA}/ "
            f"(relayd.log, simulator.log).\n"
            f"To look again, run `just simulate {sim_port}{mcp}` and `just serve {config}` "
            f"in two terminals, then\n  relay --url {url} --key {key}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m relaytui.demo",
                                     description="Relay's demo, on the SIMULATED upstream.")
    parser.add_argument("--no-tui", action="store_true",
                        help="print progress and results instead of opening the TUI")
    parser.add_argument("--port", type=port, default=None,
                        help="relayd's port (default: 8080, or the next free one above)")
    parser.add_argument("--sim-port", type=port, default=None,
                        help="the simulator's port (default: 9900, or the next free one above)")
    return parser.parse_args(argv)


def port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1-65535, got {text!r}")
    return int(text)


def choose_tui(*, no_tui: bool, interactive: bool) -> Tui | None:
    """The TUI's `run`, or None for the printing mode (asked for, no terminal, or no TUI)."""
    return load_tui() if interactive and not no_tui else None


def load_tui() -> Tui | None:
    try:
        from relaytui.app import run
    except ImportError as exc:
        print(f"The TUI is not available ({exc}); printing progress instead.")
        return None
    return run


# -- processes -----------------------------------------------------------------------


def free_port(preferred: int, *, besides: Collection[int] = ()) -> int:
    """`preferred` if nothing listens there, else the next free port above it, none of
    `besides` (those this run has taken already, not yet bound). Not a port the OS
    picks: those come from its ephemeral range, where any process binding port 0 may
    take it in the moment before relayd or the simulator binds it."""
    for candidate in range(preferred, 65536):
        if candidate in besides:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return candidate
    raise OSError(f"no free port from {preferred} up")


def config_text(template: str, *, sim_port: int, api_port: int, data: Path = DATA) -> str:
    """The demo config pointed at the ports this run found free, its data in the demo's
    own data dir (`data`), whatever the template's is: relayd refuses a second daemon on
    one SQLite database, and `sample_data/demo.toml` is the README's own relayd's."""
    text = template.replace("127.0.0.1:9900", f"127.0.0.1:{sim_port}")
    text = re.sub(r"(?m)^data_dir = .*$", f"data_dir = {json.dumps(str(data))}", text)
    return re.sub(r"(?m)^port = 8080\b", f"port = {api_port}", text)


def simulator_argv(port: int, *, mcp_port: int) -> list[str]:
    return [str(BIN / "relayd"), "simulate", "--port", str(port), "--latency-ms", "120",
            "--jitter-ms", "80", "--rate-429", "0.02", "--rate-5xx", "0.02", "--seed", "7",
            "--mcp-port", str(mcp_port)]


@contextlib.contextmanager
def started(label: str, argv: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    log_path = DATA / f"{label}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    print(f"started {label} (pid {proc.pid}, log {log_path})")
    try:
        yield proc
    finally:
        stop(proc, label)


def stop(proc: subprocess.Popen[bytes], label: str, grace: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `grace` seconds."""
    proc.send_signal(signal.SIGTERM)
    say(f"stopping {label} (pid {proc.pid})…")
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        say(f"{label} did not stop within {grace:.0f} s; killed it")
        proc.kill()
        proc.wait()


def say(message: str) -> None:
    """Print a line while stopping; one nobody can read any more (the terminal or the
    pipe went with the Ctrl-C) must not keep the rest from stopping."""
    with contextlib.suppress(OSError):
        print(message, flush=True)


def create_key(config: Path) -> str:
    out = subprocess.run([str(BIN / "relayd"), "keys", "create", "--workspace", "demo",
                          "--config", str(config)], check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def enable_workflows(config: Path) -> None:
    """Workflow records are off until an operator enables them: the demo's operator does."""
    subprocess.run([str(BIN / "relayd"), "workspaces", "set", "demo", "--workflows", "on",
                    "--config", str(config)], check=True, capture_output=True, text=True)


def wait_healthy(client: RelayClient, relayd: subprocess.Popen[bytes],
                 timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not client.healthy():
        if relayd.poll() is not None:  # e.g. its port is taken: relayd says so and exits
            raise SystemExit(f"relayd exited with {relayd.returncode} at {client.url}; "
                             f"see {DATA}/relayd.log")
        if time.monotonic() > deadline:
            raise SystemExit(f"relayd did not come up; see {DATA}/relayd.log")
        time.sleep(0.1)


# -- the sample batches --------------------------------------------------------------


@dataclass(frozen=True)
class Ports:
    simulator: int  # the model and the HTTP tool executor (/_sim/tools)
    mcp: int  # the simulator's MCP tool server


def submit_samples(client: RelayClient, *, ports: Ports, samples: Path = SAMPLES) -> DemoJobs:
    prompts = review_rows(samples / "reviews.csv")
    dead = client.submit(model=MODEL, requests=read_rows(samples / "reviews.jsonl"),
                         name="Demo: reviews.jsonl", priority=5)
    print(f"submitted reviews.jsonl: {dead['total']} rows as job {dead['id']} (priority 5)")
    tools = client.submit(model=MODEL, requests=tool_rows(samples / "tools.jsonl", ports),
                          name="Demo: tools.jsonl", priority=4)
    print(f"submitted tools.jsonl: {tools['total']} tool-calling records (HTTP and MCP "
          f"executors) as job {tools['id']}")
    flows = workflow_batch(client, samples / "workflows.jsonl", ports)
    print(f"submitted workflows.jsonl: workflow records driven by the simulator's "
          f"map-reduce callback, as OpenAI-dialect batch {flows}")
    answers = responses_batch(client, samples / "responses.jsonl", ports)
    print(f"submitted responses.jsonl: Responses API records (/v1/responses) as "
          f"OpenAI-dialect batch {answers}")
    checked = file_batch(client, samples / "structured.jsonl", ports, endpoint=CHAT)
    print(f"submitted structured.jsonl: records with a JSON Schema, checked (one needs a "
          f"repair), as OpenAI-dialect batch {checked}")
    message = client.create_message_batch(
        json.loads((samples / "anthropic_batch.json").read_text(encoding="utf-8")))
    print(f"submitted anthropic_batch.json: {message['request_counts']['processing']} "
          f"requests as Anthropic Message Batch {message['id']}")
    template = cron_template(client, prompts[:5])
    long = client.submit(model=MODEL, requests=long_job_rows(prompts), name=LONG_NAME)
    print(f"submitted {LONG_NAME!r}: {long['total']} rows as job {long['id']}")
    return DemoJobs(watched={"reviews.jsonl": dead["id"], "tools.jsonl": tools["id"],
                             "workflows.jsonl": flows, "responses.jsonl": answers,
                             "structured.jsonl": checked,
                             "anthropic_batch": message["id"],
                             "long job": long["id"]},
                    template=template)


def workflow_batch(client: RelayClient, path: Path, ports: Ports) -> str:
    """The workflow sample (OpenAI dialect: an uploaded file), its callback URL pointed at
    this run's simulator."""
    return file_batch(client, path, ports, endpoint=CHAT)


def responses_batch(client: RelayClient, path: Path, ports: Ports) -> str:
    """The Responses sample (`/v1/responses` records, one with tool calling on the
    simulator's HTTP executor, one refused for its `previous_response_id`)."""
    return file_batch(client, path, ports, endpoint=RESPONSES)


def file_batch(client: RelayClient, path: Path, ports: Ports, *, endpoint: str) -> str:
    """An OpenAI-dialect batch of a sample file, its URLs pointed at this run's
    simulator; named after the file."""
    text = path.read_text(encoding="utf-8").replace("127.0.0.1:9900",
                                                    f"127.0.0.1:{ports.simulator}")
    upload = client.upload(path.name, text.encode())
    batch = client.create_batch(upload["id"], endpoint=endpoint,
                                metadata={"name": f"Demo: {path.name}"})
    return str(batch["id"])


def tool_rows(path: Path, ports: Ports) -> list[dict[str, Any]]:
    """The tool-calling sample, its executor URLs pointed at this run's simulator."""
    text = path.read_text(encoding="utf-8")
    text = text.replace("127.0.0.1:9900", f"127.0.0.1:{ports.simulator}")
    return jsonl_rows(text.replace("127.0.0.1:9901", f"127.0.0.1:{ports.mcp}"), path=str(path))


def cron_template(client: RelayClient, rows: list[dict[str, Any]]) -> str:
    """The demo's cron template; a second demo run reuses the first one's rather than
    adding another that ticks alongside it."""
    for job in client.all_jobs(status="scheduled"):
        if job.get("name") == CRON_NAME:
            print(f"reusing cron template {job['id']} ({job['cron']})")
            return str(job["id"])
    job = client.submit(model=MODEL, requests=rows, name=CRON_NAME, cron=CRON)
    print(f"submitted cron template {job['id']}: {job['total']} rows at {CRON!r} UTC, "
          f"next run {job['next_run_at']}")
    return str(job["id"])


REVIEW_PROMPT = ("Classify the sentiment of this review as positive, negative or neutral: "
                 "{review}")


def review_rows(path: Path) -> list[dict[str, Any]]:
    """The sample table of reviews as Relay rows, each prompt `REVIEW_PROMPT` filled."""
    template = parse_template(REVIEW_PROMPT)
    return [{"messages": [{"role": "user", "content": render_template(template, row)}]}
            for row in read_table(path).rows]


def long_job_rows(prompts: list[dict[str, Any]], count: int = LONG_ROWS) -> list[dict[str, Any]]:
    cycled = itertools.islice(itertools.cycle(prompts), count)
    return [{"custom_id": f"long-{n:04d}", "messages": row["messages"]}
            for n, row in enumerate(cycled, start=1)]


# -- printing mode -------------------------------------------------------------------


def print_run(client: RelayClient, jobs: DemoJobs) -> int:
    watch(client, jobs.watched)
    report(client, jobs)
    return 0


def watch(client: RelayClient, jobs: dict[str, str], *, every: float = 0.5,
          log_every: float = 5.0) -> None:
    """One line per job: redrawn in place on a terminal, else every `log_every` s."""
    live = sys.stdout.isatty()
    logged_at = 0.0
    first = True
    while True:
        views = {label: progress.summarize(client.job(i)) for label, i in jobs.items()}
        ended = all(v.ended for v in views.values())
        digits = max(len(str(v.total)) for v in views.values())
        labels = max(14, *(len(label) for label in views))
        lines = [f"{label:<{labels}} "
                 f"{progress.line(v, count_width=2 * digits + 1, failed_width=digits)}"
                 .rstrip() for label, v in views.items()]
        if live:
            up = "" if first else f"\x1b[{len(lines)}F"
            print(up + "".join(f"{text}\x1b[K\n" for text in lines), end="", flush=True)
        elif ended or time.monotonic() - logged_at >= log_every:
            print("\n".join(lines), flush=True)
            logged_at = time.monotonic()
        if ended:
            return
        first = False
        time.sleep(every)


def report(client: RelayClient, jobs: DemoJobs) -> None:
    for label, job_id in jobs.watched.items():
        print(f"\n{label}: first results")
        for item in client.results(job_id, limit=3)["data"]:
            print(f"  {item['custom_id']}: {item.get('content') or item.get('error')}")
        for entry in client.dead_letter(job_id)["data"]:
            print(f"  dead-letter {entry['custom_id']}: {attempts_text(entry)} on "
                  f"{', '.join(entry['models'])}")
    template = client.job(jobs.template)
    print(f"\ncron template {template['id']}: next run {template['next_run_at']}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RelayError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
