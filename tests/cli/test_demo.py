"""The demo's pieces (config, ports, sample batches, printing mode, TUI choice) and one
whole run with a stand-in TUI, without the minute the long job takes to finish."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
import tomllib
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from daemon.config import load
from daemon.testing import free_port
from relaytui import demo
from relaytui.client import RelayClient
from relaytui.models import JobView
from tests.e2e.harness import Relayd, Simulator, rows, wait_for_status, wait_until

pytestmark = pytest.mark.e2e


def test_the_config_points_at_the_ports_found_free() -> None:
    text = demo.config_text((demo.SAMPLES / "demo.toml").read_text(), sim_port=19900,
                            api_port=18080)
    config = tomllib.loads(text)
    assert config["server"]["port"] == 18080
    assert {m["base_url"] for m in config["models"]} == {"http://127.0.0.1:19900/v1"}
    assert config["server"]["data_dir"] == "relay-data/demo"


def test_the_demo_and_the_readmes_relayd_keep_their_data_apart(tmp_path: Path) -> None:
    """`just demo` and `relayd serve --config sample_data/demo.toml` (the README's
    "Running relayd yourself") each on a database of its own: relayd refuses a second
    daemon on one SQLite database, so sharing one, the second of them would not start."""
    sample = demo.SAMPLES / "demo.toml"
    own = tmp_path / "demo-run.toml"
    own.write_text(demo.config_text(sample.read_text(), sim_port=9902, api_port=8081))
    demo_config, readme_config = load(own, environ={}), load(sample, environ={})
    assert demo_config.server.data_dir == demo.DATA
    assert demo_config.store_url != readme_config.store_url
    assert not demo_config.server.data_dir.is_relative_to(readme_config.server.data_dir)
    assert not readme_config.server.data_dir.is_relative_to(demo_config.server.data_dir)
    # whatever the template says, the demo keeps to its own
    other = demo.config_text('[server]\ndata_dir = "elsewhere"\nport = 8080\n',
                             sim_port=1, api_port=2, data=Path("relay-data/x"))
    assert tomllib.loads(other)["server"] == {"data_dir": "relay-data/x", "port": 2}


def test_a_busy_port_is_swapped_for_the_next_free_one() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", free_port()))
        busy.listen()
        taken = busy.getsockname()[1]
        other = demo.free_port(taken)
        assert other > taken  # above it, not in the OS's ephemeral range
        assert demo.free_port(taken, besides={other}) not in (taken, other)
    assert demo.free_port(other) == other


def test_the_long_job_cycles_the_csv_prompts_under_unique_ids() -> None:
    prompts = [{"messages": [{"role": "user", "content": f"p{i}"}]} for i in range(3)]
    long = demo.long_job_rows(prompts, count=7)
    assert [r["custom_id"] for r in long] == [f"long-000{i}" for i in range(1, 8)]
    assert [r["messages"][0]["content"] for r in long] == ["p0", "p1", "p2"] * 2 + ["p0"]
    assert len(demo.long_job_rows(prompts)) == demo.LONG_ROWS == 3000


def test_the_samples_are_submitted_and_the_cron_template_is_reused(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd],
        capsys: pytest.CaptureFixture[str]) -> None:
    sim = simulator_factory("--mcp-port", "0")
    relayd = relayd_factory(sim).start()  # its own: 3,000 rows of load
    key = relayd.key("demo")
    demo.enable_workflows(relayd.config)
    with RelayClient(relayd.url, key) as client:
        jobs = demo.submit_samples(client, ports=demo_ports(sim))
        views = {label: client.job(i) for label, i in jobs.watched.items()}
        template = client.job(jobs.template)
        again = demo.cron_template(client, rows(2))
        tools = wait_until(lambda: (job := client.job(jobs.watched["tools.jsonl"]))[
            "status"] == "completed" and job)
        results = {r["custom_id"]: r for r in client.results(tools["id"])["data"]}
        flows = wait_until(lambda: (job := client.job(jobs.watched["workflows.jsonl"]))[
            "status"] == "completed" and job, timeout=30)
        answers = wait_until(lambda: (job := client.job(jobs.watched["responses.jsonl"]))[
            "status"] == "completed" and job, timeout=30)
        checked = wait_until(lambda: (job := client.job(jobs.watched["structured.jsonl"]))[
            "status"] == "completed" and job, timeout=30)
    assert checked["request_counts"] == {"total": 4, "completed": 4, "failed": 0}
    # Each record ran or was refused; which ones answer depends on the router (translated
    # to chat, or passed to a simulator that serves /v1/responses): see test_openai_sdk.
    assert answers["endpoint"] == "/v1/responses" and answers["request_counts"]["total"] == 6
    assert answers["request_counts"]["failed"] >= 1  # resp-6: previous_response_id
    assert (flows["request_counts"]["completed"], flows["request_counts"]["failed"]) == (4, 1)
    assert (tools["total"], tools["completed"], tools["failed"], tools["dead_letter"]) == (
        9, 8, 1, 1)
    assert {r.get("openrelay", {}).get("tool_rounds") for r in results.values()} == {
        1, 2, 3, None}
    assert results["http-down"]["error"].startswith("tool_executor_unreachable")
    assert len(sim.tool_calls()) > 0 and len(sim.mcp_calls()) > 0
    assert (views["reviews.jsonl"]["total"], views["reviews.jsonl"]["priority"]) == (300, 5)
    assert (views["long job"]["total"], views["long job"]["name"]) == (3000, "Demo: long job")
    assert (template["status"], template["cron"], template["total"]) == (
        "scheduled", "*/5 * * * *", 5)
    assert template["name"] == "Demo: every 5 minutes"
    assert again == jobs.template
    assert f"reusing cron template {jobs.template}" in capsys.readouterr().out


def demo_ports(sim: Simulator) -> demo.Ports:
    assert sim.mcp_url is not None
    return demo.Ports(simulator=sim.port, mcp=int(sim.mcp_url.rsplit(":", 1)[1].split("/")[0]))


def test_the_tool_sample_points_at_this_runs_simulator() -> None:
    records = demo.tool_rows(demo.SAMPLES / "tools.jsonl", demo.Ports(19900, 19901))
    urls = {r["body"]["openrelay"]["tool_config"]["url"] for r in records}
    assert urls == {"http://127.0.0.1:19900/_sim/tools", "http://127.0.0.1:19901/mcp"}
    assert {r["body"]["openrelay"]["tool_config"].get("type", "http") for r in records} == {
        "http", "mcp"}


def test_the_printing_mode_shows_progress_results_and_dead_letters(
        shared_relayd: Relayd, workspace: str, http: httpx.Client,
        capsys: pytest.CaptureFixture[str]) -> None:
    dead = {"custom_id": "dead", "messages": [{"role": "user", "content": "x [sim:fail=503]"}]}
    job = http.post("/v1/batches", json={"model": "gpt-4o-mini",
                                         "requests": [*rows(3), dead]}).json()
    template = http.post("/v1/batches", json={"model": "gpt-4o-mini", "requests": rows(1),
                                              "cron": "0 4 * * *"}).json()
    wait_for_status(http, job["id"], "completed")
    with RelayClient(shared_relayd.url, shared_relayd.key(workspace)) as client:
        demo.print_run(client, demo.DemoJobs({"small": job["id"]}, template["id"]))
    out = capsys.readouterr().out
    assert "small          completed with errors [####################] 4/4  failed 1  " \
        "dead-letter 1" in out
    assert "small: first results\n  r-0: " in out
    assert "  dead-letter dead: 6 attempts on gpt-4o-mini, backup" in out
    assert f"cron template {template['id']}: next run " in out


def test_the_tui_is_chosen_only_on_a_terminal_and_when_it_exists(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fake = types.ModuleType("relaytui.app")
    fake.run = lambda url, key: 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "relaytui.app", fake)
    assert demo.choose_tui(no_tui=False, interactive=True) is fake.run
    assert demo.choose_tui(no_tui=True, interactive=True) is None
    assert demo.choose_tui(no_tui=False, interactive=False) is None
    monkeypatch.setitem(sys.modules, "relaytui.app", None)
    assert demo.choose_tui(no_tui=False, interactive=True) is None
    assert "printing progress instead" in capsys.readouterr().out


def long_id(client: RelayClient) -> str:
    return next(j["id"] for j in client.all_jobs() if j["name"] == demo.LONG_NAME)


def test_a_whole_run_opens_the_tui_on_live_jobs_then_stops_everything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # the demo keeps its data under ./relay-data/demo
    seen: dict[str, Any] = {}

    def tui(*, url: str, key: str) -> int:
        with RelayClient(url, key) as client:
            seen["jobs"] = {JobView.from_batch(j).name: JobView.from_batch(j).status
                            for j in client.all_jobs()}  # each dialect's shape
            # Look at the live job for a moment, as a person would (see the report:
            # a SIGTERM in relayd's first instants of a big job can hang its stop).
            wait_until(lambda: client.job(long_id(client))["completed"] > 0)
        seen["url"] = url
        return 0

    monkeypatch.setattr(demo, "choose_tui", lambda **_: tui)
    port, sim_port = free_port(), free_port()
    assert demo.main(["--port", str(port), "--sim-port", str(sim_port)]) == 0
    assert seen["url"] == f"http://127.0.0.1:{port}"
    assert seen["jobs"]["Demo: every 5 minutes"] == "scheduled"
    assert seen["jobs"]["Demo: long job"] in ("queued", "running")
    assert set(seen["jobs"]) == {"Demo: reviews.jsonl", "Demo: tools.jsonl",
                                 "Demo: workflows.jsonl", "Demo: responses.jsonl",
                                 "Demo: structured.jsonl", "Demo: every 5 minutes",
                                 "Demo: long job", "message batch of 5 requests"}
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{seen['url']}/healthz", timeout=2)
    out = capsys.readouterr().out
    key = out.split("API key:   ", 1)[1].split()[0]
    assert f"relayd:    http://127.0.0.1:{port}\n" in out
    assert f"simulator: http://127.0.0.1:{sim_port}/v1 (SIMULATED upstream)" in out
    assert f"relay --url http://127.0.0.1:{port} --key {key}" in out
    assert f"just simulate {sim_port}" in out
    assert "Data and logs are in relay-data/demo/" in out
    assert (tmp_path / "relay-data" / "demo" / "relayd.log").exists()
    assert not (tmp_path / "config").exists() or not any((tmp_path / "config").iterdir())


def test_ports_are_flags_and_the_hint_names_them() -> None:
    args = demo.parse_args(["--port", "18081", "--sim-port", "19911"])
    assert (args.port, args.sim_port) == (18081, 19911)
    assert demo.parse_args([]).port is None
    hint = demo.closing_hint(url="http://127.0.0.1:18081", sim_port=19911,
                             config=demo.DATA / "demo-run.toml", key="rk-1", mcp_port=19912)
    assert "relay --url http://127.0.0.1:18081 --key rk-1" in hint
    assert "just simulate 19911`" in hint and "just serve relay-data/demo/demo-run.toml" in hint
    moved = demo.closing_hint(url="http://127.0.0.1:18081", sim_port=19911,
                              config=demo.DATA / "demo-run.toml", key="rk-1", mcp_port=19920)
    assert "just simulate 19911 --mcp-port 19920`" in moved  # not the default one after
    with pytest.raises(SystemExit):
        demo.parse_args(["--port", "70000"])


def test_a_taken_port_ends_the_demo_at_once_after_printing_ports_and_key(tmp_path: Path) -> None:
    """A real run: the banner comes first, then relayd cannot bind and the demo stops."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port, sim_port = busy.getsockname()[1], free_port()
        # Something else owns the port: it hangs up on whoever calls.
        threading.Thread(target=hang_up, args=(busy,), daemon=True).start()
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "relaytui.demo", "--no-tui", "--port",
                               str(port), "--sim-port", str(sim_port)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
        took = time.monotonic() - started
    assert done.returncode != 0
    assert f"relayd:    http://127.0.0.1:{port}\n" in done.stdout
    assert f"simulator: http://127.0.0.1:{sim_port}/v1" in done.stdout
    assert done.stdout.split("API key:   ", 1)[1].split()[0]
    assert f"relayd exited with 1 at http://127.0.0.1:{port}" in done.stderr
    assert "address already in use" in (tmp_path / "relay-data/demo/relayd.log").read_text()
    assert took < 15, f"took {took:.1f} s"


def hang_up(server: socket.socket) -> None:
    with contextlib.suppress(OSError):  # the listening socket was closed: the test is over
        while True:
            server.accept()[0].close()
