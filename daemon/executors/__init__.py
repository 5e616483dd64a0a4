"""Row executors: what running one row means. A worker asks `Executors.for_row` which
executor a row needs and awaits its `run(work)` on the I/O loop; every executor returns
a `RowOutcome`, however many model calls (turns) the row took.

- `ChatExecutor`: one request through the router (retries, backoff, fallbacks).
- `ToolLoopExecutor`: a record with `openrelay.tool_config`: the model and the user's
  tool executor in turns (`tool_loop.py`), over HTTP (`http_tools.py`) or MCP
  (`mcp_tools.py`).
- `WorkflowExecutor`: a record with `openrelay.workflow`: steps of requests that the
  user's callback asks for (`workflow.py`).
- `ValidatedExecutor`: a record whose answer must be JSON or meet a JSON Schema
  (`response_format`, `text.format`, `openrelay.validation`): the check, and the repair
  calls that ask the model again (`validated.py`).

Every executor runs its row in its job's `Lane`: the job's `batch_concurrency` slots,
which every upstream request takes while it is on the wire (so the setting counts
requests in flight, whatever the rows are doing between them), and whether the job
is being stopped (cancel, expiry): a row of several calls then ends between two, and
a workflow at once.
"""

from __future__ import annotations

from typing import Protocol

from daemon.domain.jobs import CHECKED_ROW, TOOL_ROW, WORKFLOW_ROW, RowWork
from daemon.domain.outcome import RowOutcome
from daemon.executors.chat import ChatExecutor
from daemon.executors.lane import Lane

__all__ = ["ChatExecutor", "Executors", "Lane", "RowExecutor"]


class RowExecutor(Protocol):
    async def run(self, work: RowWork, lane: Lane) -> RowOutcome:
        """Run one row to its end: an ok outcome, or a failure that says why."""
        ...


class Releasing(RowExecutor, Protocol):
    async def release(self, job_seq: int) -> None:
        """The job has ended here: drop what was kept for it (sessions, caches)."""
        ...


class Executors:
    """Chooses the executor for each row."""

    def __init__(self, *, chat: RowExecutor, tools: Releasing | None = None,
                 workflows: Releasing | None = None,
                 checked: RowExecutor | None = None) -> None:
        self.chat = chat
        self.tools = tools
        self.workflows = workflows
        self.checked = checked

    def for_row(self, work: RowWork) -> RowExecutor:
        if self.workflows is not None and work.kind == WORKFLOW_ROW:
            return self.workflows
        if self.tools is not None and work.kind == TOOL_ROW:
            return self.tools
        if self.checked is not None and work.kind == CHECKED_ROW:
            return self.checked
        return self.chat

    async def release(self, job_seq: int) -> None:
        for executor in (self.tools, self.workflows):
            if executor is not None:
                await executor.release(job_seq)
