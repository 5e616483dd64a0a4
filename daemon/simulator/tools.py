"""Tool calling, simulated: the model's deterministic tool calls and final answers, and
what the HTTP tool executor (`POST /_sim/tools`) answers. Pure: no I/O.

The model: a chat request with a non-empty `tools` array is answered with
`[sim:tool_rounds=N]` rounds of tool calls (default 1; N comes from the first user
message), each round `[sim:tool_calls=K]` parallel calls of the first tool (default 1; their
arguments cut short, not valid JSON, with `[sim:tool_bad_args]`),
then a final answer that quotes every tool message's content in order.

The executor: `{"custom_id", "context", "tool_calls": [...]}` in, `{"results": [...]}`
out, one result per call in call order; `[sim:tool_*]` directives found in the calls'
arguments pin faults, and `[sim:tool_content=KB]` pads each result's content to that
many KB (a transcript that grows by that much a call).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from daemon.simulator.faults import Directive, parse_directive

FINAL_PREFIX = "Tool results: "


@dataclass(frozen=True)
class ToolContext:
    """What one chat request says about tool calling."""

    tools: tuple[dict[str, Any], ...]  # the `function` objects of the offered tools
    prompt: str  # the first user message: arguments and directives come from it
    directive: Directive | None  # parsed from `prompt`
    rounds_done: int  # assistant messages that carry tool_calls
    results: tuple[str, ...]  # every tool message's content, in order
    forced: str | None = None  # tool_choice naming one function
    choice_none: bool = False  # tool_choice "none"
    parallel: bool = True  # parallel_tool_calls (false: one call per turn)

    @property
    def rounds(self) -> int:
        """How many rounds of tool calls come before the final answer."""
        d = self.directive
        return 1 if d is None or d.tool_rounds is None else d.tool_rounds

    @property
    def calls_per_round(self) -> int:
        d = self.directive
        count = 1 if d is None or d.tool_calls is None else d.tool_calls
        return count if self.parallel else 1


@dataclass(frozen=True)
class ToolTurn:
    """The next assistant turn when it calls tools: `count` parallel calls of `name`, in
    either API's shape (`openai_tool_calls` here, `tool_use` blocks in messages.py)."""

    name: str
    arguments: dict[str, Any]
    prompt: str
    round: int  # 1-based
    count: int
    bad_args: bool  # [sim:tool_bad_args]: arguments that are no valid call

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)

    @property
    def texts(self) -> list[str]:
        """What each call counts as in usage: its name and arguments."""
        return [f"{self.name} {self.arguments_json}"] * self.count

    def call_ids(self, prefix: str = "call_") -> list[str]:
        return [tool_call_id(self.prompt, self.round, i, prefix=prefix)
                for i in range(self.count)]


def tool_call_id(prompt: str, round_: int, index: int, *, prefix: str = "call_") -> str:
    """`call_` (or `prefix`) and 16 hex digits of a hash of the prompt, round (1-based)
    and index."""
    digest = hashlib.sha256(f"{prompt}\x00{round_}\x00{index}".encode()).hexdigest()
    return f"{prefix}{digest[:16]}"


def next_turn(ctx: ToolContext) -> ToolTurn | None:
    """The tool calls of the next assistant turn, or None when it is the final answer."""
    if not ctx.tools or ctx.choice_none or ctx.rounds_done >= ctx.rounds:
        return None
    tool = next((t for t in ctx.tools if t["name"] == ctx.forced), ctx.tools[0])
    round_ = ctx.rounds_done + 1
    bad = ctx.directive is not None and ctx.directive.tool_bad_args
    return ToolTurn(name=tool["name"], prompt=ctx.prompt, round=round_,
                    arguments=arguments_for(tool.get("parameters"), ctx.prompt, round_),
                    count=ctx.calls_per_round, bad_args=bad)


def openai_tool_calls(turn: ToolTurn) -> list[dict[str, Any]]:
    """OpenAI's `tool_calls`; bad arguments are cut short, as a model that ran out of
    tokens writes them."""
    arguments = turn.arguments_json[:-1] if turn.bad_args else turn.arguments_json
    return [{"id": call_id, "type": "function",
             "function": {"name": turn.name, "arguments": arguments}}
            for call_id in turn.call_ids()]


def arguments_for(parameters: Any, prompt: str, round_: int) -> dict[str, Any]:
    """Arguments that fit a JSON schema's `properties`: a string gets the prompt, an
    integer or number the round, a boolean true (an `enum` its first value); without
    properties, `{"input": prompt}`."""
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    if not isinstance(properties, dict) or not properties:
        return {"input": prompt}
    return {name: _value_for(schema, prompt, round_) for name, schema in properties.items()}


def _value_for(schema: Any, prompt: str, round_: int) -> Any:
    if not isinstance(schema, dict):
        return prompt
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = schema.get("type")
    if isinstance(kind, list):  # ["integer", "null"]: the first that is not null
        kind = next((k for k in kind if k != "null"), None)
    values: dict[Any, Any] = {"integer": round_, "number": round_, "boolean": True,
                              "array": [], "object": {}, "null": None}
    return values.get(kind, prompt)


def final_answer(results: tuple[str, ...]) -> str:
    return FINAL_PREFIX + " | ".join(results)


# --- the HTTP tool executor ---------------------------------------------------------


@dataclass(frozen=True)
class ExecutorCall:
    """One entry of the executor request's `tool_calls`."""

    id: str
    name: str
    arguments: str  # as sent: a JSON string, normally


def read_executor_request(body: Any) -> list[ExecutorCall]:
    """The calls of one executor request; ValueError if it breaks the contract."""
    if not isinstance(body, dict):
        raise ValueError("The request body must be a JSON object.")
    calls = body.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        raise ValueError("'tool_calls' must be a non-empty array.")
    return [_executor_call(i, call) for i, call in enumerate(calls)]


def _executor_call(i: int, call: Any) -> ExecutorCall:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not call["id"]:
        raise ValueError(f"tool_calls[{i}] needs a string 'id'.")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ValueError(f"tool_calls[{i}] needs 'function' with a string 'name'.")
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return ExecutorCall(call["id"], function["name"], arguments)


def executor_directive(calls: list[ExecutorCall]) -> Directive | None:
    """The `[sim:...]` directives found anywhere in the calls' arguments (ValueError if
    one is malformed)."""
    return parse_directive(" ".join(call.arguments for call in calls))


def executor_content(call: ExecutorCall, round_: str, *, size: int | None = None) -> str:
    """`name(arguments) = ok#ROUND (id)`: the id tells parallel calls apart; with `size`,
    padded with dots to that many characters."""
    content = f"{call.name}({call.arguments}) = ok#{round_} ({call.id})"
    return content if size is None else content + "." * (size - len(content))


def executor_results(calls: list[ExecutorCall], round_: str, *, mismatch: bool = False,
                     content_kb: int | None = None) -> list[dict[str, str]]:
    """One result per call, in call order; `mismatch` answers ids that were not asked;
    `content_kb` makes each content that many KB."""
    size = None if content_kb is None else content_kb * 1024
    return [{"tool_call_id": f"mismatch_{call.id}" if mismatch else call.id,
             "content": executor_content(call, round_, size=size)} for call in calls]
