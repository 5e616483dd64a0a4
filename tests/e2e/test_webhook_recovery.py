"""Webhooks survive restarts: a run that ended before a crash but whose webhook was not
sent yet sends it after the next start, once; a delivery cut off mid-flight is recorded,
never repeated."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

from daemon.config import load
from daemon.domain.jobs import COMPLETED, JobDraft, RowDraft
from daemon.store import open_store
from daemon.store.interface import Ending, Store
from daemon.testing import Simulator
from tests.e2e.harness import Relayd, wait_until

pytestmark = pytest.mark.e2e


class _Receiver(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        self.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _ended_job(repo: Store, workspace_id: int, job_id: str, url: str) -> int:
    now = time.time()
    job = repo.create_job(JobDraft(id=job_id, workspace_id=workspace_id, dialect="relay",
                                   name=job_id, model="gpt-4o-mini",
                                   endpoint="/v1/chat/completions", status="running",
                                   priority=0, created_at=now, webhook_url=url),
                          [RowDraft(custom_id="r-1", body={"messages": []}, error="x")])
    repo.end_job(job.seq, Ending(COMPLETED), now=now)  # queues the webhook
    return job.seq


def test_unsent_webhooks_go_out_once_after_a_restart(simulator_factory: Callable[..., Simulator],
                                                     relayd_factory: Callable[..., Relayd]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    relayd = relayd_factory(simulator_factory())
    key = relayd.key("acme")  # creates the store and the workspace
    repo = open_store(load(relayd.config).store_url)
    workspace = repo.workspace("acme")
    assert workspace is not None
    _ended_job(repo, workspace.id, "a" * 32, url)  # ended, webhook never claimed
    claimed = _ended_job(repo, workspace.id, "b" * 32, url)
    assert repo.claim_webhook(claimed, now=time.time())  # the crash came mid-delivery
    repo.close()
    try:
        relayd.start()
        wait_until(lambda: _Receiver.bodies)
        headers = {"Authorization": f"Bearer {key}"}
        unsent = wait_until(lambda: httpx.get(f"{relayd.url}/v1/batches/{'a' * 32}",
                                              headers=headers).json()["webhook"].get("status_code"))
        assert unsent == 200
        cut_off = httpx.get(f"{relayd.url}/v1/batches/{'b' * 32}", headers=headers).json()
        assert cut_off["webhook"]["status_code"] is None
        assert "interrupted" in cut_off["webhook"]["error"]
        relayd.terminate()
        relayd.start()  # a second restart sends nothing again:
        # its start sends what is unsent, and a graceful stop waits for every webhook
        # it sent (the notifier stops after the scheduler, its pool after all it took)
        assert relayd.terminate() < 10
        assert relayd.proc is not None and relayd.proc.returncode == 0
    finally:
        server.shutdown()
    assert [b["id"] for b in _Receiver.bodies] == ["a" * 32]
