"""A batch validating on a node that is lost is validated by another: the validator's
tick takes the batches no live node holds, and leaves a live node's alone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from daemon.domain.cluster import NodeRecord
from daemon.domain.jobs import RowDraft
from daemon.domain.openai_input import CHUNK_ROWS
from tests.actors.harness import actor_state
from tests.api.conftest import PRIMARY, Relay, openai_batch


class Idle:
    """A validator that hears of the new batch and does nothing: as if the node that
    took it had died at once. (Alive, as the API checks, by the real one's ref.)"""

    def __init__(self, real: Any) -> None:
        self.actor_ref = real.actor_ref

    def validate(self, seq: int) -> None:
        pass


async def unvalidated(relay: Relay, monkeypatch: pytest.MonkeyPatch, *,
                      claimed_by: NodeRecord) -> dict[str, Any]:
    """A new batch claimed by `claimed_by`, which never validates it. The daemon's own
    ticker is stopped first, and a tick it had sent is read (the validator answers
    after it): its tick takes the batches no live node holds, so it would take this one
    before the test gave it to `claimed_by`. The tests tick the validator themselves."""
    await asyncio.to_thread(relay.daemon.ticker.stop)
    assert not relay.daemon.ticker.thread.is_alive()
    await asyncio.to_thread(lambda: actor_state(relay.daemon.validator).watch.get(timeout=5))
    monkeypatch.setattr(relay.services, "validator", Idle(relay.services.validator))
    job = await relay.submit(openai_batch("a", "b"))
    assert job["status"] == "validating"
    repo = relay.services.repo
    await asyncio.to_thread(repo.register_node, claimed_by)
    seq = (await asyncio.to_thread(repo.get_job, job["id"])).seq  # type: ignore[union-attr]
    assert await asyncio.to_thread(repo.claim_validation, seq, node=claimed_by.id,
                                   alive_after=claimed_by.heartbeat_at - 1)
    return job


def node(node_id: str, beat: float) -> NodeRecord:
    return NodeRecord(id=node_id, address=f"http://{node_id}:8080", version="0.1.0",
                      started_at=beat, heartbeat_at=beat)


async def tick_validator(relay: Relay, now: float) -> None:
    await asyncio.to_thread(lambda: relay.daemon.validator.tick(now).get(timeout=5))


async def test_a_lost_nodes_batch_is_validated_here(relay: Relay,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    lost = node("lost-1", relay.clock() - 60)  # silent past lease_s
    job = await unvalidated(relay, monkeypatch, claimed_by=lost)
    await tick_validator(relay, relay.clock() + 10)
    done = await relay.wait_status(job["id"], "completed")
    assert done["request_counts"] == {"total": 2, "completed": 2, "failed": 0}


async def test_a_live_nodes_batch_is_left_to_it(relay: Relay,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    live = node("live-1", relay.clock() + 10)
    job = await unvalidated(relay, monkeypatch, claimed_by=live)
    await tick_validator(relay, relay.clock() + 10)
    assert (await relay.job(job["id"]))["status"] == "validating"


async def test_rows_a_lost_node_staged_are_replaced_not_doubled(
        relay: Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    lost = node("lost-2", relay.clock() - 60)
    job = await unvalidated(relay, monkeypatch, claimed_by=lost)
    repo = relay.services.repo
    seq = (await asyncio.to_thread(repo.get_job, job["id"])).seq  # type: ignore[union-attr]
    cut_short = [RowDraft(custom_id="o-1", body={"model": PRIMARY, "messages": []}),
                 RowDraft(custom_id="stray", body={"model": PRIMARY, "messages": []})]
    assert await asyncio.to_thread(lambda: repo.stage_rows(
        seq, cut_short, after=0, node=lost.id, now=relay.clock()))
    await tick_validator(relay, relay.clock() + 10)
    done = await relay.wait_status(job["id"], "completed")
    assert done["request_counts"] == {"total": 2, "completed": 2, "failed": 0}
    assert await asyncio.to_thread(repo.row_counts, seq) == {
        "completed": 2, "failed": 0, "dead_letter": 0, "pending": 0}


async def test_a_file_refused_after_its_first_chunks_leaves_no_rows(relay: Relay) -> None:
    body = openai_batch(*(f"prompt {i}" for i in range(CHUNK_ROWS * 2 + 10)))
    body["requests"][-1]["url"] = "/v1/embeddings"  # a file-level error on the last line
    job = await relay.submit(body)
    failed = await relay.wait_status(job["id"], "failed")
    assert [e["code"] for e in failed["errors"]["data"]] == ["url_mismatch"]
    seq = (await asyncio.to_thread(relay.services.repo.get_job, job["id"])).seq  # type: ignore[union-attr]
    assert await asyncio.to_thread(relay.services.repo.row_counts, seq) == {
        "completed": 0, "failed": 0, "dead_letter": 0, "pending": 0}


async def test_a_batch_cancelled_while_it_validates_keeps_none_of_its_rows(
        relay: Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    live = node("live-2", relay.clock() + 10)  # validating it, and alive: left to it
    job = await unvalidated(relay, monkeypatch, claimed_by=live)
    repo = relay.services.repo
    seq = (await asyncio.to_thread(repo.get_job, job["id"])).seq  # type: ignore[union-attr]
    staged = [RowDraft(custom_id="o-1", body={"model": PRIMARY, "messages": []}),
              RowDraft(custom_id="o-2", body={}, error="no model", error_code="invalid_body")]
    assert await asyncio.to_thread(lambda: repo.stage_rows(
        seq, staged, after=0, node=live.id, now=relay.clock()))
    assert await asyncio.to_thread(repo.finished_rows, seq, after_seq=0, limit=10) == []
    await relay.ok("POST", f"/v1/batches/{job['id']}/cancel")
    done = await relay.wait_status(job["id"], "cancelled")
    assert (done["error_file_id"], done["output_file_id"]) == (None, None)
    assert done["request_counts"] == {"total": 0, "completed": 0, "failed": 0}
    assert await asyncio.to_thread(repo.row_counts, seq) == {
        "completed": 0, "failed": 0, "dead_letter": 0, "pending": 0}
