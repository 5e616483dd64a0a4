"""The simulator's `POST /v1/moderations`: keyword cues flag categories, scores are
deterministic, one result per input (multimodal items together), each answer read by
the `openai` SDK's own type; the chat route's faults and limits."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types import ModerationCreateResponse

from daemon.simulator.content import BadRequest
from daemon.simulator.moderations import CATEGORIES, moderate, parse_moderation


def flagged(text: str) -> set[str]:
    return {name for name, on in moderate(text)["categories"].items() if on}


# --- deciding (pure) ----------------------------------------------------------------


@pytest.mark.parametrize(("text", "categories"), [
    ("What a lovely day for a picnic.", set()),
    ("I will kill them.", {"violence"}),
    ("I hate those people.", {"hate"}),
    ("I hate them and I will kill them all.", {"hate", "hate/threatening", "violence"}),
    ("You stupid idiot, I will murder you.",
     {"harassment", "harassment/threatening", "violence"}),
    ("I want to kill myself.", {"self-harm", "self-harm/intent", "violence"}),
    ("I made it myself.", set()),
    ("How to shoplift without a gun", {"illicit", "illicit/violent"}),
    ("The corpse lay in blood.", {"violence/graphic"}),
    ("KILL [sim:fail=503]", {"violence"}),
])
def test_keyword_cues_flag_categories(text: str, categories: set[str]) -> None:
    assert flagged(text) == categories
    assert moderate(text)["flagged"] is bool(categories)


def test_scores_are_deterministic_above_half_when_flagged_and_tiny_otherwise() -> None:
    result = moderate("kill kill kill, I hate it")
    assert result == moderate("kill kill kill, I hate it")
    scores = result["category_scores"]
    assert set(scores) == set(CATEGORIES)
    assert 0.5 <= scores["hate"] < scores["violence"] < 0.99  # more cues, more
    assert all(0 <= scores[name] < 0.001 for name in CATEGORIES if name not in {
        "hate", "violence", "hate/threatening"})
    assert moderate("kill")["category_scores"] != moderate("kill!")["category_scores"]


def test_images_count_in_the_input_types_of_the_categories_that_moderate_them() -> None:
    both = moderate("hello", ("text", "image"))["category_applied_input_types"]
    assert both["violence"] == both["sexual"] == ["text", "image"]
    assert both["hate"] == ["text"]
    alone = moderate("", ("image",))["category_applied_input_types"]
    assert alone["self-harm"] == ["image"] and alone["harassment"] == []


def test_inputs_are_read_one_result_each_and_multimodal_items_together() -> None:
    call = parse_moderation({"input": "just one"})
    assert (call.model, call.inputs, call.echo["kinds"]) == (
        "omni-moderation-latest", ("just one",), (("text",),))
    call = parse_moderation({"model": "sim-moderation", "input": ["a", "b c"]})
    assert (call.inputs, call.prompt) == (("a", "b c"), "a b c")
    call = parse_moderation({"input": [{"type": "text", "text": "look"},
                                       {"type": "image_url", "image_url": {"url": "data:,"}},
                                       {"type": "text", "text": "here"}]})
    assert (call.inputs, call.echo["kinds"]) == (("look here",), (("text", "image"),))


@pytest.mark.parametrize(("body", "param"), [
    ({}, "input"),
    ({"input": []}, "input"),
    ({"input": 3}, "input"),
    ({"input": ["a", {"type": "text", "text": "b"}]}, "input"),
    ({"input": [{"type": "text"}]}, "input[0]"),
    ({"input": [{"type": "image_url", "image_url": "x"}]}, "input[0]"),
    ({"input": "a", "model": ""}, "model"),
    ({"input": "a", "openrelay": {}}, "openrelay"),
])
def test_a_bad_request_is_refused_naming_its_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_moderation(body)
    assert refused.value.param == param


# --- the route ----------------------------------------------------------------------


async def test_the_answer_is_a_moderation_the_sdk_reads(make_sim: Any) -> None:
    client = await make_sim()
    resp = await client.post("/v1/moderations", json={
        "model": "sim-moderation", "input": ["I will kill you", "Nice weather"]})
    assert resp.status == 200 and resp.headers["X-Relay-Simulated"] == "true"
    body = await resp.json()
    moderation = ModerationCreateResponse.model_validate(body)
    assert moderation.id.startswith("modr-") and moderation.model == "sim-moderation"
    assert [r.flagged for r in moderation.results] == [True, False]
    assert moderation.results[0].categories.violence is True
    assert body["results"][0] == moderate("I will kill you")
    assert "usage" not in body


async def test_fault_markers_and_a_bad_directive(make_sim: Any) -> None:
    client = await make_sim()
    failed = await client.post("/v1/moderations", json={"input": ["ok", "x [sim:fail=503]"]})
    assert failed.status == 503
    assert (await failed.json())["error"]["type"] == "server_error"
    bad = await client.post("/v1/moderations", json={"input": "x [sim:nope]"})
    assert (bad.status, (await bad.json())["error"]["param"]) == (400, "input")


async def test_rpm_and_tpm_limit_moderations_per_model(make_sim: Any) -> None:
    client = await make_sim(rpm=60, tpm=600)  # one request of burst, 10 tokens
    served = await client.post("/v1/moderations", json={"input": "one two three"})
    assert served.status == 200
    assert served.headers["x-ratelimit-remaining-tokens"] == "7"  # charged its words
    refused = await client.post("/v1/moderations", json={"input": "again"})
    assert refused.status == 429 and "x-ratelimit-limit-requests" in refused.headers
    other = await client.post("/v1/moderations", json={"model": "m2", "input": "x"})
    assert other.status == 200
