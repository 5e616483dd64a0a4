"""The router across upstream protocols: each model of the chain takes the row in its own
protocol (path, body, usage, rate headers), and the row keeps its own shape."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from daemon.config import ModelConfig
from daemon.domain.outcome import Usage
from daemon.upstream.router import OVERLOADED, Verdict, classify, load_signal
from daemon.upstream.transport import ANTHROPIC_VERSION, Reply, request_headers
from tests.unit.test_router import START, make_model, make_router, ok, status

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
CHAT_BODY = {"model": "main", "messages": [{"role": "user", "content": "hi"}]}
PARAMS = {"model": "main", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


def claude(alias: str = "claude", **overrides: Any) -> ModelConfig:
    return make_model(alias, base_url="https://api.anthropic.test", api="anthropic",
                      **overrides)


def message(text: str = "hello", **usage: Any) -> Reply:
    body = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-up",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 3} | usage}
    return Reply(200, {"content-type": "application/json"}, json.dumps(body).encode())


def anthropic_error(code: int, kind: str, text: str, **headers: str) -> Reply:
    body = {"type": "error", "error": {"type": kind, "message": text}}
    return Reply(code, headers, json.dumps(body).encode())


async def test_a_chat_row_on_an_anthropic_model() -> None:
    router, upstream, _ = make_router({"claude": [message(cache_read_input_tokens=20)]},
                                      [claude(default_max_tokens=777)])
    outcome = await router.call("claude", CHAT, CHAT_BODY)
    [(alias, path, sent)] = upstream.sent
    assert (alias, path) == ("claude", MESSAGES)
    assert sent == {"model": "claude-up", "max_tokens": 777,
                    "messages": [{"role": "user", "content": "hi"}]}
    assert outcome.ok and outcome.response is not None
    assert outcome.response["object"] == "chat.completion"
    assert outcome.response["choices"][0]["message"] == {"role": "assistant",
                                                         "content": "hello"}
    assert outcome.response["usage"]["prompt_tokens"] == 30
    assert outcome.usage == Usage(30, 3, cached_tokens=20)
    assert outcome.response_text is None  # stored as translated, not as received


async def test_a_messages_row_on_an_openai_model() -> None:
    router, upstream, _ = make_router({"main": [ok("bonjour", prompt_tokens=8,
                                                   completion_tokens=2)]})
    outcome = await router.call("main", MESSAGES, PARAMS | {"system": "Be brief."})
    [(_, path, sent)] = upstream.sent
    assert path == CHAT
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert outcome.ok and outcome.response is not None
    assert outcome.response["type"] == "message"
    assert outcome.response["content"] == [{"type": "text", "text": "bonjour"}]
    assert outcome.response["usage"]["input_tokens"] == 8
    assert outcome.usage == Usage(8, 2)


async def test_a_messages_row_on_an_anthropic_model_passes_through() -> None:
    reply = message()
    router, upstream, _ = make_router({"claude": [reply]}, [claude()])
    params = PARAMS | {"top_k": 5, "thinking": {"type": "enabled", "budget_tokens": 1024},
                       "openrelay": {"note": "Relay's own"}}
    outcome = await router.call("claude", MESSAGES, params)
    [(_, path, sent)] = upstream.sent
    assert path == MESSAGES
    assert sent == {k: v for k, v in params.items() if k != "openrelay"} | {
        "model": "claude-up"}
    assert outcome.ok and outcome.response == json.loads(reply.body)
    assert outcome.response_text == reply.body.decode()
    assert outcome.usage == Usage(10, 3)


async def test_a_row_falls_back_across_protocols() -> None:
    router, upstream, delays = make_router(
        {"main": [status(503), status(503)], "claude": [message("from claude")]},
        [make_model("main", fallbacks=("claude",)), claude()], attempts=2)
    outcome = await router.call("main", CHAT, CHAT_BODY)
    assert [(alias, path) for alias, path, _ in upstream.sent] == [
        ("main", CHAT), ("main", CHAT), ("claude", MESSAGES)]
    assert outcome.ok and outcome.model == "claude"
    assert outcome.response is not None
    assert outcome.response["choices"][0]["message"]["content"] == "from claude"
    assert [a.status_code for a in outcome.attempts] == [503, 503, 200]
    assert delays == [0.5]


async def test_a_refused_parameter_fails_the_row_without_a_call() -> None:
    router, upstream, _ = make_router({"claude": []}, [claude()])
    outcome = await router.call("claude", CHAT, CHAT_BODY | {"n": 3})
    assert upstream.sent == []
    assert (outcome.ok, outcome.error_code, outcome.dead_letter) == (
        False, "unsupported_parameter", False)
    assert outcome.error == ("unsupported_parameter: claude cannot take this row (anthropic "
                             "protocol): n = 3 has no counterpart in Anthropic's Messages API")
    assert outcome.attempts == () and outcome.status_code is None


async def test_a_model_that_refuses_the_row_hands_it_to_its_fallback() -> None:
    router, upstream, _ = make_router(
        {"main": [], "claude": [message()]},
        [make_model("main", fallbacks=("claude",)), claude()])
    outcome = await router.call("main", MESSAGES, PARAMS | {"top_k": 5})
    assert [alias for alias, _, _ in upstream.sent] == ["claude"]
    assert upstream.sent[0][2]["top_k"] == 5
    assert outcome.ok and outcome.model == "claude"


async def test_every_model_refusing_sums_up_the_chain() -> None:
    router, _, _ = make_router(
        {"main": [], "backup": []},
        [make_model("main", fallbacks=("backup",)), make_model("backup")])
    outcome = await router.call("main", MESSAGES, PARAMS | {"top_k": 5})
    assert outcome.error == (
        "unsupported_parameter: main cannot take this row (openai protocol): top_k has no "
        "counterpart in OpenAI's chat completions; fallback backup: cannot take this row "
        "(openai protocol): top_k has no counterpart in OpenAI's chat completions")


async def test_an_embeddings_row_on_an_anthropic_model_is_refused() -> None:
    router, upstream, _ = make_router({"claude": []}, [claude()])
    outcome = await router.call("claude", "/v1/embeddings", {"input": "x"})
    assert upstream.sent == [] and outcome.error_code == "unsupported_endpoint"
    assert outcome.error == ("unsupported_endpoint: claude cannot take this row (anthropic "
                             "protocol): Anthropic's Messages API has no /v1/embeddings; it "
                             "takes /v1/chat/completions, /v1/responses and /v1/messages rows")


async def test_an_answer_that_cannot_take_the_rows_shape_is_invalid() -> None:
    odd = {"id": "msg_1", "type": "message", "content": [
        {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}]}
    reply = Reply(200, {}, json.dumps(odd).encode())
    router, _, _ = make_router({"claude": [reply]}, [claude()])
    outcome = await router.call("claude", CHAT, CHAT_BODY)
    assert (outcome.ok, outcome.error_code) == (False, "invalid_response")
    assert outcome.error == ("invalid_response: claude answered 200 with a content block of "
                             "type 'server_tool_use', which a chat completion cannot hold")
    assert outcome.error_body == odd


@pytest.mark.parametrize("usage", [{"input_tokens": -1}, {"cache_read_input_tokens": 10**16},
                                   {"output_tokens": "3"}])
async def test_an_anthropic_answers_usage_is_untrusted(usage: dict[str, Any]) -> None:
    router, _, _ = make_router({"claude": [message(**usage)]}, [claude()])
    outcome = await router.call("claude", MESSAGES, PARAMS)
    assert (outcome.ok, outcome.error_code, outcome.usage) == (False, "invalid_response",
                                                               Usage())
    [name] = usage
    assert f"usage.{name} = " in (outcome.error or "")


async def test_anthropics_overloaded_529_is_retried_and_its_message_read() -> None:
    overloaded = anthropic_error(OVERLOADED, "overloaded_error", "Overloaded")
    router, _, delays = make_router({"claude": [overloaded, message()]}, [claude()])
    outcome = await router.call("claude", MESSAGES, PARAMS)
    assert outcome.ok and [a.status_code for a in outcome.attempts] == [529, 200]
    assert outcome.attempts[0].error == "529 Overloaded"
    verdict = classify(overloaded, alias="claude")
    assert verdict.kind == "transient" and load_signal(verdict) == "overload"
    assert load_signal(Verdict("transient", status=503)) == "neutral"
    assert delays == [0.5]


def rfc3339(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).isoformat().replace("+00:00", "Z")


async def test_anthropics_rate_limit_headers_pace_and_pause_the_model() -> None:
    limited = anthropic_error(429, "rate_limit_error", "Number of requests exceeded", **{
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": rfc3339(START + 5)})
    router, _, delays = make_router({"claude": [limited, message()]}, [claude()])
    outcome = await router.call("claude", MESSAGES, PARAMS)
    assert outcome.ok and [a.status_code for a in outcome.attempts] == [429, 200]
    assert sum(delays) == pytest.approx(5 - 0.05, abs=0.01)  # until the announced reset
    state = router.model_states()["claude"]
    assert (state["upstream_rpm"], state["rate_limited"]) == (50, 1)


def test_request_headers_follow_the_protocol() -> None:
    assert request_headers(claude(api_key="sk-ant")) == {
        "Content-Type": "application/json", "anthropic-version": ANTHROPIC_VERSION,
        "x-api-key": "sk-ant"}
    assert "x-api-key" not in request_headers(claude())
    assert request_headers(make_model(api_key="sk")) == {
        "Content-Type": "application/json", "Authorization": "Bearer sk"}


async def test_a_tool_turn_answered_by_claude_feeds_the_next_chat_turn() -> None:
    """As the tool loop uses them: the chat answer's assistant message, sent back with the
    tool's result, reaches Anthropic as tool_use and tool_result blocks."""
    asked = {"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-up",
             "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup",
                          "input": {"q": 1}}],
             "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 8}}
    router, upstream, _ = make_router(
        {"claude": [Reply(200, {}, json.dumps(asked).encode()), message("found it")]},
        [claude()])
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    first = await router.call("claude", CHAT, CHAT_BODY | {"tools": tools})
    assert first.response is not None
    [choice] = first.response["choices"]
    assert choice["finish_reason"] == "tool_calls"
    turns = [*CHAT_BODY["messages"], choice["message"],
             {"role": "tool", "tool_call_id": "toolu_1", "content": "42"}]
    second = await router.call("claude", CHAT, CHAT_BODY | {"tools": tools, "messages": turns})
    assert second.ok
    assert upstream.sent[1][2]["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                                           "name": "lookup", "input": {"q": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "42"}]}]
