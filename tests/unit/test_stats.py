"""The operator's numbers (daemon/domain/stats.py): how an attempt's failure is classed,
when a model is failing, and the `/v1/stats` view; plus the `[metrics]` config."""

from __future__ import annotations

import pytest

from daemon.config import ConfigError, MetricsConfig, parse
from daemon.domain.stats import AttemptCount, Usage, WorkspaceStats, attempt_class, failing, render


@pytest.mark.parametrize(("status", "error", "expected"), [
    (200, None, "ok"),
    (429, "429 slow down", "429"),
    (503, "503 outage", "5xx"),
    (None, "timeout: no answer from http://u/v1 in time", "timeout"),
    (None, "connection: u: connection reset by peer", "connection"),
    (400, "400 bad request", "other"),
    (200, "invalid_response: m answered 200 with a body that is not a JSON object", "other"),
    (None, "response_too_large: 9 MB", "other"),
])
def test_each_attempt_falls_in_one_class(status: int | None, error: str, expected: str) -> None:
    assert attempt_class(status, error) == expected


def counts(model: str, **by_outcome: int) -> list[AttemptCount]:
    return [AttemptCount(model, outcome.removeprefix("s"), n) for outcome, n in by_outcome.items()]


def test_a_model_is_failing_when_half_its_recent_attempts_failed_upstream() -> None:
    down = failing(counts("a", connection=4) + counts("b", ok=5, s5xx=5)
                   + counts("c", ok=5, s429=4) + counts("d", other=9) + counts("e", timeout=2))
    assert [(f.model, f.message) for f in down] == [
        ("a", "a: 100% connection errors"), ("b", "b: 50% 5xx errors")]


def test_the_view_fills_every_bucket_and_prices_in_dollars() -> None:
    view = render(WorkspaceStats(now=600.0, since=0.0, bucket_s=60, throughput=[(3, 7, 1)],
                                 attempts=[], recent=[], latencies=[], jobs=[],
                                 total=Usage(10, 5, 2_500_000_000)), "ws")
    assert len(view["throughput"]) == 10
    assert view["throughput"][3] == {"at": "1970-01-01T00:03:00Z", "completed": 7, "failed": 1}
    assert view["usage"]["total"]["cost_usd"] == 2.5


def test_the_metrics_section() -> None:
    assert parse({}).metrics == MetricsConfig(token=None, per_workspace=False)
    assert parse({"metrics": {"token": "t0k", "per_workspace": True}}).metrics == MetricsConfig(
        "t0k", True)
    for bad in ({"token": 5}, {"per_workspace": "yes"}, {"scrape": 1}, {"token": " t "}):
        with pytest.raises(ConfigError, match="metrics"):
            parse({"metrics": bad})
