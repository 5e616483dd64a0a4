"""The numbers an upstream reports, checked before Relay adds or stores them.

An upstream's `usage` is untrusted input: a count past 64 bits cannot be stored (SQLite
raises `OverflowError`, PostgreSQL `bigint out of range`), a negative one bills the
job backwards. `read_usage` is the one reader of an answer's usage, for every path
that calls a model (plain rows of every endpoint, tool-loop turns, workflow requests:
all go through the router); `read_message_usage` and `read_response_usage` are its
twins for an Anthropic `Message` and an OpenAI `Response`, under the same rules
(`no_usage`: a moderation answer, which reports none). `row_problem` checks what a row of
several calls adds up to once priced. A row that breaks either rule fails `invalid_response`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from daemon.domain.errors import clipped
from daemon.domain.outcome import RowOutcome, Usage

MAX_CALL_TOKENS = 10**9  # any one count of one call; no model takes or writes this many
MAX_STORED = 2**63 - 1  # the largest a 64-bit column holds: a row's cost and counts
INVALID = "invalid_response"

# (group, name): the counts Relay reads; a group is one of usage's `*_details` objects.
COUNTS = ((None, "prompt_tokens"), (None, "completion_tokens"), (None, "total_tokens"),
          ("prompt_tokens_details", "cached_tokens"),
          ("completion_tokens_details", "reasoning_tokens"))
_SHOWN = 64  # characters of a bad value quoted in the row's error


class InvalidUsage(ValueError):
    """An answer's usage that breaks the rules; the message says which count and why."""


def read_usage(response: Mapping[str, Any]) -> Usage:
    """The tokens one call's answer reports. Each count, where present, must be a JSON
    integer from 0 to `MAX_CALL_TOKENS`; absent or null counts 0 (so does a missing
    `usage`). Anything else raises `InvalidUsage`."""
    counts = _counts(response, COUNTS)
    return Usage(counts["prompt_tokens"], counts["completion_tokens"],
                 cached_tokens=counts["cached_tokens"],
                 reasoning_tokens=counts["reasoning_tokens"])


# An Anthropic `Message`'s usage: its input is split three ways (not cached, written to
# the cache, read from it), which Relay adds up as the prompt.
MESSAGE_COUNTS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                  "output_tokens")


def read_message_usage(response: Mapping[str, Any]) -> Usage:
    """The tokens an Anthropic Messages answer reports, under `read_usage`'s rules:
    `prompt_tokens` is every input count summed, `cached_tokens` the ones read from
    the cache."""
    usage = _object(response, "usage")
    counts = {name: _count(usage, name, "usage.") for name in MESSAGE_COUNTS}
    return Usage(counts["input_tokens"] + counts["cache_creation_input_tokens"]
                 + counts["cache_read_input_tokens"], counts["output_tokens"],
                 cached_tokens=counts["cache_read_input_tokens"])


# An OpenAI `Response`'s usage: the same counts as chat's, under the Responses API's names.
RESPONSE_COUNTS = ((None, "input_tokens"), (None, "output_tokens"), (None, "total_tokens"),
                   ("input_tokens_details", "cached_tokens"),
                   ("output_tokens_details", "reasoning_tokens"))


def read_response_usage(response: Mapping[str, Any]) -> Usage:
    """The tokens a Responses API answer reports, under `read_usage`'s rules."""
    counts = _counts(response, RESPONSE_COUNTS)
    return Usage(counts["input_tokens"], counts["output_tokens"],
                 cached_tokens=counts["cached_tokens"],
                 reasoning_tokens=counts["reasoning_tokens"])


def no_usage(response: Mapping[str, Any]) -> Usage:
    """An answer that reports no tokens (a moderation): nothing to bill."""
    del response
    return Usage()


def row_problem(usage: Usage, cost_nano_usd: int) -> str | None:
    """Why a row's totals (every call summed, then priced) cannot be stored, or None.
    Each call is within bounds, but a row of many calls at a high price may not be."""
    if cost_nano_usd > MAX_STORED:
        return f"its cost, {cost_nano_usd} nano-USD, is more than {MAX_STORED}"
    for name in ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens"):
        if getattr(usage, name) > MAX_STORED:
            return f"its {name}, {getattr(usage, name)}, is more than {MAX_STORED}"
    return None


def priced(outcome: RowOutcome, cost_nano_usd: int) -> RowOutcome:
    """The outcome with its cost; one whose totals cannot be stored (`row_problem`)
    fails `invalid_response` instead, unbilled, its answer kept as its error body."""
    problem = row_problem(outcome.usage, cost_nano_usd)
    if problem is None:  # most rows of an unpriced model: as they came (no copy a row)
        return (outcome if outcome.cost_nano_usd == cost_nano_usd
                else replace(outcome, cost_nano_usd=cost_nano_usd))
    return replace(outcome, ok=False, error=f"{INVALID}: the row's usage, summed over its "
                   f"{len(outcome.model_calls)} model calls, cannot be stored: {problem}",
                   error_code=INVALID, dead_letter=False,
                   error_body=outcome.response if outcome.ok else outcome.error_body,
                   response=None, response_text=None, usage=Usage(), cost_nano_usd=0)


def _counts(response: Mapping[str, Any],
            names: tuple[tuple[str | None, str], ...]) -> dict[str, int]:
    """Each `(group, name)` count of the answer's `usage`, checked. (Read for every
    model call: where a bad value sits is spelled out only when there is one.)"""
    usage = _object(response, "usage")
    counts: dict[str, int] = {}
    for group, name in names:
        counts[name] = _count(usage if group is None else _object(usage, group, "usage."),
                              name, "usage." if group is None else f"usage.{group}.")
    return counts


def _object(parent: Mapping[str, Any], key: str, prefix: str = "") -> Mapping[str, Any]:
    """`parent[key]`, an object (or absent); `prefix` + `key` says where, in an error."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidUsage(f"{prefix}{key} = {_shown(value)}, not an object")
    return value


def _count(parent: Mapping[str, Any], key: str, prefix: str) -> int:
    """`parent[key]`, a count (absent or null: 0); `prefix` + `key` says where, in an
    error."""
    value = parent.get(key)
    if value is None:
        return 0
    if type(value) is not int or not 0 <= value <= MAX_CALL_TOKENS:  # a bool is no count
        raise InvalidUsage(f"{prefix}{key} = {_shown(value)}, not an integer from 0 to "
                           f"{MAX_CALL_TOKENS}")
    return value


def _shown(value: object) -> str:
    """The value as JSON, cut short: it is quoted in an error message."""
    return clipped(json.dumps(value), most=_SHOWN)
