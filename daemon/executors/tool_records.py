"""The shapes a tool-calling record comes in, and the chat shape its loop runs in.

The tool loop (`tool_loop.py`) speaks chat completions: its turns are chat messages,
stored as such, and each model call goes through the router as a chat row (which
reaches an Anthropic model translated, like any chat row). A chat record is that
already. A Responses record (`endpoint: /v1/responses`) is translated to chat once, at
the start (`responses_to_chat.chat_body`: what chat cannot say fails the record
before any call), and its final answer becomes a `Response` whose `output` holds each
round's `function_call` and `function_call_output` items, then the last turn's. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from daemon.domain.jobs import RowWork
from daemon.domain.outcome import Turn, Usage
from daemon.upstream.protocols import CHAT, RESPONSES
from daemon.upstream.responses_to_chat import (
    chat_body,
    response_answer,
    responses_tool,
)


class LoopRecord(Protocol):
    @property
    def endpoint(self) -> str:
        """The endpoint each model call goes out as."""
        ...

    @property
    def chat(self) -> Mapping[str, Any]:
        """The chat request the loop's turns build on."""
        ...

    def answer(self, final: Mapping[str, Any], *, rounds: Sequence[Turn],
               tools: Sequence[Mapping[str, Any]], usage: Usage, now: float) -> dict[str, Any]:
        """The stored answer, from the last chat completion and the rounds before it;
        `tools` are the chat tools the model was offered. Raises `BadAnswer`."""
        ...


@dataclass(frozen=True)
class ChatRecord:
    endpoint: str
    chat: Mapping[str, Any]

    def answer(self, final: Mapping[str, Any], *, rounds: Sequence[Turn],
               tools: Sequence[Mapping[str, Any]], usage: Usage, now: float) -> dict[str, Any]:
        """The last completion, its usage every call's."""
        return {**final, "usage": {"prompt_tokens": usage.prompt_tokens,
                                   "completion_tokens": usage.completion_tokens,
                                   "total_tokens": usage.prompt_tokens + usage.completion_tokens}}


@dataclass(frozen=True)
class ResponsesRecord:
    body: Mapping[str, Any]  # the record's Responses request
    chat: Mapping[str, Any]
    endpoint: str = CHAT  # every model call of its loop is a chat row

    def answer(self, final: Mapping[str, Any], *, rounds: Sequence[Turn],
               tools: Sequence[Mapping[str, Any]], usage: Usage, now: float) -> dict[str, Any]:
        """A `Response`: the rounds' items first; it lists the tools the executor offered
        when the record named none."""
        asked = self.body if self.body.get("tools") or not tools else {
            **self.body, "tools": [responses_tool(t) for t in tools]}
        earlier = [m for turn in rounds for m in turn.messages]
        return response_answer(final, usage=usage, sent=self.chat, asked=asked, now=now,
                               earlier=earlier)


def loop_record(work: RowWork) -> LoopRecord:
    """The record in the loop's shape; raises `Untranslatable` (a Responses request that
    chat cannot carry)."""
    if work.endpoint == RESPONSES:
        return ResponsesRecord(work.body, chat_body(work.body))
    return ChatRecord(work.endpoint, work.body)
