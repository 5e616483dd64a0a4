"""Seed 000 end to end: real relayd, real simulator, real HTTP, real SQLite."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from daemon.testing import Simulator
from tests.e2e.harness import Relayd, rows, wait_for_status

pytestmark = pytest.mark.e2e


def test_a_batch_runs_with_retries_fallback_and_dead_letter(
        simulator_factory: Callable[..., Simulator], relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim).start()
    special = [
        {"custom_id": "retried", "messages": [{"role": "user",
                                               "content": "a [sim:fail=429 times=1]"}]},
        {"custom_id": "fell-back", "messages": [{"role": "user",
                                                 "content": "b [sim:fail=503 model=sim-small]"}]},
        {"custom_id": "dead", "messages": [{"role": "user", "content": "c [sim:fail=503]"}]},
        {"custom_id": "refused", "messages": [{"role": "user", "content": "d [sim:fail=400]"}]},
        {"custom_id": "garbage", "messages": [{"role": "user", "content": "e [sim:garbage]"}]},
    ]
    with relayd.client() as client:
        created = client.post("/v1/batches", json={
            "name": "Review sentiment — October", "model": "gpt-4o-mini",
            "requests": rows(40, text="Classify: great product!") + special, "priority": 5})
        assert created.status_code == 200, created.text
        job = created.json()
        assert len(job["id"]) == 32 and job["status"] == "queued" and job["total"] == 45
        assert job["next_run_at"] is None

        done = wait_for_status(client, job["id"], "completed")
        assert (done["completed"], done["failed"], done["dead_letter"]) == (42, 3, 1)

        data = client.get(f"/v1/batches/{job['id']}/results").json()["data"]
        by_id = {item["custom_id"]: item for item in data}
        assert len(data) == 45 == len(by_id)
        assert by_id["r-0"] == {"custom_id": "r-0", "content": "positive"}
        assert "sim-large" in by_id["fell-back"]["content"]
        assert "content" in by_id["retried"]
        assert by_id["dead"]["error"].startswith("upstream_error: 503 from gpt-4o-mini")
        assert "fallback backup" in by_id["dead"]["error"]
        assert "400" in by_id["refused"]["error"]
        assert by_id["garbage"]["error"].startswith("invalid_response")

        dead = client.get(f"/v1/batches/{job['id']}/dead_letter").json()["data"]
        assert [d["custom_id"] for d in dead] == ["dead"]
        assert dead[0]["attempts"] == 6 and dead[0]["models"] == ["gpt-4o-mini", "backup"]
        assert [a["status_code"] for a in dead[0]["attempt_log"]] == [503] * 6

    seen = Counter(r["prompt"] for r in sim.requests())
    assert seen["a [sim:fail=429 times=1]"] == 2  # one 429, one success
    assert seen["b [sim:fail=503 model=sim-small]"] == 4  # 3 on the primary, 1 on backup
    assert seen["d [sim:fail=400]"] == 2  # not retried; its fallback tried once


def test_workspaces_do_not_see_each_other(simulator_factory: Callable[..., Simulator],
                                          relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    with relayd.client("acme") as acme, relayd.client("globex") as globex:
        job = acme.post("/v1/batches", json={"model": "gpt-4o-mini",
                                             "requests": rows(2)}).json()
        for path in ("", "/results", "/dead_letter"):
            reply = globex.get(f"/v1/batches/{job['id']}{path}")
            assert reply.status_code == 404
            assert reply.json()["error"]["type"] == "not_found_error"
        assert globex.post(f"/v1/batches/{job['id']}/cancel").status_code == 404
        assert globex.get("/v1/batches?dialect=all").json()["data"] == []
        assert [j["id"] for j in acme.get("/v1/batches?dialect=all").json()["data"]] == [job["id"]]
        no_key = acme.get("/v1/batches", headers={"Authorization": ""})
        assert no_key.status_code == 401


def test_bad_input_is_refused_and_nothing_is_created(simulator_factory: Callable[..., Simulator],
                                                     relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    with relayd.client() as client:
        bad = client.post("/v1/batches", json={"model": "nope", "requests": rows(1)})
        assert bad.status_code == 400
        assert bad.json()["error"]["param"] == "model"
        dup = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                               "requests": rows(1) + rows(1)})
        assert dup.json()["error"]["param"] == "requests[1].custom_id"
        junk = client.post("/v1/batches", content=b"{not json",
                           headers={"Content-Type": "application/json"})
        assert junk.status_code == 400 and "JSON" in junk.json()["error"]["message"]
        assert client.get("/v1/batches?dialect=all").json()["data"] == []
