"""A micro-bench unit, in process (no daemon): what checking one answer against its JSON
Schema costs (`daemon/domain/output_check.py`: the answer's text read from the chat
completion, parsed, validated with the schema's compiled validator), next to the model
call it follows. Nine answers in ten are valid, one breaks two rules (the errors are
collected and sorted, as a repair message needs)."""

from __future__ import annotations

import json
import time
from typing import Any

from bench.harness import LATENCY_MS, Bench
from bench.report import Figure, at_most
from daemon.domain.output_check import answer_text, output_check, problems

ANSWERS = 5_000  # answers checked per run
SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "required": ["label", "score", "product", "tags"],
    "properties": {"label": {"enum": ["positive", "negative", "neutral"]},
                   "score": {"type": "integer", "minimum": 0, "maximum": 10},
                   "product": {"type": "string", "maxLength": 200},
                   "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8}}}


def figures() -> list[Figure]:
    return [Figure("validation_us_per_row", "validation",
                   "checking one answer against its JSON Schema", "µs", at_most(1000)),
            Figure("validation_share_of_call", "validation",
                   f"the check ÷ one {LATENCY_MS:g} ms model call", "%")]


def _completion(i: int) -> dict[str, Any]:
    valid = {"label": "positive", "score": i % 10, "product": f"kettle {i}",
             "tags": ["kitchen", "fast"]}
    wrong = {"label": "meh", "score": 42, "product": f"kettle {i}", "tags": []}
    content = json.dumps(wrong if i % 10 == 9 else valid)
    return {"id": f"c{i}", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content},
         "finish_reason": "stop"}]}


def validation(b: Bench) -> None:
    check = output_check({"response_format": {"type": "json_schema", "json_schema": {
        "name": "review", "schema": SCHEMA}}})
    assert check is not None
    answers = [_completion(i) for i in range(ANSWERS)]
    for run in range(b.runs["validation"]):
        started = time.perf_counter()
        invalid = sum(1 for a in answers
                      if problems(check, answer_text("/v1/chat/completions", a)))
        per_row_us = (time.perf_counter() - started) / ANSWERS * 1e6
        b.figures["validation_us_per_row"].add(per_row_us)
        b.figures["validation_share_of_call"].add(per_row_us / (LATENCY_MS * 1000) * 100)
        b.say(f"[validation] run {run + 1}: {ANSWERS} answers ({invalid} invalid), "
              f"{per_row_us:.1f} µs each")
