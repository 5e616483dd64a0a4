"""What a record's body must hold for the endpoints whose bodies Relay checks at
validation: a Responses API request (`/v1/responses`) and a moderation (`/v1/moderations`).

A batch is a set of independent requests, each answered into the output file: nothing
the server keeps between requests is there to refer to. So the Responses parameters that
lean on server-side state fail the record (`previous_response_id`, `conversation`, an
`item_reference` input item), as does `background` (a batch is already in the
background). `store` is ignored: the body goes on as it is, and the Response it
answers lives in the output file (Relay serves no `GET /v1/responses/{id}`).

Each check returns `(code, message, path)` for the first problem, or None.
"""

from __future__ import annotations

from typing import Any

Problem = tuple[str, str, str]

_STATEFUL = (
    ("previous_response_id", "previous_response_unsupported",
     "'previous_response_id' refers to a stored response; a batch keeps no conversation "
     "state: send the whole conversation as 'input'."),
    ("conversation", "conversation_unsupported",
     "'conversation' refers to a stored conversation; a batch keeps no conversation "
     "state: send the whole conversation as 'input'."),
)


def responses_problem(body: dict[str, Any]) -> Problem | None:
    """A Responses body: `input` a string or a non-empty list of input items (objects),
    none of them an `item_reference`; nothing that needs server-side state."""
    for key, code, message in _STATEFUL:
        if body.get(key) is not None:
            return code, message, key
    if body.get("background") is True:
        return ("background_unsupported", "'background': true is for online requests; a "
                "batch record always runs in the background.", "background")
    return _responses_input(body.get("input"))


def _responses_input(value: Any) -> Problem | None:
    if isinstance(value, str):
        return None
    if not isinstance(value, list) or not value:
        return ("invalid_body", "A /v1/responses body needs 'input': a string or a "
                "non-empty list of input items.", "input")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            return "invalid_body", f"input[{index}] must be an object.", f"input.{index}"
        if item.get("type") == "item_reference":
            return ("item_reference_unsupported", f"input[{index}] is an item_reference "
                    "to a stored item; a batch keeps no conversation state: send the item "
                    "itself.", f"input.{index}")
    return None


MULTIMODAL = frozenset({"text", "image_url"})


def moderation_problem(body: dict[str, Any]) -> Problem | None:
    """A moderation body: `input` a string, a non-empty list of strings, or a non-empty
    list of multimodal items (`{"type": "text", "text"}`, `{"type": "image_url",
    "image_url": {"url"}}`)."""
    value = body.get("input")
    if isinstance(value, str):
        return None
    if not isinstance(value, list) or not value:
        return ("invalid_body", "A /v1/moderations body needs 'input': a string, a list of "
                "strings or a list of text and image_url items.", "input")
    if all(isinstance(item, str) for item in value):
        return None
    for index, item in enumerate(value):
        problem = _multimodal_item(item)
        if problem is not None:
            return "invalid_body", f"input[{index}] {problem}", f"input.{index}"
    return None


def _multimodal_item(item: Any) -> str | None:
    """Why `item` is not a moderation's multimodal item (a list is all strings or all
    items, never both)."""
    kind = item.get("type") if isinstance(item, dict) else None
    if not isinstance(kind, str) or kind not in MULTIMODAL:
        return "must be a {\"type\": \"text\"} or {\"type\": \"image_url\"} item."
    if kind == "text" and not isinstance(item.get("text"), str):
        return "is a text item without a 'text' string."
    image = item.get("image_url")
    if kind == "image_url" and not (isinstance(image, dict)
                                    and isinstance(image.get("url"), str)):
        return "is an image_url item without 'image_url.url'."
    return None
