"""The draft Anthropic fixture (tests/dialects/fixtures/anthropic.py) reads the shapes of
Anthropic's API reference, so it is ready when the dialect lands. Remove this file once
the fixture is registered: the contract suite then drives it against the real app."""

from __future__ import annotations

from typing import Any

from tests.dialects.fixtures.anthropic import FIXTURE
from tests.dialects.interface import Counts, Line, Phase

ID = "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF"


def batch(status: str, *, cancelled: bool = False, **counts: int) -> dict[str, Any]:
    stamp = "2024-08-20T18:37:24.100435Z"
    return {"id": ID, "type": "message_batch", "processing_status": status,
            "request_counts": {"processing": 0, "succeeded": 0, "errored": 0,
                               "canceled": 0, "expired": 0, **counts},
            "created_at": stamp, "ended_at": stamp if status == "ended" else None,
            "expires_at": stamp, "archived_at": None,
            "cancel_initiated_at": stamp if cancelled else None,
            "results_url": (f"https://relay.example/v1/messages/batches/{ID}/results"
                            if status == "ended" else None)}


def test_a_batch_reads_as_its_phase_and_counts() -> None:
    assert FIXTURE.phase(batch("in_progress", processing=2)) == Phase.OPEN
    assert FIXTURE.phase(batch("canceling", cancelled=True)) == Phase.CANCELLING
    assert FIXTURE.phase(batch("ended", cancelled=True, canceled=1)) == Phase.CANCELLED
    assert FIXTURE.phase(batch("ended", expired=1)) == Phase.EXPIRED
    done = batch("ended", succeeded=1, errored=1, canceled=1)
    assert (FIXTURE.phase(done), FIXTURE.counts(done)) == (Phase.COMPLETED, Counts(3, 1, 2))
    assert [c.path for c in FIXTURE.results(done)] == [f"/v1/messages/batches/{ID}/results"]


def test_result_lines_and_errors_read_in_anthropics_shapes() -> None:
    lines = FIXTURE.result_lines(
        b'{"custom_id": "row-1", "result": {"type": "succeeded", "message": {"content": '
        b'[{"type": "text", "text": "re: fine"}]}}}\n'
        b'{"custom_id": "row-2", "result": {"type": "errored", "error": {"type": "error", '
        b'"error": {"type": "invalid_request_error", "message": "no"}}}}\n')
    assert [FIXTURE.read_line(line) for line in lines] == [
        Line("row-1", True, "re: fine"), Line("row-2", False, None)]
    error = FIXTURE.error({"type": "error", "error": {
        "type": "not_found_error", "message": f"No batch {ID}."}})
    assert (error.type, error.names(ID)) == ("not_found_error", True)
    assert FIXTURE.auth(None) == {"anthropic-version": "2023-06-01"}
