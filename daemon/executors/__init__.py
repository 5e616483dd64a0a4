"""Row executors: what running one row means. A worker asks `Executors.for_row` which
executor a row needs and awaits its `run(work)` on the I/O loop; every executor returns
a `RowOutcome`, however many model calls (turns) the row took.

- `ChatExecutor`: one request through the router (retries, backoff, fallbacks).
- `ToolLoopExecutor`: a record with `openrelay.tool_config`: the model and the user's
  tool executor in turns (`tool_loop.py`), over HTTP (`http_tools.py`) or MCP
  (`mcp_tools.py`).

`stopping` tells a row of several calls that its job is being cancelled or expired:
it ends between two calls rather than start another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from daemon.domain.jobs import RowWork
from daemon.domain.outcome import RowOutcome
from daemon.domain.tool_config import raw_tool_config
from daemon.executors.chat import ChatExecutor

__all__ = ["ChatExecutor", "Executors", "RowExecutor"]


class RowExecutor(Protocol):
    async def run(self, work: RowWork, *, stopping: Callable[[], bool]) -> RowOutcome:
        """Run one row to its end: an ok outcome, or a failure that says why."""
        ...


class Releasing(RowExecutor, Protocol):
    async def release(self, job_seq: int) -> None:
        """The job has ended here: drop what was kept for it (sessions, caches)."""
        ...


class Executors:
    """Chooses the executor for each row."""

    def __init__(self, *, chat: RowExecutor, tools: Releasing | None = None) -> None:
        self.chat = chat
        self.tools = tools

    def for_row(self, work: RowWork) -> RowExecutor:
        if self.tools is not None and raw_tool_config(work.body) is not None:
            return self.tools
        return self.chat

    async def release(self, job_seq: int) -> None:
        if self.tools is not None:
            await self.tools.release(job_seq)
