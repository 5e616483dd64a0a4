"""Priority, cancel, webhooks, the URL policy and live events, observed from outside."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

from daemon.testing import Simulator
from tests.e2e.harness import RELAYD, Relayd, rows, wait_for_status, wait_until

pytestmark = pytest.mark.e2e


def test_priority_order_is_observed_at_the_upstream(simulator_factory: Callable[..., Simulator],
                                                    relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory()
    relayd = relayd_factory(sim, concurrency=1, running=1).start()
    with relayd.client() as client:
        blocker = client.post("/v1/batches", json={"model": "gpt-4o-mini", "requests": [
            {"messages": [{"role": "user", "content": "hold [sim:sleep=600]"}]}]}).json()
        wait_for_status(client, blocker["id"], "running")
        low = client.post("/v1/batches", json={"model": "gpt-4o-mini", "priority": 1,
                                               "requests": rows(2, prefix="low")}).json()
        high = client.post("/v1/batches", json={"model": "gpt-4o-mini", "priority": 9,
                                                "requests": rows(2, prefix="high")}).json()
        for job in (blocker, low, high):
            wait_for_status(client, job["id"], "completed")
    order = [r["prompt"].split()[-1] for r in sim.requests()]
    assert order == ["[sim:sleep=600]", "high-0", "high-1", "low-0", "low-1"]


def test_cancel_stops_the_upstream_traffic(simulator_factory: Callable[..., Simulator],
                                           relayd_factory: Callable[..., Relayd]) -> None:
    sim = simulator_factory("--latency-ms", "50")
    relayd = relayd_factory(sim, concurrency=4).start()
    with relayd.client() as client:
        job = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                               "requests": rows(300)}).json()
        wait_until(lambda: client.get(f"/v1/batches/{job['id']}").json()["completed"] >= 20)
        cancelled = client.post(f"/v1/batches/{job['id']}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["id"] == job["id"]
        ended = wait_for_status(client, job["id"], "canceled")
        settled = sim.stats()["requests"]
        again = client.post(f"/v1/batches/{job['id']}/cancel")
        assert again.status_code == 409 and "already ended" in again.json()["error"]["message"]
        data = client.get(f"/v1/batches/{job['id']}/results").json()["data"]
    assert len(data) == 300
    never_ran = [d for d in data if d.get("error") == "canceled"]
    assert len(never_ran) == 300 - ended["completed"] > 0
    assert ended["failed"] == len(never_ran)
    assert sim.stats()["requests"] == settled < 300


class _Receiver(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_completion_webhook_is_signed_and_recorded(simulator_factory: Callable[..., Simulator],
                                                   relayd_factory: Callable[..., Relayd]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    relayd = relayd_factory(simulator_factory()).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    try:
        with relayd.client() as client:
            job = client.post("/v1/batches", json={"name": "hooked", "model": "gpt-4o-mini",
                                                   "requests": rows(3), "webhookUrl": url}).json()
            wait_until(lambda: _Receiver.received)
            done = wait_until(lambda: (j := client.get(f"/v1/batches/{job['id']}").json())
                              ["webhook"] and j["webhook"].get("status_code") and j)
    finally:
        server.shutdown()
    secret = subprocess.run([*RELAYD, "webhooks", "secret", "--workspace", "acme", "--config",
                             str(relayd.config)], capture_output=True, text=True,
                            check=True).stdout.strip()
    headers, body = _Receiver.received[0]
    t, v1 = (part.split("=", 1)[1] for part in headers["Relay-Signature"].split(","))
    expected = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(v1, expected)
    payload = json.loads(body)
    assert payload == {"id": job["id"], "name": "hooked", "status": "completed", "total": 3,
                       "completed": 3, "failed": 0, "dead_letter": 0,
                       "completed_at": done["completed_at"]}
    assert done["webhook"]["status_code"] == 204 and done["webhook"]["error"] is None
    assert len(_Receiver.received) == 1


@pytest.mark.parametrize("url", [
    "https://127.0.0.1/hook", "https://localhost/hook", "https://[::1]/hook",
    "https://10.1.2.3/hook", "https://169.254.169.254/latest", "http://93.184.216.34/hook",
    "not a url",
])
def test_private_or_plain_http_webhooks_are_refused(simulator_factory: Callable[..., Simulator],
                                                    relayd_factory: Callable[..., Relayd],
                                                    url: str) -> None:
    relayd = relayd_factory(simulator_factory(), allow_private=False).start()
    with relayd.client() as client:
        reply = client.post("/v1/batches", json={"model": "gpt-4o-mini", "requests": rows(1),
                                                 "webhookUrl": url})
        assert reply.status_code == 400
        assert reply.json()["error"]["param"] == "webhookUrl"
        assert client.get("/v1/batches?dialect=all").json()["data"] == []


def test_events_stream_a_running_job(simulator_factory: Callable[..., Simulator],
                                     relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory("--latency-ms", "20")).start()
    seen: list[tuple[str, dict]] = []
    with relayd.client() as client, client.stream("GET", "/v1/events") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        job = client.post("/v1/batches", json={"model": "gpt-4o-mini",
                                               "requests": rows(60)}).json()
        event = None
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event:
                seen.append((event, json.loads(line.removeprefix("data: "))))
                if event == "job.ended":
                    break
    assert seen[0] == ("stream.hello", {"workspace": "acme"})
    kinds = [kind for kind, data in seen if data.get("id") == job["id"]]
    # Subscribed before the submit, the stream tells of the job's creation. A job created
    # while the stream read its snapshot is in the snapshot too, just before.
    assert kinds[-1] == "job.ended"
    assert kinds[:1] == ["job.created"] or kinds[:2] == ["job.snapshot", "job.created"]
    assert "job.progress" in kinds
    ended = seen[-1][1]
    assert ended["completed"] == 60 and ended["relay_status"] == "completed"


def test_healthz_and_models_need_no_job(simulator_factory: Callable[..., Simulator],
                                        relayd_factory: Callable[..., Relayd]) -> None:
    relayd = relayd_factory(simulator_factory()).start()
    assert httpx.get(relayd.url + "/healthz").json() == {"status": "ok"}
    with relayd.client() as client:
        ids = [m["id"] for m in client.get("/v1/models").json()["data"]]
    assert ids == ["gpt-4o-mini", "backup"]
