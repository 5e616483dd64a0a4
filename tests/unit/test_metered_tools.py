"""`relay_executor_calls_total`: every executor call counted by type and outcome, and a
failed MCP discovery (tools/list) counted as a failed call."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.domain.tool_config import ToolConfig
from daemon.executors.tool_loop import ToolCallFailed, ToolRequest, ToolResult
from daemon.metering import MeteredToolCaller, Meters

MCP = ToolConfig(url="http://tools/mcp", type="mcp")


class Flaky:
    """An executor that fails its first call and its first discovery."""

    def __init__(self) -> None:
        self.failures = {"call": 1, "tools": 1}

    def _maybe_fail(self, what: str) -> None:
        if self.failures[what]:
            self.failures[what] -= 1
            raise ToolCallFailed(f"{what}: no answer", transient=True)

    async def call(self, config: ToolConfig, request: ToolRequest) -> list[ToolResult]:
        self._maybe_fail("call")
        return [ToolResult(c["id"], "ok") for c in request.tool_calls]

    async def tools(self, config: ToolConfig, *, job_seq: int) -> list[dict[str, Any]] | None:
        self._maybe_fail("tools")
        return [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]

    async def release(self, job_seq: int) -> None:
        return None


def count(meters: Meters, outcome: str) -> float | None:
    return meters.registry.get_sample_value("relay_executor_calls_total",
                                            {"type": "mcp", "outcome": outcome})


async def test_calls_and_failed_discoveries_are_counted() -> None:
    meters = Meters()
    metered = MeteredToolCaller(Flaky(), meters)
    request = ToolRequest(job_seq=1, batch_id="b", custom_id="r", round=1, call_id="k",
                          tool_calls=({"id": "c1"},))
    with pytest.raises(ToolCallFailed):
        await metered.call(MCP, request)
    with pytest.raises(ToolCallFailed):
        await metered.tools(MCP, job_seq=1)
    await metered.call(MCP, request)
    await metered.tools(MCP, job_seq=1)  # a discovery that answers (often from a cache)

    assert (count(meters, "failed"), count(meters, "ok")) == (2, 1)
