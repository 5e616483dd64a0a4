"""The simulator's --rpm, --tpm and --capacity: buckets on a stepped clock, then the
429s and headers a client sees."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from daemon.domain.ratelimit import parse_duration
from daemon.simulator import SimOptions, build_app
from daemon.simulator.apis import openai_rate_headers
from daemon.simulator.cli import build_parser, options_from
from daemon.simulator.limits import SimLimits

T0 = 1000.0


def limits(**overrides: Any) -> SimLimits:
    return SimLimits(**({"rpm": None, "tpm": None, "capacity": None,
                         "capacity_retry_s": 1.0} | overrides))


def test_rpm_allows_one_second_of_burst_then_the_rate() -> None:
    sim = limits(rpm=600)  # 10 a second
    assert all(sim.admit("m", 1, T0).ok for _ in range(10))
    refused = sim.admit("m", 1, T0)
    assert (refused.ok, refused.reason) == (False, "requests")
    assert refused.retry_after_s == pytest.approx(0.1)
    assert sim.admit("m", 1, T0 + 0.1).ok and not sim.admit("m", 1, T0 + 0.1).ok
    served = sum(sim.admit("m", 1, T0 + 0.1 + i / 100).ok for i in range(1, 1001))
    assert served == pytest.approx(100, abs=1)  # ten seconds at 10 a second


def test_each_model_has_its_own_buckets() -> None:
    sim = limits(rpm=60)
    assert sim.admit("a", 1, T0).ok and sim.admit("b", 1, T0).ok
    assert not sim.admit("a", 1, T0).ok


def test_tpm_charges_the_estimate_and_usage_corrects_it() -> None:
    sim = limits(tpm=6000)  # 100 a second, 100 of burst
    assert sim.admit("m", 80, T0).ok
    refused = sim.admit("m", 80, T0)
    assert refused.reason == "tokens" and refused.retry_after_s == pytest.approx(0.6)
    sim.settle("m", 80, 10, T0)  # it used 10 of the 80 charged
    assert sim.admit("m", 80, T0).ok


def test_a_request_larger_than_the_burst_passes_alone_on_a_full_bucket() -> None:
    sim = limits(tpm=600)  # 10 a second, 10 of burst
    assert sim.admit("m", 50, T0).ok
    assert not sim.admit("m", 50, T0 + 1).ok
    assert sim.admit("m", 50, T0 + 6).ok


def test_capacity_counts_requests_in_flight() -> None:
    sim = limits(capacity=2, capacity_retry_s=0.5)
    sim.in_flight = 2
    refused = sim.admit("m", 1, T0)
    assert (refused.ok, refused.reason, refused.retry_after_s) == (False, "capacity", 0.5)
    sim.in_flight = 1
    assert sim.admit("m", 1, T0).ok


def test_headers_speak_openai() -> None:
    sim = limits(rpm=600, tpm=6000)
    sim.admit("m", 30, T0)
    headers = openai_rate_headers(sim.quotas("m", T0), 0.0)
    assert headers["x-ratelimit-limit-requests"] == "600"
    assert headers["x-ratelimit-remaining-requests"] == "9"
    assert headers["x-ratelimit-reset-requests"] == "100ms"
    assert headers["x-ratelimit-remaining-tokens"] == "70"
    assert parse_duration(headers["x-ratelimit-reset-tokens"]) == pytest.approx(0.3)


def test_the_flags() -> None:
    args = build_parser().parse_args(["--port", "0", "--rpm", "3000", "--tpm", "90000",
                                      "--capacity", "16"])
    options = options_from(args)
    assert (options.rpm, options.tpm, options.capacity) == (3000, 90000, 16)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--port", "0", "--rpm", "0"])
    with pytest.raises(ValueError):
        SimOptions(capacity=0)


def chat(prompt: str = "hello there", **extra: Any) -> dict[str, Any]:
    return {"model": "sim-small", "messages": [{"role": "user", "content": prompt}], **extra}


async def test_past_the_rate_a_429_like_openais(aiohttp_client: Any) -> None:
    client: TestClient = await aiohttp_client(build_app(SimOptions(rpm=120)))  # burst 2
    answers = [await client.post("/v1/chat/completions", json=chat()) for _ in range(3)]
    assert [a.status for a in answers] == [200, 200, 429]
    ok, limited = answers[0], answers[2]
    assert ok.headers["x-ratelimit-limit-requests"] == "120"
    assert 0 < float(limited.headers["Retry-After"]) <= 0.5
    assert 0 < int(limited.headers["retry-after-ms"]) <= 500
    assert limited.headers["x-ratelimit-remaining-requests"] == "0"
    body = await limited.json()
    assert body["error"]["code"] == "rate_limit_exceeded"
    stats = await (await client.get("/_sim/stats")).json()
    assert stats["by_status"] == {"200": 2, "429": 1}


async def test_max_tokens_counts_against_tpm(aiohttp_client: Any) -> None:
    client: TestClient = await aiohttp_client(build_app(SimOptions(tpm=600)))  # burst 10
    first = await client.post("/v1/chat/completions", json=chat("a b c", max_tokens=50))
    assert first.status == 200  # a full bucket takes it
    second = await client.post("/v1/chat/completions", json=chat("a b c"))
    assert second.status == 429 and (await second.json())["error"]["message"].endswith(
        "tokens per minute.")


async def test_past_capacity_a_429(aiohttp_client: Any) -> None:
    client: TestClient = await aiohttp_client(build_app(SimOptions(
        capacity=2, latency_ms=200, retry_after_s=0.25)))
    answers = await asyncio.gather(*(client.post("/v1/chat/completions", json=chat())
                                     for _ in range(4)))
    assert sorted(a.status for a in answers) == [200, 200, 429, 429]
    limited = next(a for a in answers if a.status == 429)
    assert limited.headers["Retry-After"] == "0.25"
    assert (await client.post("/v1/chat/completions", json=chat())).status == 200
