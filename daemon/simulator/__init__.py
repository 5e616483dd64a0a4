"""A SIMULATED OpenAI-compatible (and Anthropic Messages) upstream: what
`relayd simulate` serves.

The demo, the end-to-end tests and the benchmarks run against this server
instead of a real provider. It answers chat, completion, embedding and model
requests in OpenAI's shapes, Responses API requests (`responses.py`) and moderations
(`moderations.py`: keyword cues, deterministic scores) in OpenAI's too, and
`POST /v1/messages` in Anthropic's (`messages.py`; each API's error envelope and
rate-limit headers in `apis.py`), with canned, deterministic content (a sentiment
label when asked to classify, else an echo that says it is simulated), and it injects
faults in two ways:

- **At random**, with per-request probabilities (`SimOptions.rate_*`) drawn
  from one seeded `random.Random`. Every generation request consumes exactly
  two draws, jitter then fault, in arrival order, so the same request sequence
  with the same seed meets the same faults. One draw picks at most one fault
  from consecutive bands 429 | 5xx | timeout | reset, so the rates must sum to
  at most 1. The 5xx fault is always 503.
- **By directive**: a `[sim:...]` token in the prompt pins that row's
  behaviour (see `parse_directive`). A prompt carrying any directive is never
  hit by a random fault, so tests stay deterministic under any rates.

Tool calling (OpenRelay's tool_config extension), simulated three ways:

- **The model** (`tools.py`): a chat (or messages, or responses) request with a
  non-empty `tools` array gets `[sim:tool_rounds=N]` rounds (default 1) of
  `[sim:tool_calls=K]` calls (default 1) of the first tool, with deterministic ids and
  schema-derived arguments (`finish_reason: "tool_calls"`), then a final answer
  quoting every tool message.
- **An HTTP tool executor** at `POST /_sim/tools` on the same port, with faults
  pinned by `[sim:tool_fail=CODE times=K]`, `[sim:tool_sleep=MS]`,
  `[sim:tool_garbage]`, `[sim:tool_mismatch]` in the calls' arguments.
- **An MCP server** (`mcp_server.py`, `--mcp-port`): the `mcp` SDK over Streamable
  HTTP at `/mcp` on a second port, same process and event loop. Imported only when
  asked for, so the plain simulator does not load the SDK.

OpenRelay's workflow records get a deterministic callback (`workflow.py`) at
`POST /_sim/workflow` on the same port: a map-reduce summariser (started → one
"Summarise: <chunk>" request per chunk → one "Reduce: ..." request → completed with
the summary), idempotent per event, with paths and faults pinned by `[sim:wf_fanout=K]`,
`[sim:wf_wait=MS]`, `[sim:wf_steps=N]`, `[sim:wf_fail]`, `[sim:wf_garbage]`,
`[sim:wf_http=CODE times=K]`, `[sim:wf_sleep=MS]`, `[sim:wf_stall=K]` in the input.

Every response carries `X-Relay-Simulated: true`. The `/_sim/*` routes let
tests see (and forget) what the server was asked: `/_sim/stats`,
`/_sim/requests`, `/_sim/tool_calls`, `/_sim/mcp_calls`, `/_sim/workflow_events`,
`POST /_sim/reset`.
"""

from daemon.simulator.app import LOG_LIMIT, SimState, build_app
from daemon.simulator.cli import main
from daemon.simulator.content import classify_sentiment, compose_reply, embed
from daemon.simulator.faults import (
    Directive,
    Draw,
    SimOptions,
    latency_s,
    parse_directive,
    plan,
    random_fault,
)
from daemon.simulator.tools import arguments_for, tool_call_id
from daemon.simulator.workflow import split_chunks

__all__ = [
    "LOG_LIMIT", "Directive", "Draw", "SimOptions", "SimState", "arguments_for", "build_app",
    "classify_sentiment", "compose_reply", "embed", "latency_s", "main", "parse_directive",
    "plan", "random_fault", "split_chunks", "tool_call_id",
]
