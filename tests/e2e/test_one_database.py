"""One SQLite database, one process, with real processes: the same config started
twice on other ports is refused the second time, naming the first; the first keeps
working alone (as found: two daemons both ran the work, 896 upstream calls for 800
rows, and the second deleted the first's node row). The lock dies with its holder."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from daemon.store.owner import Holder, lock_path
from daemon.testing import RELAYD, Simulator, config_toml
from tests.e2e.harness import Relayd, config_tables, rows, wait_for_status

pytestmark = pytest.mark.e2e

ROWS = 200
CONCURRENCY = 8


def test_a_second_serve_on_one_database_is_refused_and_the_first_works_alone(
        tmp_path: Path, simulator_factory: Callable[..., Simulator],
        relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "20")
    first = relayd_factory(sim, concurrency=CONCURRENCY).start()
    second = Relayd(home=tmp_path / "second")  # the same config but its port
    second.home.mkdir()
    second.config.write_text(config_toml(port=second.port, data_dir=first.data,
                                         **config_tables(sim, concurrency=CONCURRENCY)))
    client = first.client()
    before = client.get("/v1/nodes").json()["data"]
    job = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                           "requests": rows(ROWS)}).json()

    refused = subprocess.run([*RELAYD, "serve", "--config", str(second.config)],
                             capture_output=True, text=True, timeout=60)

    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert f"relayd pid {first.pid} at {first.url}" in refused.stderr
    assert "One SQLite database belongs to one process" in refused.stderr
    assert "serving" not in refused.stdout
    assert first.healthy()
    after = client.get("/v1/nodes").json()["data"]
    assert [n["id"] for n in after] == [n["id"] for n in before]  # its node row intact
    assert after[0]["self"] and after[0]["address"] == first.url
    assert after[0]["health"] == "healthy"
    done = wait_for_status(client, job["id"], "completed", timeout=60)
    assert (done["completed"], done["failed"]) == (ROWS, 0)
    assert len(sim.requests()) == ROWS  # one daemon ran the work: each row called once
    client.close()


def test_short_commands_need_no_lock_beside_a_running_daemon(
        tmp_path: Path, simulator_factory: Callable[..., Simulator],
        relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    first = relayd_factory(sim).start()
    created = subprocess.run([*RELAYD, "keys", "create", "--workspace", "beside",
                              "--config", str(first.config)],
                             capture_output=True, text=True, timeout=60)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    assert httpx.get(first.url + "/v1/models", headers={"Authorization": f"Bearer {key}"},
                     timeout=10).status_code == 200
    migrated = subprocess.run([*RELAYD, "db", "migrate", "--config", str(first.config)],
                              capture_output=True, text=True, timeout=60)
    assert migrated.returncode == 0 and "schema version" in migrated.stdout, migrated.stderr
    assert first.healthy()


def test_after_kill_9_of_the_holder_the_next_serve_starts(
        tmp_path: Path, simulator_factory: Callable[..., Simulator],
        relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    first = relayd_factory(sim).start()
    job = first.client().post("/v1/batches", json={"model": "gpt-4o-mini",
                                                   "requests": rows(3)}).json()
    second = Relayd(home=tmp_path / "second")
    second.home.mkdir()
    second.config.write_text(config_toml(port=second.port, data_dir=first.data,
                                         **config_tables(sim)))
    first.kill()  # kill -9: no stop ran, the lock file still names it

    second.start()
    try:
        holder = Holder.parse(lock_path(first.data / "relay.db").read_text())
        assert holder is not None and (holder.pid, holder.address) == (second.pid, second.url)
        client = httpx.Client(base_url=second.url, timeout=30,
                              headers={"Authorization": f"Bearer {first.key('acme')}"})
        nodes = client.get("/v1/nodes").json()["data"]
        assert [(n["address"], n["self"]) for n in nodes] == [(second.url, True)]
        assert wait_for_status(client, job["id"], "completed")["completed"] == 3
        client.close()
    finally:
        second.stop()
