"""Rate limits as pure rules: buckets, OpenAI's headers, a model's pause, the token
estimate. Time is a number the tests step by hand."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.domain.ratelimit import (
    BURST_S,
    ModelPace,
    RateHeaders,
    TokenBucket,
    TokenEstimate,
    format_duration,
    max_tokens_of,
    parse_duration,
    read_rate_headers,
)

T0 = 1_700_000_000.0


def observe(pace: ModelPace, status: int, now: float, **headers: Any) -> None:
    pace.observe(status, RateHeaders(**headers), now=now, backoff_s=0.5, backoff_cap_s=30,
                 pause_cap_s=60)


# durations and headers


@pytest.mark.parametrize(("text", "seconds"), [
    ("6m0s", 360.0), ("1s", 1.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("0.5", 0.5),
    ("59.999s", 59.999), ("2m", 120.0), (" 7s ", 7.0),
])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", [None, "", "soon", "1x", "s", "-1s", "1s junk", "nan", "-3"])
def test_parse_duration_refuses_the_rest(text: str | None) -> None:
    assert parse_duration(text) is None


@pytest.mark.parametrize("seconds", [0.02, 0.999, 1.0, 1.5, 59.0, 360.0, 3723.0])
def test_format_duration_reads_back(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds, abs=0.001)


def test_format_duration_writes_like_openai() -> None:
    assert [format_duration(s) for s in (0.02, 1, 360)] == ["20ms", "1s", "6m0s"]


def test_read_rate_headers() -> None:
    headers = {"x-ratelimit-limit-requests": "3000", "x-ratelimit-limit-tokens": "150000",
               "x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "149",
               "x-ratelimit-reset-requests": "20ms", "x-ratelimit-reset-tokens": "6m0s",
               "retry-after": "2"}
    rate = read_rate_headers(headers.get, now=T0)
    assert rate == RateHeaders(3000, 150000, 0, 149, 0.02, 360.0, 2.0)
    assert rate.exhausted_reset() == 0.02


def test_retry_after_ms_wins_and_garbage_is_ignored() -> None:
    headers = {"retry-after-ms": "250", "retry-after": "9", "x-ratelimit-limit-requests": "x"}
    rate = read_rate_headers(headers.get, now=T0)
    assert rate.retry_after_s == 0.25 and rate.limit_requests is None
    assert read_rate_headers(dict[str, str]().get, now=T0) == RateHeaders()


def test_max_tokens_of() -> None:
    assert max_tokens_of({"max_tokens": 50}) == 50
    assert max_tokens_of({"max_completion_tokens": 7, "max_tokens": 50}) == 7
    assert max_tokens_of({"max_tokens": True}) is None and max_tokens_of({}) is None


# buckets


def test_bucket_refills_continuously_up_to_its_capacity() -> None:
    bucket = TokenBucket.per_minute(600, burst_s=1, now=T0)  # 10 a second, 10 of burst
    assert bucket.capacity == 10
    bucket.take(10, T0)
    assert bucket.wait(1, T0) == pytest.approx(0.1)
    assert bucket.refill(T0 + 0.35) == pytest.approx(3.5)
    assert bucket.refill(T0 + 60) == 10


def test_reservations_queue_one_behind_another() -> None:
    bucket = TokenBucket.per_minute(60, burst_s=1, now=T0)  # 1 a second, burst 1
    waits = [bucket.reserve(1, T0) for _ in range(4)]
    assert waits == pytest.approx([0, 1, 2, 3])
    bucket.give(1, T0)  # one reservation not used
    assert bucket.reserve(1, T0) == pytest.approx(3)


def test_pacing_never_exceeds_the_rate_over_any_window() -> None:
    """Calls released at the moments the pace says: never more than the burst plus
    the rate in any window, so an upstream with a second of burst never refuses."""
    pace = ModelPace(rpm=3000)
    now, sent = T0, []
    for _ in range(500):  # 500 callers arriving at once
        sent.append(now + pace.reserve(1, now))
    for start in sent:
        in_second = sum(1 for t in sent if start <= t < start + 1)
        assert in_second <= 3000 / 60 * (1 + BURST_S) + 1
    assert sent[-1] - sent[0] == pytest.approx(499 / 50 - 3000 / 60 * BURST_S / 50, abs=0.03)


def test_tokens_pace_too_and_usage_corrects_the_bucket() -> None:
    pace = ModelPace(tpm=6000)  # 100 a second, 50 of burst
    assert pace.reserve(50, T0) == 0
    assert pace.reserve(100, T0) == pytest.approx(1.0)
    pace.settle(100, 20, T0)  # the second call used 20, not 100
    assert pace.reserve(0, T0) == pytest.approx(0.2)


# a model's pause


def test_a_429_pauses_for_its_retry_after() -> None:
    pace = ModelPace()
    observe(pace, 429, T0, retry_after_s=5)
    assert pace.paused_for(T0 + 1) == pytest.approx(4)
    assert pace.reserve(1, T0 + 1) == pytest.approx(4)
    assert pace.snapshot(T0 + 1)["paused"] and pace.rate_limited == 1
    assert not pace.snapshot(T0 + 6)["paused"]


def test_a_later_shorter_pause_does_not_shorten_it_and_the_cap_holds() -> None:
    pace = ModelPace()
    observe(pace, 429, T0, retry_after_s=10)
    observe(pace, 429, T0, retry_after_s=1)
    assert pace.paused_until == T0 + 10
    observe(pace, 429, T0, retry_after_s=3600)
    assert pace.paused_until == T0 + 60


def test_without_retry_after_the_exhausted_reset_then_a_doubling_backoff() -> None:
    pace = ModelPace()
    observe(pace, 429, T0, remaining_requests=5, reset_requests_s=9, remaining_tokens=0,
            reset_tokens_s=2)
    assert pace.paused_until == T0 + 2
    fresh = ModelPace()
    for _ in range(3):
        observe(fresh, 429, T0)
    assert fresh.paused_until == T0 + 2.0  # 0.5, 1, 2
    observe(fresh, 200, T0)
    assert fresh.streak == 0


def test_a_bare_429_pauses_nothing_when_the_model_sheds_overload() -> None:
    shedding = ModelPace(sheds_overload=True)
    observe(shedding, 429, T0, retry_after_s=1)  # a server at capacity: no rate named
    assert shedding.paused_for(T0) == 0 and shedding.rate_limited == 1
    assert shedding.reserve(1, T0) == 0
    observe(shedding, 429, T0, retry_after_s=1, remaining_requests=0)  # a rate: pause
    assert shedding.paused_for(T0) == pytest.approx(1)
    fixed = ModelPace(sheds_overload=False)  # no adaptive concurrency: the pause is all
    observe(fixed, 429, T0, retry_after_s=1)
    assert fixed.paused_for(T0) == pytest.approx(1)


def test_announced_limits_are_learned_and_the_lower_one_paces() -> None:
    pace = ModelPace(rpm=6000)
    observe(pace, 200, T0, limit_requests=3000, limit_tokens=90000, remaining_requests=0,
            reset_requests_s=1)
    assert (pace.effective_rpm, pace.effective_tpm) == (3000, 90000)
    assert pace.paused_for(T0) == 0  # a known rate paces; remaining 0 alone pauses nothing
    assert pace.requests is not None and pace.requests.rate == 50


def test_learning_a_limit_counts_the_calls_sent_blind() -> None:
    """32 calls went out before any limit was known; the first answer says 19 are
    left of 1,200 a minute (a half-second bucket of 10). 31 more are out: nothing is
    left to send until the bucket refills, so no second burst meets a 429."""
    pace = ModelPace()
    pace.observe(200, RateHeaders(limit_requests=1200, remaining_requests=19), now=T0,
                 backoff_s=0.5, backoff_cap_s=30, pause_cap_s=60, in_flight=32)
    assert pace.requests is not None and pace.requests.level == 0
    alone = ModelPace()
    alone.observe(200, RateHeaders(limit_requests=1200, remaining_requests=19), now=T0,
                  backoff_s=0.5, backoff_cap_s=30, pause_cap_s=60, in_flight=1)
    assert alone.requests is not None and alone.requests.level == 10  # the bucket is full


def test_remaining_zero_pauses_a_model_with_no_known_rate() -> None:
    pace = ModelPace()
    observe(pace, 200, T0, remaining_requests=0, reset_requests_s=0.5)
    assert pace.paused_for(T0) == 0.5


# the token estimate


def test_the_estimate_learns_the_upstream_count_and_the_answer_size() -> None:
    estimate = TokenEstimate()
    assert estimate.estimate(400, 50) == 150
    for _ in range(40):  # the upstream counts a quarter of bytes ÷ 4, answers 30 tokens
        estimate.learn(400, None, prompt=25, completion=30)
    assert estimate.estimate(400, None) == pytest.approx(55, abs=1)
    assert estimate.estimate(400, 10) == pytest.approx(35, abs=1)


# the config keys


def test_models_take_rpm_and_tpm() -> None:
    from daemon.config import ConfigError, parse

    base = {"alias": "m", "base_url": "http://up/v1"}
    [model] = parse({"models": [base | {"rpm": 3000, "tpm": 150_000}]}).models
    assert (model.rpm, model.tpm) == (3000, 150_000)
    [unset] = parse({"models": [base]}).models
    assert (unset.rpm, unset.tpm) == (None, None)
    for bad in ({"rpm": 0}, {"tpm": 1.5}, {"rpm": True}):
        with pytest.raises(ConfigError, match=r"models\[0\]\.[rt]pm"):
            parse({"models": [base | bad]})
