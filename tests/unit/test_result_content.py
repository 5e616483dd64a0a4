"""What Relay's `/results` view shows of a row's answer (`assistant_content`): a chat
message's content, a completion's text, an embedding's vector, a Response's output
text, a moderation's results."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.dialects.relay.render import assistant_content

VERDICT = {"flagged": True, "categories": {"violence": True}}


def response(*items: dict[str, Any]) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": "completed", "output": list(items)}


def message(*texts: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": t, "annotations": []} for t in texts]}


CALL = {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"}
REASONING = {"type": "reasoning", "id": "rs_1", "summary": []}


@pytest.mark.parametrize(("answer", "shown"), [
    ({"choices": [{"message": {"role": "assistant", "content": "hi"}}]}, "hi"),
    ({"choices": [{"text": "done"}]}, "done"),
    ({"data": [{"embedding": [0.5]}]}, [0.5]),
    (response(message("Hello, ", "world.")), "Hello, world."),
    (response(REASONING, message("after thinking")), "after thinking"),
    (response(message("one"), {**message("two"), "content": [
        {"type": "refusal", "refusal": "no"}, {"type": "output_text", "text": "two"}]}),
     "onetwo"),
    (response(CALL), None),  # only a function call: no text
    (response(), None),
    ({**response(message("x")), "output": "garbage"}, None),
    ({"id": "modr-1", "model": "omni-moderation-latest", "results": [VERDICT]}, [VERDICT]),
    (None, None),
    ({"unexpected": True}, None),
])
def test_the_content_shown_for_each_kind_of_answer(answer: Any, shown: Any) -> None:
    assert assistant_content(answer) == shown
