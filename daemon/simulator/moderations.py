"""OpenAI's moderations, simulated: what `POST /v1/moderations` reads and answers.
Pure: no I/O.

`input` is a string, a list of strings (one result each), or a list of multimodal
items, `{"type": "text", "text"}` and `{"type": "image_url", "image_url": {"url"}}`,
which OpenAI moderates together (one result). `model` defaults to
`omni-moderation-latest`.

Each result is decided by keyword cues in the text, with `[sim:...]` directives taken
out: a category is flagged when its cues occur (a cue is a word or two: `kill` and
`murder` flag violence, `hate` and `racist` hate, `kill myself` self-harm, ...; a
subcategory such as `hate/threatening` needs its parent's cues and its own), and the
result is flagged when any category is. Scores are deterministic: a flagged category
scores 0.5 to 0.99, more with more cues, any other below 0.001, the digits from a hash
of the text. Images are not looked at, but they count in
`category_applied_input_types`: the categories OpenAI moderates images for list
`"image"` beside `"text"`.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from typing import Any

from daemon.simulator.content import BadRequest, Call, refuse_unserved
from daemon.simulator.faults import DIRECTIVE_PATTERN

DEFAULT_MODEL = "omni-moderation-latest"


def _cues(text: str) -> frozenset[str]:
    """Words, and pairs of words joined by `_`."""
    return frozenset(text.split())


_VIOLENCE = _cues("kill kills killed killing murder murdered murdering stab stabbed "
                  "stabbing shoot shooting attack attacked strangle slaughter massacre "
                  "torture tortured")
_WEAPONS = _cues("weapon weapons gun guns bomb bombs explosive explosives") | _VIOLENCE
# A category: its own cues, and the category whose cues it needs as well (None: none).
CATEGORIES: dict[str, tuple[frozenset[str], str | None]] = {
    "harassment": (_cues("idiot idiots stupid loser losers worthless pathetic moron "
                         "morons ugly"), None),
    "harassment/threatening": (_VIOLENCE, "harassment"),
    "hate": (_cues("hate hates hated hateful racist racists bigot bigots vermin "
                   "subhuman"), None),
    "hate/threatening": (_VIOLENCE, "hate"),
    "illicit": (_cues("shoplift shoplifting steal stealing launder laundering "
                      "counterfeit smuggle smuggling meth"), None),
    "illicit/violent": (_WEAPONS, "illicit"),
    "self-harm": (_cues("suicide suicidal self-harm overdose kill_myself hurt_myself "
                        "cut_myself harm_myself"), None),
    "self-harm/instructions": (_cues("how instructions steps method"), "self-harm"),
    "self-harm/intent": (_cues("i i'm want going will"), "self-harm"),
    "sexual": (_cues("sex sexual porn porno nude naked erotic explicit"), None),
    "sexual/minors": (_cues("child children minor minors underage kid kids"), "sexual"),
    "violence": (_VIOLENCE, None),
    "violence/graphic": (_cues("blood bloody gore gory dismember dismembered mutilate "
                               "mutilated corpse"), None),
}
# What OpenAI's omni-moderation moderates images for.
IMAGE_CATEGORIES = frozenset({"self-harm", "self-harm/instructions", "self-harm/intent",
                              "sexual", "violence", "violence/graphic"})


def parse_moderation(body: dict[str, Any]) -> Call:
    """A moderation request as a `Call`: one input text per result; `echo["kinds"]`
    says what each input held ("text", "image")."""
    model = body.get("model", DEFAULT_MODEL)
    if not isinstance(model, str) or not model:
        raise BadRequest("Invalid 'model': expected a non-empty string.", param="model")
    refuse_unserved(body, stream="stream: moderations do not stream.",
                    unknown="Unrecognized request argument supplied: {key}")
    inputs = _inputs(body.get("input"))
    texts = tuple(text for text, _ in inputs)
    return Call("moderations", model, " ".join(texts), texts,
                echo={"kinds": tuple(kinds for _, kinds in inputs)})


def moderation_body(call: Call, n: int, now: int) -> dict[str, Any]:
    """The `ModerationCreateResponse`: one result per input."""
    return {"id": f"modr-sim{n:012d}", "model": call.model,
            "results": [moderate(text, kinds)
                        for text, kinds in zip(call.inputs, call.echo["kinds"], strict=True)]}


def moderate(text: str, kinds: tuple[str, ...] = ("text",)) -> dict[str, Any]:
    """One input's result: categories flagged by cues, scores, input types applied."""
    words = re.findall(r"[a-z][a-z'-]*", DIRECTIVE_PATTERN.sub(" ", text).lower())
    tokens = words + [f"{a}_{b}" for a, b in itertools.pairwise(words)]
    hits = {name: sum(token in cues for token in tokens)
            for name, (cues, _) in CATEGORIES.items()}
    hits = {name: min(hits[name], hits[parent] if parent else hits[name])
            for name, (_, parent) in CATEGORIES.items()}
    return {"flagged": any(hits.values()),
            "categories": {name: count > 0 for name, count in hits.items()},
            "category_scores": {name: _score(name, text, count) for name, count in hits.items()},
            "category_applied_input_types": {name: _applied(name, kinds) for name in hits}}


def _score(category: str, text: str, hits: int) -> float:
    """0.5–0.99 when flagged (more cues, more), else below 0.001; the digits from a hash."""
    digest = hashlib.sha256(f"{category}\x00{text}".encode()).digest()
    fraction = int.from_bytes(digest[:4], "big") / 2**32
    if not hits:
        return round(fraction / 1000, 8)
    return round(0.5 + 0.45 * (1 - 0.5 ** hits) + 0.04 * fraction, 6)


def _applied(category: str, kinds: tuple[str, ...]) -> list[str]:
    return [k for k in kinds if k == "text" or category in IMAGE_CATEGORIES]


def _inputs(value: Any) -> list[tuple[str, tuple[str, ...]]]:
    """(text, kinds) per result."""
    if isinstance(value, str):
        return [(value, ("text",))]
    if value is None:
        raise BadRequest("Missing required parameter: 'input'.", param="input")
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return [(v, ("text",)) for v in value]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        parts = [_part(f"input[{i}]", v) for i, v in enumerate(value)]
        kinds = tuple(k for k in ("text", "image") if any(kind == k for kind, _ in parts))
        return [(" ".join(text for kind, text in parts if kind == "text"), kinds)]
    raise BadRequest("Invalid 'input': expected a string, an array of strings or an array "
                     "of multimodal inputs.", param="input")


def _part(where: str, part: dict[str, Any]) -> tuple[str, str]:
    """("text", its text) or ("image", "")."""
    if part.get("type") == "text" and isinstance(part.get("text"), str):
        return "text", part["text"]
    image = part.get("image_url")
    if (part.get("type") == "image_url" and isinstance(image, dict)
            and isinstance(image.get("url"), str)):
        return "image", ""
    raise BadRequest(f"Invalid '{where}': expected {{\"type\": \"text\", \"text\"}} or "
                     "{\"type\": \"image_url\", \"image_url\": {\"url\"}}.", param=where)
