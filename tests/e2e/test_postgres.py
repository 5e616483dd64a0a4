"""Relay on PostgreSQL end to end: a real `relayd serve` whose `[database] url` names a
fresh schema on the test server, a real `relayd simulate`, real HTTP; and nodes that
start at once on an empty database (`relayd db migrate` three times over).

The schema is chosen in the URL with libpq's own parameter,
`?options=-csearch_path%3D<schema>` (tests/store/postgres.py). Where no PostgreSQL is
reachable these tests skip, saying why; under `CI=true` they fail.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from daemon.store.schema import SCHEMA_VERSION
from daemon.testing import Simulator
from tests.e2e.harness import RELAYD, Relayd, config_tables, rows, wait_for_status
from tests.store import postgres

pytestmark = pytest.mark.e2e


def test_a_batch_runs_on_postgresql(simulator_factory: Callable[..., Simulator],
                                    relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim)
    with postgres.fresh_schema() as url:
        relayd.write_config(**config_tables(sim), database={"url": url})
        relayd.start()
        try:
            special = [
                {"custom_id": "dead", "messages": [{"role": "user",
                                                    "content": "c [sim:fail=503]"}]},
                {"custom_id": "refused", "messages": [{"role": "user",
                                                       "content": "d [sim:fail=400]"}]},
            ]
            with relayd.client() as client:
                created = client.post("/v1/batches", json={
                    "name": "On PostgreSQL", "model": "gpt-4o-mini",
                    "requests": rows(20, text="Classify: great product!") + special})
                assert created.status_code == 200, created.text
                job = created.json()
                done = wait_for_status(client, job["id"], "completed")
                assert (done["completed"], done["failed"], done["dead_letter"]) == (20, 2, 1)

                data = client.get(f"/v1/batches/{job['id']}/results").json()["data"]
                by_id = {item["custom_id"]: item for item in data}
                assert len(data) == 22 == len(by_id)
                assert by_id["r-0"] == {"custom_id": "r-0", "content": "positive"}
                assert "400" in by_id["refused"]["error"]
                dead = client.get(f"/v1/batches/{job['id']}/dead_letter").json()["data"]
                assert [d["custom_id"] for d in dead] == ["dead"]

                # The aggregates, summed in PostgreSQL.
                throughput = client.get("/v1/stats").json()["throughput"]
                assert (sum(b["completed"] for b in throughput),
                        sum(b["failed"] for b in throughput)) == (20, 2)
                metrics = client.get("/metrics").text
                assert 'relay_rows_total{model="gpt-4o-mini",outcome="completed"} 20.0' \
                    in metrics
        finally:
            relayd.stop()
        with psycopg.connect(url) as conn:
            stored = conn.execute('SELECT COUNT(*) FROM job j JOIN "row" r '
                                  "ON r.job_id = j.seq WHERE j.id = %s", (job["id"],))
            assert stored.fetchone() == (22,)
        assert not (relayd.data / "relay.db").exists()  # nothing went to SQLite


def test_nodes_starting_at_once_create_the_schema_once(tmp_path: Path) -> None:
    with postgres.fresh_schema() as url:
        config = tmp_path / "relay.toml"
        config.write_text(f'[server]\ndata_dir = "{tmp_path / "data"}"\n\n'
                          f'[database]\nurl = "{url}"\n')
        nodes = [subprocess.Popen([*RELAYD, "db", "migrate", "--config", str(config)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(3)]
        answers = [node.communicate(timeout=60) for node in nodes]
        assert [node.returncode for node in nodes] == [0, 0, 0], answers
        assert [out for out, _ in answers] == [f"schema version {SCHEMA_VERSION}\n"] * 3
        with psycopg.connect(url) as conn:
            versions = conn.execute("SELECT version FROM schema_version").fetchall()
        assert versions == [(SCHEMA_VERSION,)]
