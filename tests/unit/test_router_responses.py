"""`/v1/responses` and `/v1/moderations` rows through the router, with a scripted
upstream: passed through to a model that serves them (`[[models]] endpoints`), a
Responses row translated to chat (or on to Anthropic) for one that does not, refused
where neither works, and the chain going on past a refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import Response

from daemon.config import DEFAULT_ENDPOINTS
from daemon.domain.outcome import RowOutcome, Usage
from daemon.domain.ratelimit import max_tokens_of
from daemon.upstream.protocols import (
    AS_IS,
    MODERATIONS,
    RESPONSES,
    RESPONSES_ON_CHAT,
    translation_for,
)
from daemon.upstream.transport import Reply
from tests.unit.test_router import make_model, make_router, ok, status
from tests.unit.test_router_protocols import CHAT, MESSAGES, claude, message

BODY = {"model": "main", "input": "hi", "instructions": "Be brief.", "max_output_tokens": 50,
        "openrelay": {"note": "Relay's own"}}
MODERATION = {"model": "mod", "input": ["first", "second"]}
SERVES_RESPONSES = (*DEFAULT_ENDPOINTS, RESPONSES)


def upstream_response(text: str = "hello", **usage: Any) -> Reply:
    body = {"id": "resp_up", "object": "response", "created_at": 1, "status": "completed",
            "model": "main-up", "output": [], "tools": [], "tool_choice": "auto",
            "parallel_tool_calls": True, "output_text": text,
            "usage": {"input_tokens": 9, "output_tokens": 4, "total_tokens": 13,
                      "input_tokens_details": {"cached_tokens": 2},
                      "output_tokens_details": {"reasoning_tokens": 1}} | usage}
    return Reply(200, {}, json.dumps(body).encode())


def moderation() -> Reply:
    body = {"id": "modr-1", "model": "omni-moderation-latest", "results": [
        {"flagged": False, "categories": {}, "category_scores": {}}]}
    return Reply(200, {}, json.dumps(body).encode())


def sdk_response(outcome: RowOutcome) -> Response:
    assert outcome.ok and outcome.response is not None
    return Response.model_validate(outcome.response)


@pytest.mark.parametrize(("endpoint", "serves", "translation"), [
    (RESPONSES, SERVES_RESPONSES, AS_IS.request),
    (RESPONSES, DEFAULT_ENDPOINTS, RESPONSES_ON_CHAT.request),
    (MODERATIONS, (MODERATIONS,), AS_IS.request),
    (CHAT, (CHAT,), AS_IS.request),
])
def test_the_table_follows_what_the_model_serves(endpoint: str, serves: tuple[str, ...],
                                                 translation: object) -> None:
    assert translation_for(endpoint, "openai", serves=serves).request == translation


async def test_a_responses_row_passes_through_to_a_model_that_serves_it() -> None:
    reply = upstream_response()
    router, upstream, _ = make_router({"main": [reply]},
                                      [make_model(endpoints=SERVES_RESPONSES)])
    outcome = await router.call("main", RESPONSES, BODY)
    [(_, path, sent)] = upstream.sent
    assert path == RESPONSES
    assert sent == {k: v for k, v in BODY.items() if k != "openrelay"} | {"model": "main-up"}
    assert outcome.ok and outcome.response == json.loads(reply.body)
    assert outcome.response_text == reply.body.decode()
    assert outcome.usage == Usage(9, 4, cached_tokens=2, reasoning_tokens=1)


async def test_a_responses_row_is_translated_for_a_chat_model() -> None:
    chat = ok("bonjour", prompt_tokens=8, completion_tokens=2,
              prompt_tokens_details={"cached_tokens": 3})
    router, upstream, _ = make_router({"main": [chat]})
    outcome = await router.call("main", RESPONSES, BODY)
    [(_, path, sent)] = upstream.sent
    assert path == CHAT
    assert sent == {"model": "main-up", "max_completion_tokens": 50, "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]}
    response = sdk_response(outcome)
    assert response.output_text == "bonjour" and response.instructions == "Be brief."
    assert response.usage is not None and response.usage.input_tokens == 8
    assert response.usage.input_tokens_details.cached_tokens == 3
    assert outcome.usage == Usage(8, 2, cached_tokens=3)
    assert outcome.response_text is None


async def test_a_responses_row_on_an_anthropic_model_goes_through_chat() -> None:
    router, upstream, _ = make_router({"claude": [message("salut", cache_read_input_tokens=5)]},
                                      [claude()])
    outcome = await router.call("claude", RESPONSES, BODY)
    [(_, path, sent)] = upstream.sent
    assert path == MESSAGES
    assert sent == {"model": "claude-up", "max_tokens": 50, "system": "Be brief.",
                    "messages": [{"role": "user", "content": "hi"}]}
    response = sdk_response(outcome)
    assert response.output_text == "salut" and response.status == "completed"
    assert outcome.usage == Usage(15, 3, cached_tokens=5)


async def test_what_anthropic_cannot_take_is_refused_after_the_chat_step() -> None:
    router, upstream, _ = make_router({"claude": []}, [claude()])
    effort = await router.call("claude", RESPONSES, BODY | {"reasoning": {"effort": "low"}})
    assert upstream.sent == []
    assert (effort.error or "").endswith("reasoning.effort (as chat's reasoning_effort) has "
                                         "no counterpart in Anthropic's Messages API")


async def test_a_translated_row_with_a_refused_parameter_is_never_sent() -> None:
    router, upstream, _ = make_router({"main": []})
    outcome = await router.call("main", RESPONSES, BODY | {"previous_response_id": "resp_1"})
    assert upstream.sent == [] and outcome.error_code == "unsupported_parameter"
    assert outcome.error == (
        "unsupported_parameter: main cannot take this row (openai protocol): "
        "previous_response_id has no counterpart in OpenAI's chat completions: a batch "
        "keeps no server-side state")


async def test_a_passed_through_responses_usage_is_untrusted() -> None:
    router, _, _ = make_router({"main": [upstream_response(output_tokens=-4)]},
                               [make_model(endpoints=SERVES_RESPONSES)])
    outcome = await router.call("main", RESPONSES, BODY)
    assert (outcome.ok, outcome.error_code, outcome.usage) == (False, "invalid_response",
                                                               Usage())
    assert "usage.output_tokens = -4" in (outcome.error or "")


async def test_a_moderation_row_passes_through_unbilled() -> None:
    reply = moderation()
    router, upstream, _ = make_router({"mod": [reply]},
                                      [make_model("mod", endpoints=(MODERATIONS,))])
    outcome = await router.call("mod", MODERATIONS, MODERATION)
    [(_, path, sent)] = upstream.sent
    assert (path, sent) == (MODERATIONS, MODERATION | {"model": "mod-up"})
    assert outcome.ok and outcome.response == json.loads(reply.body)
    assert outcome.usage == Usage()


async def test_a_moderation_row_on_a_model_without_it_is_refused() -> None:
    router, upstream, _ = make_router({"main": []})
    outcome = await router.call("main", MODERATIONS, MODERATION)
    assert upstream.sent == [] and outcome.error_code == "endpoint_not_served"
    assert outcome.error == (
        "endpoint_not_served: main cannot take this row (openai protocol): its upstream "
        "serves /v1/chat/completions, /v1/completions, /v1/embeddings (endpoints), not "
        "/v1/moderations")
    assert not outcome.dead_letter


async def test_moderations_are_refused_on_anthropic() -> None:
    router, upstream, _ = make_router({"claude": []}, [claude()])
    outcome = await router.call("claude", MODERATIONS, MODERATION)
    assert upstream.sent == [] and outcome.error_code == "unsupported_endpoint"


async def test_a_refused_moderation_falls_back_to_a_model_that_serves_it() -> None:
    router, upstream, _ = make_router(
        {"main": [], "claude": [], "mod": [moderation()]},
        [make_model("main", fallbacks=("claude", "mod")), claude(),
         make_model("mod", endpoints=(MODERATIONS,))])
    outcome = await router.call("main", MODERATIONS, MODERATION)
    assert [alias for alias, _, _ in upstream.sent] == ["mod"]
    assert outcome.ok and outcome.model == "mod"


@pytest.mark.parametrize(("endpoint", "body", "needs"), [
    (CHAT, {"messages": [{"role": "user", "content": "hi"}]}, "/v1/chat/completions"),
    (MESSAGES, {"max_tokens": 5, "messages": []}, "/v1/messages or /v1/chat/completions"),
])
async def test_a_model_without_chat_refuses_chat_rows(endpoint: str, body: dict[str, Any],
                                                      needs: str) -> None:
    router, upstream, _ = make_router({"r": []}, [make_model("r", endpoints=(RESPONSES,))])
    outcome = await router.call("r", endpoint, body)
    assert upstream.sent == [] and outcome.error_code == "endpoint_not_served"
    assert (outcome.error or "").endswith(f"serves /v1/responses (endpoints), not {needs}")


async def test_a_responses_row_falls_back_from_pass_through_to_translated() -> None:
    router, upstream, delays = make_router(
        {"main": [status(503), status(503)], "chat": [ok("from chat")]},
        [make_model("main", endpoints=SERVES_RESPONSES, fallbacks=("chat",)),
         make_model("chat")], attempts=2)
    outcome = await router.call("main", RESPONSES, BODY)
    assert [(alias, path) for alias, path, _ in upstream.sent] == [
        ("main", RESPONSES), ("main", RESPONSES), ("chat", CHAT)]
    assert sdk_response(outcome).output_text == "from chat"
    assert outcome.model == "chat" and delays == [0.5]


async def test_a_responses_row_no_model_can_take_sums_up_the_chain() -> None:
    router, _, _ = make_router(
        {"emb": [], "mod": []},
        [make_model("emb", endpoints=("/v1/embeddings",), fallbacks=("mod",)),
         make_model("mod", endpoints=(MODERATIONS,))])
    outcome = await router.call("emb", RESPONSES, BODY)
    assert outcome.error_code == "endpoint_not_served"
    assert outcome.error == (
        "endpoint_not_served: emb cannot take this row (openai protocol): its upstream "
        "serves /v1/embeddings (endpoints), not /v1/responses or /v1/chat/completions; "
        "fallback mod: cannot take this row (openai protocol): its upstream serves "
        "/v1/moderations (endpoints), not /v1/responses or /v1/chat/completions")


def test_a_responses_rows_budget_counts_in_the_token_estimate() -> None:
    assert max_tokens_of(BODY) == 50
